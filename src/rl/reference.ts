/**
 * An ONNX causal LM as the frozen reference of the KL penalty (config.rl.reference), the same
 * code for `coderl train --reference` and the app's run worker:
 * - referenceRef: what the config records about the model (its file name and SHA-256);
 * - importedReference (the app): which of the imported models the config's record names;
 * - onnxReference: the pipeline's `reference` factory, loading the model in onnxruntime-web
 *   (wasm) and refusing it unless its tokenizer is the run's;
 * - runReference (the app): the run directory keeps the model and its tokenizer
 *   (reference/model.onnx, reference/tokenizer.json), so a run resumes, after a reload too,
 *   without the model being imported again, and a changed stored file is refused.
 * Nothing here imports onnxruntime: callers pass how to load it (Node or the browser). A Hugging
 * Face folder as the reference is reference-hf.ts; its record ends in "/" (isHfReference).
 */
import type { ModelConfig } from '../model/config';
import { assertSameTokenizer, importOnnxModel } from '../onnx/import';
import { FrozenOnnxPolicy, type Policy } from '../policy';
import type { Ort } from '../onnx/runtime';
import { Tokenizer } from '../tokenizer';
import type { TextTokenizer } from '../tokenizer/types';
import { assertSameVocabulary } from './reference-hf';
import type { RlConfig } from './config';
import { readJson, readText, type RunDir } from './run-dir';
import { sha256Hex } from './tasks/from-suite';

/** What config.rl.reference records: the model file's name and the hex SHA-256 of its bytes. */
export type ReferenceRef = NonNullable<RlConfig['rl']['reference']>;

/** The model file's bytes and its tokenizer file's text (Tokenizer.toJSON as JSON). */
export interface ReferenceFiles {
  bytes: Uint8Array;
  tokenizerText: string;
}

/** Where a run directory keeps its KL reference (the app; the CLI is given the files on every start). */
export const REFERENCE_MODEL_FILE = 'reference/model.onnx';
export const REFERENCE_TOKENIZER_FILE = 'reference/tokenizer.json';

const short = (sha: string): string => `${sha.slice(0, 12)}…`;

/** The config's record of a model file: its base name (a path's directories dropped) and SHA-256. */
export async function referenceRef(file: string, bytes: Uint8Array): Promise<ReferenceRef> {
  return { name: file.split(/[\\/]/).pop() || file, sha256: await sha256Hex(bytes) };
}

/** "sft.onnx (SHA-256 0123456789ab…)", for messages and the app's labels. */
export function describeReference(r: ReferenceRef): string {
  return `${r.name} (SHA-256 ${short(r.sha256)})`;
}

/** A Hugging Face folder's record names the folder with a "/" at the end (reference-hf.ts); an ONNX model's, its file. */
export const isHfReference = (r: ReferenceRef): boolean => r.name.endsWith('/');

/** "ONNX model sft.onnx (SHA-256 …)" or "Hugging Face model qwen2/ (SHA-256 …)". */
export const referenceLabel = (r: ReferenceRef): string =>
  `${isHfReference(r) ? 'Hugging Face model' : 'ONNX model'} ${describeReference(r)}`;

/**
 * The imported model the config's reference names (the same file name and SHA-256), or null:
 * the app's imported ONNX models (store/evalSlice.ts OnnxModelEntry) each carry their `ref`.
 */
export function importedReference<M extends { ref: ReferenceRef }>(named: ReferenceRef | undefined, models: readonly M[]): M | null {
  if (!named) return null;
  return models.find((m) => m.ref.name === named.name && m.ref.sha256 === named.sha256) ?? null;
}

/**
 * The pipeline's `reference` factory for an ONNX model: loaded when asked (with the run's context
 * length) as a frozen Policy, refused unless its tokenizer is the run's (`what` names it in the
 * message); the pipeline then checks vocabulary and context (stages/rl.ts loadReference).
 */
export function onnxReference(
  loadOrt: () => Promise<Ort>,
  files: ReferenceFiles & { file: string; tokenizerFile: string },
  what: string,
): (tok: TextTokenizer, model: ModelConfig) => Promise<Policy> {
  return async (tok, model) => {
    const { policy, tokenizer } = await importOnnxModel(await loadOrt(), files.bytes, files.tokenizerText, {
      file: files.file,
      tokenizerFile: files.tokenizerFile,
      contextLength: model.contextLength,
    });
    try {
      if (tok instanceof Tokenizer) assertSameTokenizer(tok, tokenizer, what);
      else assertSameVocabulary(tok, tokenizer, { run: "the run's tokenizer", ref: files.tokenizerFile }, what);
    } catch (e) {
      policy.dispose();
      throw e;
    }
    return new FrozenOnnxPolicy(policy, tokenizer);
  };
}

/**
 * The KL reference files of the run `store` holds, whose config names `named` (undefined: the SFT
 * policy). The stored model is used when there is one, and must be the one the config names
 * (SHA-256); otherwise `given` (the page's imported model) is checked the same way and stored
 * (tokenizer first: the model file is what says the reference is kept), unless the directory
 * holds another run, whose config the pipeline refuses next without anything written here.
 */
export async function runReference(
  store: RunDir,
  named: ReferenceRef | undefined,
  given?: ReferenceFiles,
): Promise<ReferenceFiles | undefined> {
  if (!named) {
    if (given)
      throw new Error(
        'a KL reference model was given but the config does not name it (config.rl.reference), so the run directory would not say what it was trained against',
      );
    return undefined;
  }
  const stored = await store.read(REFERENCE_MODEL_FILE);
  if (stored) {
    const sha = await sha256Hex(stored);
    if (sha !== named.sha256) {
      throw new Error(
        `${REFERENCE_MODEL_FILE} in the run directory is not the KL reference the config names, ${describeReference(named)}: ` +
          `the stored file's SHA-256 is ${short(sha)} (it was changed); use a new run name`,
      );
    }
    const tokenizerText = await readText(store, REFERENCE_TOKENIZER_FILE);
    if (tokenizerText === null)
      throw new Error(
        `${REFERENCE_TOKENIZER_FILE} is missing from the run directory: the KL reference ${describeReference(named)} needs its tokenizer; use a new run name`,
      );
    return { bytes: stored, tokenizerText };
  }
  if (!given) {
    throw new Error(
      `the run's KL reference is the ONNX model ${describeReference(named)}, and the run directory does not hold it (${REFERENCE_MODEL_FILE} is missing); ` +
        'import the model in the Checkpoints panel and pick it as the KL reference',
    );
  }
  const sha = await sha256Hex(given.bytes);
  if (sha !== named.sha256)
    throw new Error(
      `the model given as the KL reference (SHA-256 ${short(sha)}) is not the one the config names, ${describeReference(named)}`,
    );
  const existing = await readJson<{ cfg?: RlConfig }>(store, 'config.json');
  const other = existing?.cfg?.rl?.reference;
  if (!existing || (other?.name === named.name && other.sha256 === named.sha256)) {
    await store.write(REFERENCE_TOKENIZER_FILE, given.tokenizerText);
    await store.write(REFERENCE_MODEL_FILE, given.bytes);
  }
  return given;
}
