/**
 * The app's ONNX actions, apart from React: export a stored checkpoint (model + tokenizer
 * sidecar), check parity in this browser (ORT webgpu and wasm against our WebGPU engine), load
 * a user's model as a policy and sample from it. onnxruntime-web loads on first use.
 */
import type { GpuRuntime } from '../../gpu/runtime';
import { loadModel } from '../../model/model-file';
import { exportOnnx } from '../../onnx/export';
import { importOnnxModel, type ImportedModel } from '../../onnx/import';
import { browserOrt, type BrowserEp } from '../../onnx/browser';
import { onnxParity } from '../../onnx/parity';
import { onnxFileNames } from './files';

export const PARITY_TOLERANCE = 1e-4;

export interface OnnxExport {
  model: { name: string; bytes: Uint8Array };
  /** null when the checkpoint carries no tokenizer */
  tokenizer: { name: string; text: string } | null;
}

/** The checkpoint's policy as ONNX, and its tokenizer as the sidecar the CLI writes. */
export function exportCheckpointOnnx(checkpointName: string, bytes: Uint8Array, kvCache: boolean): OnnxExport {
  const snap = loadModel(bytes);
  const names = onnxFileNames(checkpointName);
  const model = exportOnnx(snap, { kvCache, tokenizerFile: snap.tokenizer ? names.tokenizer : undefined });
  return {
    model: { name: names.model, bytes: model },
    tokenizer: snap.tokenizer ? { name: names.tokenizer, text: JSON.stringify(snap.tokenizer) } : null,
  };
}

export interface BrowserParityRow {
  ep: BrowserEp;
  /** the largest relative difference against our WebGPU engine (logits and values, all graphs) */
  vs_webgpu: number;
  /** the same against the float64 CPU model */
  vs_cpu: number;
}

export interface BrowserParity {
  rows: BrowserParityRow[];
  max_rel_diff: number;
  B: number;
  T: number;
}

/** onnxParity with each execution provider, our WebGPU engine (and the CPU model) as the reference. */
export async function browserParity(bytes: Uint8Array, rt: GpuRuntime, eps: BrowserEp[] = ['webgpu', 'wasm']): Promise<BrowserParity> {
  const snap = loadModel(bytes);
  const rows: BrowserParityRow[] = [];
  let B = 0;
  let T = 0;
  for (const ep of eps) {
    const r = await onnxParity(await browserOrt(ep), snap, { gpu: rt });
    const worst = (engine: 'cpu' | 'webgpu') =>
      Math.max(...r.checks.filter((c) => c.engine === engine).flatMap((c) => [c.logits, c.values]));
    rows.push({ ep, vs_webgpu: worst('webgpu'), vs_cpu: worst('cpu') });
    B = r.B;
    T = r.T;
  }
  return { rows, max_rel_diff: Math.max(...rows.map((r) => Math.max(r.vs_webgpu, r.vs_cpu))), B, T };
}

/** A user's model and tokenizer files as a frozen policy on one execution provider (import.ts checks, their messages), with the files' contents (the Evaluate panel loads them again in its worker). */
export async function importUserModel(
  model: File,
  tokenizer: File,
  ep: BrowserEp,
  contextLength: number | undefined,
): Promise<ImportedModel & { bytes: Uint8Array; tokenizerText: string }> {
  const [bytes, tokText] = await Promise.all([model.arrayBuffer().then((b) => new Uint8Array(b)), tokenizer.text()]);
  const m = await importOnnxModel(await browserOrt(ep), bytes, tokText, { file: model.name, tokenizerFile: tokenizer.name, contextLength });
  return { ...m, bytes, tokenizerText: tokText };
}

export interface Sample {
  text: string;
  tokens: number;
  finish: string;
  ms: number;
}

/** Samples a completion of `prompt` (temperature 0: greedy), up to maxNewTokens and the context. */
export async function sampleFrom(
  m: ImportedModel,
  prompt: string,
  o: { maxNewTokens: number; temperature: number; seed: number },
): Promise<Sample> {
  const ids = m.tokenizer.encode(prompt);
  if (ids.length === 0) throw new Error('the prompt is empty: write a few characters to continue');
  const room = m.policy.config.contextLength - ids.length;
  if (room < 1) throw new Error(`the prompt has ${ids.length} tokens; the model's context is ${m.policy.config.contextLength}`);
  const t0 = performance.now();
  const r = await m.policy.generate([ids], {
    maxNewTokens: Math.min(o.maxNewTokens, room),
    temperature: o.temperature,
    seed: o.seed,
    eosId: m.tokenizer.eosId,
  });
  const out = r.tokens[0]!.filter((t) => t !== m.tokenizer.eosId);
  return { text: m.tokenizer.decode(out), tokens: r.tokens[0]!.length, finish: r.finish[0]!, ms: performance.now() - t0 };
}
