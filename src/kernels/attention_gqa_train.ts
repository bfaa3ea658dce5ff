/**
 * Grouped-query attention for training the Hugging Face decoders (Llama/SmolLM2, Qwen2): a
 * full-sequence forward over packed qkv rows that saves the per-row logsumexp, and a
 * deterministic two-dispatch backward that recomputes the probabilities from it and produces
 * packed d-qkv. Shaders: shaders/attention_gqa_train_forward.wgsl,
 * shaders/attention_gqa_train_backward_dq.wgsl, shaders/attention_gqa_train_backward_dkv.wgsl.
 * float64 references: attention_gqa_train_ref.ts (re-exported).
 *
 * Shape legend: B batch, T time, NH query heads, NKV kv heads (NKV divides NH; query head h reads
 * kv head floor(h / (NH / NKV))), HS head size (<= 128 by default), W = (NH + 2 NKV) HS the packed
 * qkv row [q NH*HS | k NKV*HS | v NKV*HS]. Row-major f32; start (B) u32 the left padding, masked
 * as attentionGqaRef masks (query t sees j == t or start[b] <= j <= t).
 *
 * What the forward saves, and why: lse (B, NH, T), 4 B NH T bytes, besides out (B, T, NH*HS),
 * which the model keeps anyway as o_proj's input. The lab's GPT attention saves the softmax
 * probabilities (B, NH, T, T) instead: 4 B NH T^2 bytes, T times more. For SmolLM2-135M (NH = 9,
 * 30 layers) at B = 8, T = 512 that is 72 MiB a layer and 2.1 GiB for the model, against 144 KiB
 * and 4.2 MiB with lse; Qwen2.5-0.5B (NH = 14) at B = 16, T = 512 needs 224 MiB a layer for the
 * probabilities, over the 128 MiB maxStorageBufferBindingSize many devices have. The backward
 * adds delta (B, NH, T) (as lse) and pays for it by computing the scores q.k and dout.v twice,
 * once in each of its kernels (and once more per extra channel block of dk/dv when HS > 64).
 * Everything is f32, with no atomics: each output element is summed in a fixed order by one
 * invocation, so results are bitwise reproducible.
 */
import forwardWgsl from '../../shaders/attention_gqa_train_forward.wgsl';
import dqWgsl from '../../shaders/attention_gqa_train_backward_dq.wgsl';
import dkvWgsl from '../../shaders/attention_gqa_train_backward_dkv.wgsl';
import { GpuError } from '../gpu/errors';
import type { KernelSpec, WorkgroupCount } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { checkGqaTrainProblem, type AttentionGqaTrainProblem } from './attention_gqa_train_ref';
import { errorText } from '../util/errors';

export * from './attention_gqa_train_ref';

/** Query (or key) rows per workgroup; workgroups are TILE x TILE = 256 invocations. */
export const GQA_TRAIN_TILE = 16;
/** Largest head size the default pipelines serve (a (TILE, MAX_HS) accumulator in shared memory). */
export const GQA_TRAIN_MAX_HS = 128;
/** Channels of dk and dv per backward workgroup: larger head sizes split over ceil(HS / 64) workgroups. */
export const GQA_TRAIN_CHANNEL_BLOCK = 64;

/** The three kernels of one configuration. */
export interface AttentionGqaTrainKernels {
  forward: KernelSpec<AttentionGqaTrainProblem>;
  dq: KernelSpec<AttentionGqaTrainProblem>;
  dkv: KernelSpec<AttentionGqaTrainProblem>;
}

/** 24 bytes: B, T, NH, NKV, HS as u32, scale = 1/sqrt(HS) as f32 (the Params of all three shaders). */
function uniforms(p: AttentionGqaTrainProblem): Uint8Array<ArrayBuffer> {
  const u = new DataView(new ArrayBuffer(24));
  [p.B, p.T, p.NH, p.NKV, p.HS].forEach((v, i) => u.setUint32(4 * i, v, true));
  u.setFloat32(20, 1 / Math.sqrt(p.HS), true);
  return new Uint8Array(u.buffer);
}

