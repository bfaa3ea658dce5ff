/** Pure helpers of the app's ONNX actions: file names, the optional context-length field, downloads. */
import { CHECKPOINT_EXT } from '../../lab/saved-models';

/** `policy.crlckpt` -> { model: 'policy.onnx', tokenizer: 'policy.tokenizer.json' } (the CLI's sidecar naming). */
export function onnxFileNames(checkpointName: string): { model: string; tokenizer: string } {
  const stem = checkpointName.endsWith(CHECKPOINT_EXT) ? checkpointName.slice(0, -CHECKPOINT_EXT.length) : checkpointName;
  const base = stem || 'model';
  return { model: `${base}.onnx`, tokenizer: `${base}.tokenizer.json` };
}

/** The optional context-length field: '' is "from the model's metadata" (undefined); else an integer >= 2, or an error message. */
export function parseContextLength(text: string): { value: number | undefined } | { error: string } {
  const t = text.trim();
  if (t === '') return { value: undefined };
  const n = Number(t);
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(n) || n < 2) return { error: `context length must be an integer >= 2, got '${text}'` };
  return { value: n };
}
