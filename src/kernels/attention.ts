/**
 * Causal multi-head self-attention (llm.c layout) on the GPU: forward (saving the softmax
 * probabilities) and a deterministic two-dispatch backward. The float64 references live in
 * attention_ref.ts; the KV-cache kernels for generation in attention_kv.ts. Both are re-exported.
 *
 * Shape legend: B batch, T time, C channels, NH heads, HS = C / NH head size. Row-major f32;
 * qkv rows are [q (C) | k (C) | v (C)], head h uses channels h*HS .. (h+1)*HS of each part;
 * start (B) u32 is the left padding (0 everywhere for plain causal attention).
 */
import forwardWgsl from '../../shaders/attention_forward.wgsl';
import dqWgsl from '../../shaders/attention_backward_dq.wgsl';
import dkvWgsl from '../../shaders/attention_backward_dkv.wgsl';
import { GpuError } from '../gpu/errors';
import { withConstants, type KernelSpec, type WorkgroupCount } from '../gpu/kernel';
import type { BufferBinding, Recorder } from '../gpu/recorder';
import type { GpuRuntime } from '../gpu/runtime';
import { checkAttentionShape } from './attention_ref';
import { errorText } from '../util/errors';

export * from './attention_ref';
export * from './attention_kv';

export interface AttentionProblem {
  B: number;
  T: number;
  C: number;
  NH: number;
}

/** Query (or key) rows per workgroup; workgroups are TILE x TILE = 256 invocations. */
export const ATTENTION_TILE = 16;

/** Uniform block shared by the three kernels: B, T, C, NH (u32), scale = 1/sqrt(HS) (f32). */
function attentionUniforms(p: AttentionProblem): Uint8Array<ArrayBuffer> {
  const u = new DataView(new ArrayBuffer(20));
  [p.B, p.T, p.C, p.NH].forEach((v, i) => u.setUint32(4 * i, v, true));
  u.setFloat32(16, 1 / Math.sqrt(p.C / p.NH), true);
  return new Uint8Array(u.buffer);
}

/** One workgroup per (row tile, head, batch); checks the shape and that att fits one binding. */
function attentionDispatch(name: string, tile: number) {
  return (p: AttentionProblem, limits: GPUSupportedLimits): WorkgroupCount => {
    try {
      checkAttentionShape(name, p.B, p.T, p.C, p.NH);
    } catch (e) {
      throw new GpuError('usage', errorText(e), `kernel "${name}"`);
    }
    const attBytes = p.B * p.NH * p.T * p.T * 4;
    if (attBytes > limits.maxStorageBufferBindingSize) {
      throw new GpuError(
        'limit',
        `att (B, NH, T, T) needs ${attBytes} bytes; maxStorageBufferBindingSize is ${limits.maxStorageBufferBindingSize}`,
        `kernel "${name}"`,
      );
    }
    return [Math.ceil(p.T / tile), p.NH, p.B];
  };
}