function check(name: string, p: AttentionGqaTrainProblem, maxHS: number): void {
  try {
    checkGqaTrainProblem(p, name, maxHS);
  } catch (e) {
    throw new GpuError('usage', errorText(e), `kernel "${name}"`);
  }
}

/**
 * The forward, dq and dkv kernels with `tile` x `tile` workgroups (1 to 16; tests use small
 * tiles to cross many), head sizes up to `maxHS`, and dk/dv in blocks of `channelBlock` channels.
 * Shared memory, in floats: forward 2 tile (tile + 1) + tile^2 + tile maxHS, dq 4 tile (tile + 1)
 * + tile^2 + tile maxHS, dkv 6 tile (tile + 1) + 2 tile channelBlock: 11.2, 13.3 and 14.5 KiB at
 * the defaults, inside WebGPU's 16 KiB minimum maxComputeWorkgroupStorageSize (maxHS = 256 needs
 * a device that grants more).
 */
export function attentionGqaTrainKernels(opts: { tile?: number; maxHS?: number; channelBlock?: number } = {}): AttentionGqaTrainKernels {
  const tile = opts.tile ?? GQA_TRAIN_TILE;
  const maxHS = opts.maxHS ?? GQA_TRAIN_MAX_HS;
  const CB = opts.channelBlock ?? GQA_TRAIN_CHANNEL_BLOCK;
  if (!Number.isInteger(tile) || tile < 1 || tile > 16)
    throw new Error(`attention_gqa_train: tile must be an integer in 1..16, got ${tile}`);
  for (const [k, v] of [
    ['maxHS', maxHS],
    ['channelBlock', CB],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`attention_gqa_train: ${k} must be a positive integer, got ${v}`);
  }
  const workgroupSize = [tile, tile] as const;
  const queryTiles =
    (name: string) =>
    (p: AttentionGqaTrainProblem): WorkgroupCount => {
      check(name, p, maxHS);
      return [Math.ceil(p.T / tile), p.NH, p.B];
    };
  return {
    forward: {
      name: 'attention_gqa_train_forward',
      wgsl: forwardWgsl,
      bindings: [
        { name: 'qkv', kind: 'read-only-storage' }, // (B, T, W)
        { name: 'start', kind: 'read-only-storage' }, // (B) u32
        { name: 'out', kind: 'storage' }, // (B, T, NH*HS), written whole
        { name: 'lse', kind: 'storage' }, // (B, NH, T), written whole
        { name: 'params', kind: 'uniform' },
      ],
      workgroupSize,
      constants: { MAX_HS: maxHS },
      dispatch: queryTiles('attention_gqa_train_forward'),
      uniforms,
    },
    dq: {
      name: 'attention_gqa_train_backward_dq',
      wgsl: dqWgsl,
      bindings: [
        { name: 'dout', kind: 'read-only-storage' }, // (B, T, NH*HS)
        { name: 'qkv', kind: 'read-only-storage' }, // (B, T, W)
        { name: 'out', kind: 'read-only-storage' }, // (B, T, NH*HS) from the forward
        { name: 'lse', kind: 'read-only-storage' }, // (B, NH, T) from the forward
        { name: 'start', kind: 'read-only-storage' }, // (B) u32
        { name: 'delta', kind: 'storage' }, // (B, NH, T) scratch, written whole
        { name: 'dqkv', kind: 'storage' }, // (B, T, W), q part +=
        { name: 'params', kind: 'uniform' },
      ],
      workgroupSize,
      constants: { MAX_HS: maxHS },
      dispatch: queryTiles('attention_gqa_train_backward_dq'),
      uniforms,
    },
    dkv: {
      name: 'attention_gqa_train_backward_dkv',
      wgsl: dkvWgsl,
      bindings: [
        { name: 'dout', kind: 'read-only-storage' }, // (B, T, NH*HS)
        { name: 'qkv', kind: 'read-only-storage' }, // (B, T, W)
        { name: 'lse', kind: 'read-only-storage' }, // (B, NH, T) from the forward
        { name: 'start', kind: 'read-only-storage' }, // (B) u32
        { name: 'delta', kind: 'read-only-storage' }, // (B, NH, T) from the dq kernel
        { name: 'dqkv', kind: 'storage' }, // (B, T, W), k and v parts +=
        { name: 'params', kind: 'uniform' },
      ],
      workgroupSize,
      constants: { CB },
      dispatch: (p) => {
        check('attention_gqa_train_backward_dkv', p, Infinity);
        return [Math.ceil(p.T / tile) * Math.ceil(p.HS / CB), p.NKV, p.B];
      },
      uniforms,
    },
  };
}

