/**
 * KV cache for generation: kv_write copies the new rows' k and v into the per-layer caches, and
 * attention_decode attends the new query rows over the cache (Tnew = 1 for a decode step,
 * Tnew > 1 for a prefill). References: kvWriteRef, attentionDecodeRef in attention_ref.ts.
 *
 * Shape legend: B batch, Tnew new rows, C channels, NH heads, HS = C / NH head size, Tmax the
 * KV-cache capacity; pos the absolute position of the first new row (the same for every b).
 */
import decodeWgsl from '../../shaders/attention_decode.wgsl';
import kvWriteWgsl from '../../shaders/kv_write.wgsl';
import { GpuError } from '../gpu/errors';
import { linearWorkgroups, withConstants, type KernelSpec } from '../gpu/kernel';
import { checkAttentionShape, checkCacheRange } from './attention_ref';
import { errorText } from '../util/errors';

export interface KvWriteProblem {
  B: number;
  Tnew: number;
  C: number;
  Tmax: number;
  pos: number;
}

export interface DecodeProblem {
  B: number;
  Tnew: number;
  C: number;
  NH: number;
  Tmax: number;
  pos: number;
}

function usage(name: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    throw new GpuError('usage', errorText(e), `kernel "${name}"`);
  }
}

/** kcache, vcache (B, Tmax, C) rows [pos, pos + Tnew) = k, v parts of qkv (B, Tnew, 3C). */
export const kvWrite: KernelSpec<KvWriteProblem> = {
  name: 'kv_write',
  wgsl: kvWriteWgsl,
  bindings: [
    { name: 'qkv', kind: 'read-only-storage' }, // (B, Tnew, 3C)
    { name: 'kcache', kind: 'storage' }, // (B, Tmax, C)
    { name: 'vcache', kind: 'storage' }, // (B, Tmax, C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [64],
  dispatch: (p, limits) => {
    usage('kv_write', () => checkCacheRange('kv_write', p.Tnew, p.Tmax, p.pos));
    return linearWorkgroups(p.B * p.Tnew * p.C, 64, limits);
  },
  uniforms: (p) => new Uint32Array([p.B, p.Tnew, p.C, p.Tmax, p.pos]),
};

/** Largest head size attentionDecode serves (its q row and accumulator live in shared memory). */
export const DECODE_MAX_HS = 256;
const DECODE_WG = 64;

function decodeDispatch(name: string, maxHS: number) {
  return (p: DecodeProblem): readonly [number, number, number] => {
    usage(name, () => {
      const HS = checkAttentionShape(name, p.B, p.Tnew, p.C, p.NH);
      checkCacheRange(name, p.Tnew, p.Tmax, p.pos);
      if (HS > maxHS) throw new Error(`${name}: head size ${HS} exceeds MAX_HS=${maxHS}; use attentionDecodeVariant`);
    });
    return [p.Tnew, p.NH, p.B];
  };
}

/**
 * out (B, Tnew, C): the queries of qkv (B, Tnew, 3C) at positions pos .. pos+Tnew-1 over the
 * cache rows they see (start (B) u32 left padding). Run kvWrite for the same rows first.
 */
export const attentionDecode: KernelSpec<DecodeProblem> = {
  name: 'attention_decode',
  wgsl: decodeWgsl,
  bindings: [
    { name: 'qkv', kind: 'read-only-storage' }, // (B, Tnew, 3C)
    { name: 'kcache', kind: 'read-only-storage' }, // (B, Tmax, C)
    { name: 'vcache', kind: 'read-only-storage' }, // (B, Tmax, C)
    { name: 'start', kind: 'read-only-storage' }, // (B) u32
    { name: 'out', kind: 'storage' }, // (B, Tnew, C)
    { name: 'params', kind: 'uniform' },
  ],
  workgroupSize: [DECODE_WG],
  constants: { MAX_HS: DECODE_MAX_HS },
  dispatch: decodeDispatch('attention_decode', DECODE_MAX_HS),
  uniforms: (p) => {
    const u = new DataView(new ArrayBuffer(28));
    [p.B, p.Tnew, p.C, p.NH, p.Tmax, p.pos].forEach((v, i) => u.setUint32(4 * i, v, true));
    u.setFloat32(24, 1 / Math.sqrt(p.C / p.NH), true);
    return new Uint8Array(u.buffer);
  },
};

/** attentionDecode with another workgroup size (a power of two) and head-size bound. */
export function attentionDecodeVariant(wg: number, maxHS = DECODE_MAX_HS): KernelSpec<DecodeProblem> {
  if (!Number.isInteger(Math.log2(wg))) throw new Error(`attention_decode: workgroup size must be a power of two, got ${wg}`);
  return {
    ...withConstants(attentionDecode, { workgroupSize: [wg], constants: { MAX_HS: maxHS } }),
    dispatch: decodeDispatch('attention_decode', maxHS),
  };
}