/** out (B, T, C) and att (B, NH, T, T) from qkv (B, T, 3C) and start (B). Writes every element of both. */
export const attentionForward: KernelSpec<AttentionProblem> = {
  name: 'attention_forward',
  wgsl: forwardWgsl,
  bindings: [
    { name: 'qkv', kind: 'read-only-storage' }, // (B, T, 3C)
    { name: 'start', kind: 'read-only-storage' }, // (B) u32
    { name: 'out', kind: 'storage' }, // (B, T, C)
    { name: 'att', kind: 'storage' }, // (B, NH, T, T)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [ATTENTION_TILE, ATTENTION_TILE],
  dispatch: attentionDispatch('attention_forward', ATTENTION_TILE),
  uniforms: attentionUniforms,
};

/** Backward part 1: dpre (B, NH, T, T) written whole; dqkv (B, T, 3C) q part +=. */
export const attentionBackwardDq: KernelSpec<AttentionProblem> = {
  name: 'attention_backward_dq',
  wgsl: dqWgsl,
  bindings: [
    { name: 'dout', kind: 'read-only-storage' }, // (B, T, C)
    { name: 'qkv', kind: 'read-only-storage' }, // (B, T, 3C)
    { name: 'att', kind: 'read-only-storage' }, // (B, NH, T, T)
    { name: 'start', kind: 'read-only-storage' }, // (B) u32
    { name: 'dpre', kind: 'storage' }, // (B, NH, T, T) scratch
    { name: 'dqkv', kind: 'storage' }, // (B, T, 3C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [ATTENTION_TILE, ATTENTION_TILE],
  dispatch: attentionDispatch('attention_backward_dq', ATTENTION_TILE),
  uniforms: attentionUniforms,
};

/** Backward part 2 (after part 1): dqkv (B, T, 3C) k and v parts +=, from dpre. */
export const attentionBackwardDkv: KernelSpec<AttentionProblem> = {
  name: 'attention_backward_dkv',
  wgsl: dkvWgsl,
  bindings: [
    { name: 'dout', kind: 'read-only-storage' }, // (B, T, C)
    { name: 'qkv', kind: 'read-only-storage' }, // (B, T, 3C)
    { name: 'att', kind: 'read-only-storage' }, // (B, NH, T, T)
    { name: 'start', kind: 'read-only-storage' }, // (B) u32
    { name: 'dpre', kind: 'read-only-storage' }, // (B, NH, T, T) from attentionBackwardDq
    { name: 'dqkv', kind: 'storage' }, // (B, T, 3C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [ATTENTION_TILE, ATTENTION_TILE],
  dispatch: attentionDispatch('attention_backward_dkv', ATTENTION_TILE),
  uniforms: attentionUniforms,
};

/** A variant of one of the three kernels with another tile (workgroup tile x tile, at most 16 x 16). */
export function attentionTileVariant(spec: KernelSpec<AttentionProblem>, tile: number): KernelSpec<AttentionProblem> {
  if (!Number.isInteger(tile) || tile < 1 || tile > 16) throw new Error(`${spec.name}: tile must be an integer in 1..16, got ${tile}`);
  return { ...withConstants(spec, { workgroupSize: [tile, tile] }), dispatch: attentionDispatch(spec.name, tile) };
}

export interface AttentionBackwardBuffers {
  dqkv: BufferBinding; // (B, T, 3C), accumulated into
  dout: BufferBinding; // (B, T, C)
  qkv: BufferBinding; // (B, T, 3C)
  att: BufferBinding; // (B, NH, T, T) from the forward
  start: BufferBinding; // (B) u32
  /** (B, NH, T, T) scratch; taken from the pool (and returned in `temporaries`) when absent */
  dpre?: GPUBuffer;
}

/**
 * Records the backward: dqkv += d(attention)/d(qkv) given dout. Two dispatches; the caller
 * releases the returned temporaries (rt.pool.release) after the submit.
 */
export async function recordAttentionBackward(
  rt: GpuRuntime,
  rec: Recorder,
  bufs: AttentionBackwardBuffers,
  p: AttentionProblem,
  specs: { dq: KernelSpec<AttentionProblem>; dkv: KernelSpec<AttentionProblem> } = { dq: attentionBackwardDq, dkv: attentionBackwardDkv },
): Promise<{ temporaries: GPUBuffer[] }> {
  const [dq, dkv] = await Promise.all([rt.compile(specs.dq), rt.compile(specs.dkv)]);
  const temporaries: GPUBuffer[] = [];
  let dpre = bufs.dpre;
  if (!dpre) {
    dpre = rt.pool.acquire(p.B * p.NH * p.T * p.T * 4, GPUBufferUsage.STORAGE, 'attention dpre');
    temporaries.push(dpre);
  }
  const { dqkv, dout, qkv, att, start } = bufs;
  rec.dispatch(dq, { dout, qkv, att, start, dpre, dqkv }, p);
  rec.dispatch(dkv, { dout, qkv, att, start, dpre, dqkv }, p);
  return { temporaries };
}
