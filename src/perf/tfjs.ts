/**
 * The comparison side of `coderl bench engine`: the same matmuls and the same GPT training
 * step (same config, same shapes, Adam update) written with TensorFlow.js's WebGPU backend, on
 * the same adapter. In the browser TF.js uses navigator.gpu; in Node it finds Dawn through a
 * `navigator.gpu` shim, and its gradients load through bench/tfjs-node.ts's resolve hook.
 */
import type { ModelConfig } from '../model/config';
import type { ParamTable } from '../model/params';
import { errorText } from '../util/errors';

export type Tf = typeof import('@tensorflow/tfjs-core');
type Tensor = import('@tensorflow/tfjs-core').Tensor;
type Tensor2D = import('@tensorflow/tfjs-core').Tensor2D;

/** The parts of tfjs-backend-webgpu's WebGPUBackend we use to wait for completion. */
interface WebGpuBackendInternals {
  device: GPUDevice;
  commandEncoder: GPUCommandEncoder | null;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

let loaded: Promise<Tf> | null = null;

/**
 * Loads TF.js with its WebGPU backend on `gpu` (the GPU object, or a provider-backed stand-in,
 * that our runtime uses). Loads once per page or process; later calls return the same TF.js.
 */
export function loadTfjs(gpu: GPU): Promise<Tf> {
  loaded ??= (async () => {
    if (typeof navigator === 'undefined') {
      Object.defineProperty(globalThis, 'navigator', { value: { gpu, userAgent: 'node' }, configurable: true });
    } else if (!('gpu' in navigator) || !navigator.gpu) {
      Object.defineProperty(navigator, 'gpu', { value: gpu, configurable: true });
    }
    const tf = await import('@tensorflow/tfjs-core');
    try {
      await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
    } catch (e) {
      throw new Error(`TF.js gradients did not load (in Node, call installTfjsNodeResolver() first): ${errorText(e)}`, {
        cause: e,
      });
    }
    await import('@tensorflow/tfjs-backend-webgpu');
    if (!(await tf.setBackend('webgpu'))) throw new Error('TF.js could not start its webgpu backend');
    await tf.ready();
    return tf;
  })();
  loaded.catch(() => (loaded = null));
  return loaded;
}

function webgpuBackend(tf: Tf): WebGpuBackendInternals {
  const be = tf.backend() as unknown as Partial<WebGpuBackendInternals>;
  if (tf.getBackend() !== 'webgpu' || !be.device || typeof be.submitQueue !== 'function') {
    throw new Error(`TF.js is not on its webgpu backend (backend: ${tf.getBackend()})`);
  }
  return be as WebGpuBackendInternals;
}

/** The adapter TF.js's device came from (vendor, architecture), to check it is ours. */
export function tfjsAdapterInfo(tf: Tf): { vendor: string; architecture: string } {
  const be = webgpuBackend(tf) as WebGpuBackendInternals & { adapterInfo?: { vendor?: string; architecture?: string } };
  const info = (be.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo ?? be.adapterInfo ?? {};
  return { vendor: info.vendor ?? '', architecture: info.architecture ?? '' };
}

/**
 * Waits until everything TF.js has queued is done on the GPU: submits its open command encoder
 * and awaits the queue, without reading a tensor back (our side awaits its submit the same way).
 */
export async function tfjsFinish(tf: Tf): Promise<void> {
  const be = webgpuBackend(tf);
  be.endComputePassEncoder();
  if (be.commandEncoder) be.submitQueue();
  await be.device.queue.onSubmittedWorkDone();
}

/**
 * Runs `fn` (which must finish its GPU work: tfjsFinish or a read) inside validation and
 * out-of-memory error scopes on TF.js's device and throws the first error: TF.js itself only
 * logs them, and a kernel whose pipeline failed (e.g. more storage buffers than the adapter
 * binds) leaves its output unwritten.
 */
export async function tfjsChecked<T>(tf: Tf, what: string, fn: () => Promise<T>): Promise<T> {
  const { device } = webgpuBackend(tf);
  device.pushErrorScope('validation');
  device.pushErrorScope('out-of-memory');
  let out: { value: T } | { error: unknown };
  try {
    out = { value: await fn() };
  } catch (error) {
    out = { error };
  }
  const errors = [await device.popErrorScope(), await device.popErrorScope()].filter((e) => e !== null);
  if (errors.length) throw new Error(`TF.js ${what}: WebGPU error: ${errors.map((e) => e.message).join('; ')}`);
  if ('error' in out) throw out.error;
  return out.value;
}

/** out (M, N) = a (M, K) · b (N, K)^T in TF.js, the engine's weight layout. */
export class TfjsMatmul {
  private readonly a: Tensor2D;
  private readonly b: Tensor2D;

  constructor(
    private readonly tf: Tf,
    a: Float32Array,
    b: Float32Array,
    M: number,
    K: number,
    N: number,
  ) {
    this.a = tf.tensor2d(a, [M, K]);
    this.b = tf.tensor2d(b, [N, K]);
  }

  /** One product, run to completion on the GPU (nothing is read back). */
  async run(): Promise<void> {
    const c = this.tf.matMul(this.a, this.b, false, true);
    await tfjsFinish(this.tf);
    c.dispose();
  }

  /** One product, read back (for validation). */
  async result(): Promise<Float32Array> {
    const c = this.tf.matMul(this.a, this.b, false, true);
    const data = (await c.data()) as Float32Array;
    c.dispose();
    return data;
  }

  dispose(): void {
    this.a.dispose();
    this.b.dispose();
  }
}

/** A GPT-2-style model in TF.js ops, matching src/model (pre-LN, tied LM head, GELU tanh). */
export class TfjsGpt {
  private readonly vars: Map<string, import('@tensorflow/tfjs-core').Variable> = new Map();
  private readonly opt: import('@tensorflow/tfjs-core').Optimizer;

  constructor(
    private readonly tf: Tf,
    private readonly cfg: ModelConfig,
    lr = 3e-4,
  ) {
    const { nLayer: L, dModel: C, contextLength: maxT, vocabSize: V } = cfg;
    const v = (name: string, shape: number[], init: 'normal' | 'zeros' | 'ones') => {
      const t = init === 'normal' ? tf.randomNormal(shape, 0, 0.02) : init === 'zeros' ? tf.zeros(shape) : tf.ones(shape);
      this.vars.set(name, tf.variable(t, true)); // unnamed: TF.js variable names are global, and two models may coexist
      t.dispose(); // the variable keeps its own reference to the data
    };
    v('wte', [V, C], 'normal');
    v('wpe', [maxT, C], 'normal');
    for (let l = 0; l < L; l++) {
      v(`h${l}.ln1w`, [C], 'ones');
      v(`h${l}.ln1b`, [C], 'zeros');
      v(`h${l}.qkvw`, [3 * C, C], 'normal');
      v(`h${l}.qkvb`, [3 * C], 'zeros');
      v(`h${l}.attprojw`, [C, C], 'normal');
      v(`h${l}.attprojb`, [C], 'zeros');
      v(`h${l}.ln2w`, [C], 'ones');
      v(`h${l}.ln2b`, [C], 'zeros');
      v(`h${l}.fcw`, [4 * C, C], 'normal');
      v(`h${l}.fcb`, [4 * C], 'zeros');
      v(`h${l}.fcprojw`, [C, 4 * C], 'normal');
      v(`h${l}.fcprojb`, [C], 'zeros');
    }
    v('lnfw', [C], 'ones');
    v('lnfb', [C], 'zeros');
    // AdamW's decoupled decay is not in TF.js core; Adam has the same per-step cost.
    this.opt = tf.train.adam(lr, 0.9, 0.95, 1e-8);
  }

  /**
   * Copies our parameter slab (laid out by `table`) into the variables of the same names, so both
   * engines start from one initialisation and their first losses can be compared. Our value head
   * has no counterpart here.
   */
  setParams(table: ParamTable, slab: Float32Array): void {
    for (const [name, v] of this.vars) {
      const e = table.byName.get(name);
      if (!e || e.size !== v.size) throw new Error(`TfjsGpt.setParams: no tensor "${name}" of ${v.size} floats in the parameter table`);
      const t = this.tf.tensor(slab.subarray(e.offset, e.offset + e.size), v.shape);
      v.assign(t);
      t.dispose();
    }
  }

  private w(name: string) {
    return this.vars.get(name)!;
  }

  private layernorm(x: Tensor, w: string, b: string) {
    const tf = this.tf;
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), this.w(w)), this.w(b));
  }

  private linear(x: Tensor2D, w: string, b: string | null) {
    const y = this.tf.matMul(x, this.w(w) as Tensor2D, false, true);
    return b ? this.tf.add(y, this.w(b)) : y;
  }

  private gelu(x: Tensor) {
    const tf = this.tf;
    const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.pow(x, 3))));
    return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
  }

  /** Mean cross-entropy of next-token prediction over (B, T). */
  loss(tokens: Tensor2D, targets: Tensor2D) {
    const tf = this.tf;
    const { nLayer: L, dModel: C, nHead: NH, vocabSize: V } = this.cfg;
    const [B, T] = tokens.shape;
    const HS = C / NH;
    const pos = tf.range(0, T, 1, 'int32');
    let x = tf.reshape(tf.add(tf.gather(this.w('wte'), tokens), tf.gather(this.w('wpe'), pos)), [B * T, C]) as Tensor2D;
    const causal = tf.linalg.bandPart(tf.ones([T, T]), -1, 0);
    const negInf = tf.mul(tf.sub(1, causal), -1e9);
    for (let l = 0; l < L; l++) {
      const h = this.layernorm(x, `h${l}.ln1w`, `h${l}.ln1b`) as Tensor2D;
      const qkv = tf.reshape(this.linear(h, `h${l}.qkvw`, `h${l}.qkvb`), [B, T, 3, NH, HS]);
      const [q, k, v] = tf.unstack(qkv, 2).map((t) => tf.transpose(t, [0, 2, 1, 3])); // (B, NH, T, HS)
      const att = tf.softmax(tf.add(tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(HS)), negInf));
      const y = tf.reshape(tf.transpose(tf.matMul(att, v!), [0, 2, 1, 3]), [B * T, C]) as Tensor2D;
      x = tf.add(x, this.linear(y, `h${l}.attprojw`, `h${l}.attprojb`));
      const h2 = this.layernorm(x, `h${l}.ln2w`, `h${l}.ln2b`) as Tensor2D;
      const f = this.gelu(this.linear(h2, `h${l}.fcw`, `h${l}.fcb`)) as Tensor2D;
      x = tf.add(x, this.linear(f, `h${l}.fcprojw`, `h${l}.fcprojb`));
    }
    const logits = this.linear(this.layernorm(x, 'lnfw', 'lnfb') as Tensor2D, 'wte', null);
    const onehot = tf.oneHot(tf.reshape(targets, [B * T]) as import('@tensorflow/tfjs-core').Tensor1D, V);
    return tf.losses.softmaxCrossEntropy(onehot, logits) as import('@tensorflow/tfjs-core').Scalar;
  }

  /** One optimizer step; reads the loss back only when asked (as our engine does on logging steps). */
  async step(tokens: Int32Array, targets: Int32Array, B: number, T: number, readLoss: boolean): Promise<number | null> {
    const tf = this.tf;
    const tok = tf.tensor2d(tokens, [B, T], 'int32');
    const tgt = tf.tensor2d(targets, [B, T], 'int32');
    const loss = this.opt.minimize(() => this.loss(tok, tgt), true);
    // Without a read nothing waits: TF.js keeps queueing; the caller ends a timed run with a read.
    const value = readLoss && loss ? (await loss.data())[0]! : null;
    loss?.dispose();
    tok.dispose();
    tgt.dispose();
    return value;
  }

  dispose(): void {
    for (const v of this.vars.values()) v.dispose();
    this.opt.dispose();
  }
}