const DEFAULT_KERNELS = attentionGqaTrainKernels();

/** out (B, T, NH*HS) and lse (B, NH, T) from qkv (B, T, W) and start (B): the default forward. */
export const attentionGqaTrainForward = DEFAULT_KERNELS.forward;
/** Backward part 1: delta (B, NH, T) written; dqkv (B, T, W) q part +=. */
export const attentionGqaTrainBackwardDq = DEFAULT_KERNELS.dq;
/** Backward part 2 (after part 1): dqkv (B, T, W) k and v parts +=. */
export const attentionGqaTrainBackwardDkv = DEFAULT_KERNELS.dkv;

export interface AttentionGqaTrainBuffers {
  qkv: BufferBinding; // (B, T, W)
  start: BufferBinding; // (B) u32
  out: BufferBinding; // (B, T, NH*HS)
  lse: BufferBinding; // (B, NH, T)
}

export interface AttentionGqaBackwardBuffers {
  dqkv: BufferBinding; // (B, T, W), accumulated into
  dout: BufferBinding; // (B, T, NH*HS)
  qkv: BufferBinding; // (B, T, W)
  out: BufferBinding; // (B, T, NH*HS) from the forward
  lse: BufferBinding; // (B, NH, T) from the forward
  start: BufferBinding; // (B) u32
  /** (B, NH, T) scratch; taken from the pool (and returned in `temporaries`) when absent */
  delta?: GPUBuffer;
}

/** Records the forward: out and lse written whole. */
export async function recordAttentionGqaTrainForward(
  rt: GpuRuntime,
  rec: Recorder,
  b: AttentionGqaTrainBuffers,
  p: AttentionGqaTrainProblem,
  kernels: AttentionGqaTrainKernels = DEFAULT_KERNELS,
): Promise<void> {
  rec.dispatch(await rt.compile(kernels.forward), { qkv: b.qkv, start: b.start, out: b.out, lse: b.lse }, p);
}

/**
 * Records the backward: dqkv += d(attention)/d(qkv) given dout, in two dispatches (dq and delta,
 * then dk and dv). The caller releases the returned temporaries (rt.pool.release) after the submit.
 */
export async function recordAttentionGqaBackward(
  rt: GpuRuntime,
  rec: Recorder,
  b: AttentionGqaBackwardBuffers,
  p: AttentionGqaTrainProblem,
  kernels: AttentionGqaTrainKernels = DEFAULT_KERNELS,
): Promise<{ temporaries: GPUBuffer[] }> {
  const [dq, dkv] = await Promise.all([rt.compile(kernels.dq), rt.compile(kernels.dkv)]);
  const temporaries: GPUBuffer[] = [];
  let delta = b.delta;
  if (!delta) {
    delta = rt.pool.acquire(p.B * p.NH * p.T * 4, GPUBufferUsage.STORAGE, 'attention_gqa delta');
    temporaries.push(delta);
  }
  const { dqkv, dout, qkv, out, lse, start } = b;
  rec.dispatch(dq, { dout, qkv, out, lse, start, delta, dqkv }, p);
  rec.dispatch(dkv, { dout, qkv, lse, start, delta, dqkv }, p);
  return { temporaries };
}
