/**
 * A recording: dispatches, copies, clears and reads encoded into one command encoder and
 * submitted once. Consecutive dispatches share one compute pass (WebGPU orders their storage
 * accesses), except when profiling, where each dispatch gets its own pass with timestamps.
 * Reads capture the buffer at their place in the sequence and resolve after the submit.
 */
import { GpuError, fromScopeError } from './errors';
import type { WorkgroupCount } from './kernel';
import type { CompiledKernel, GpuRuntime } from './runtime';
import { errorText } from '../util/errors';

/** A buffer, or a byte range of one, bound to a kernel binding. */
export type BufferBinding = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };
export type Bindings = Readonly<Record<string, BufferBinding>>;

export interface RecordOptions {
  /** time each dispatch with GPU timestamps (ignored without the timestamp-query feature) */
  profile?: boolean;
}

export interface DispatchTiming {
  kernel: string;
  ns: number;
}

export interface SubmitReport {
  label: string;
  dispatches: number;
  reads: number;
  /** per-dispatch GPU time when profiling with timestamp-query, else null */
  timings: DispatchTiming[] | null;
  /** CPU time from submit to completion */
  wallMs: number;
}

type Command =
  | { op: 'dispatch'; kernel: CompiledKernel<never>; bindings: Bindings; workgroups: WorkgroupCount; uniform: ArrayBufferView | null }
  | { op: 'copy'; src: GPUBuffer; srcOffset: number; dst: GPUBuffer; dstOffset: number; size: number }
  | { op: 'clear'; buffer: GPUBuffer; offset: number; size: number }
  | { op: 'read'; buffer: GPUBuffer; offset: number; size: number; pending: Pending };

interface Pending {
  resolve(data: ArrayBuffer): void;
  reject(e: unknown): void;
}

export class Recorder {
  private readonly commands: Command[] = [];
  private submitted = false;

  constructor(
    private readonly rt: GpuRuntime,
    readonly label: string,
    private readonly options: RecordOptions,
  ) {}

  get dispatchCount(): number {
    return this.commands.filter((c) => c.op === 'dispatch').length;
  }

  /** Records kernel(problem) with its bindings by name. */
  dispatch<P>(kernel: CompiledKernel<P>, bindings: Bindings, problem: P): this {
    const spec = kernel.spec;
    const where = `${this.label} > ${spec.name}`;
    this.assertOpen(where);
    if (kernel.generation !== this.rt.generation) {
      throw new GpuError('device-lost', 'pipeline was built on a device that was lost; compile it again', where);
    }
    for (const b of spec.bindings) {
      if (b.kind !== 'uniform' && !(b.name in bindings)) throw new GpuError('usage', `missing binding "${b.name}"`, where);
    }
    for (const name of Object.keys(bindings)) {
      const b = spec.bindings.find((s) => s.name === name);
      if (!b) throw new GpuError('usage', `unknown binding "${name}" (kernel has ${spec.bindings.map((s) => s.name).join(', ')})`, where);
      if (b.kind === 'uniform') throw new GpuError('usage', `binding "${name}" is the uniform block; it comes from uniforms()`, where);
      this.rt.checkBuffer(bufferOf(bindings[name]!), where);
    }
    const workgroups = spec.dispatch(problem, this.rt.limits);
    const max = this.rt.limits.maxComputeWorkgroupsPerDimension;
    if (workgroups.some((w) => !Number.isInteger(w) || w < 0 || w > max)) {
      throw new GpuError('limit', `dispatch [${workgroups.join(', ')}] outside 0..${max} per dimension`, where);
    }
    const uniform = spec.uniforms ? spec.uniforms(problem) : null;
    this.commands.push({ op: 'dispatch', kernel: kernel as CompiledKernel<never>, bindings, workgroups, uniform });
    return this;
  }

  copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, size: number): this {
    const where = `${this.label} > copy ${src.label} -> ${dst.label}`;
    this.assertOpen(where);
    checkRange(src, srcOffset, size, where);
    checkRange(dst, dstOffset, size, where);
    this.commands.push({ op: 'copy', src, srcOffset, dst, dstOffset, size });
    return this;
  }

  /** Zeroes a byte range. */
  clear(buffer: GPUBuffer, offset = 0, size = buffer.size - offset): this {
    const where = `${this.label} > clear ${buffer.label}`;
    this.assertOpen(where);
    checkRange(buffer, offset, size, where);
    this.commands.push({ op: 'clear', buffer, offset, size });
    return this;
  }

  /** The bytes of `buffer` at this point of the sequence, available once submit() completes. */
  read(buffer: GPUBuffer, offset = 0, size = buffer.size - offset): Promise<ArrayBuffer> {
    const where = `${this.label} > read ${buffer.label}`;
    this.assertOpen(where);
    checkRange(buffer, offset, size, where);
    const bytes = new Promise<ArrayBuffer>((resolve, reject) => {
      this.commands.push({ op: 'read', buffer, offset, size, pending: { resolve, reject } });
    });
    // a failed submit rejects every read; a caller that awaited submit() first and so never
    // awaits this one must not turn that into an unhandled rejection (submit() reports it)
    bytes.catch(() => {});
    return bytes;
  }

  /**
   * Encodes everything into one command buffer and submits it. The submit happens before this
   * function first awaits, so a caller may queue more work before awaiting the result.
   */
  submit(): Promise<SubmitReport> {
    const rt = this.rt;
    this.assertOpen(this.label);
    this.submitted = true;
    const dev = rt.device;
    const t0 = performance.now();
    const profile = !!this.options.profile && dev.features.has('timestamp-query');
    const dispatches = this.commands.filter((c): c is Extract<Command, { op: 'dispatch' }> => c.op === 'dispatch');
    const reads = this.commands.filter((c): c is Extract<Command, { op: 'read' }> => c.op === 'read');
    const released: GPUBuffer[] = [];
    const staging = new Map<Command, GPUBuffer>();

    dev.pushErrorScope('out-of-memory');
    dev.pushErrorScope('validation');

    // One uniform block for the whole recording, written once.
    const align = dev.limits.minUniformBufferOffsetAlignment;
    const uniformOffsets = new Map<Command, number>();
    let uniformBytes = 0;
    for (const d of dispatches) {
      if (!d.uniform) continue;
      uniformOffsets.set(d, uniformBytes);
      uniformBytes += Math.ceil(d.uniform.byteLength / align) * align;
    }
    let uniformBuffer: GPUBuffer | null = null;
    if (uniformBytes > 0) {
      uniformBuffer = rt.pool.acquire(uniformBytes, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, 'uniforms');
      released.push(uniformBuffer);
      const block = new Uint8Array(uniformBytes);
      for (const [d, off] of uniformOffsets) {
        const u = (d as Extract<Command, { op: 'dispatch' }>).uniform!;
        block.set(new Uint8Array(u.buffer, u.byteOffset, u.byteLength), off);
      }
      dev.queue.writeBuffer(uniformBuffer, 0, block);
    }

    let querySet: GPUQuerySet | null = null;
    if (profile && dispatches.length) {
      querySet = dev.createQuerySet({ type: 'timestamp', count: 2 * dispatches.length, label: `${this.label} timestamps` });
    }

    const encoder = dev.createCommandEncoder({ label: this.label });
    let pass: GPUComputePassEncoder | null = null;
    const endPass = (): void => {
      pass?.end();
      pass = null;
    };
    let di = 0;
    for (const c of this.commands) {
      if (c.op !== 'dispatch') endPass();
      switch (c.op) {
        case 'dispatch': {
          if (querySet) {
            endPass();
            pass = encoder.beginComputePass({
              label: c.kernel.spec.name,
              timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * di, endOfPassWriteIndex: 2 * di + 1 },
            });
          } else {
            pass ??= encoder.beginComputePass({ label: this.label });
          }
          const p: GPUComputePassEncoder = pass;
          p.setPipeline(c.kernel.pipeline);
          p.setBindGroup(0, bindGroup(dev, c, uniformBuffer, uniformOffsets.get(c)));
          p.dispatchWorkgroups(c.workgroups[0], c.workgroups[1], c.workgroups[2]);
          di++;
          break;
        }
        case 'copy':
          encoder.copyBufferToBuffer(c.src, c.srcOffset, c.dst, c.dstOffset, c.size);
          break;
        case 'clear':
          encoder.clearBuffer(c.buffer, c.offset, c.size);
          break;
        case 'read': {
          const s = rt.pool.acquire(c.size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback');
          staging.set(c, s);
          encoder.copyBufferToBuffer(c.buffer, c.offset, s, 0, c.size);
          break;
        }
      }
    }
    endPass();

    let timestamps: GPUBuffer | null = null;
    if (querySet) {
      const bytes = 16 * dispatches.length;
      const resolve = dev.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'timestamps' });
      timestamps = rt.pool.acquire(bytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'timestamps');
      encoder.resolveQuerySet(querySet, 0, 2 * dispatches.length, resolve, 0);
      encoder.copyBufferToBuffer(resolve, 0, timestamps, 0, bytes);
      void dev.queue.onSubmittedWorkDone().then(() => {
        resolve.destroy();
        querySet!.destroy();
      });
    }

    dev.queue.submit([encoder.finish()]);
    rt.count('submits');
    rt.count('dispatches', dispatches.length);

    const errors = Promise.all([dev.popErrorScope(), dev.popErrorScope()]);
    return this.complete(errors, reads, staging, released, timestamps, dispatches, t0);
  }

  private async complete(
    errorsP: Promise<(GPUError | null)[]>,
    reads: Extract<Command, { op: 'read' }>[],
    staging: Map<Command, GPUBuffer>,
    released: GPUBuffer[],
    timestamps: GPUBuffer | null,
    dispatches: Extract<Command, { op: 'dispatch' }>[],
    t0: number,
  ): Promise<SubmitReport> {
    const rt = this.rt;
    const kernels = [...new Set(dispatches.map((d) => d.kernel.spec.name))].join(', ') || 'no kernels';
    try {
      const errors = await errorsP;
      const first = errors.find((e) => e !== null);
      if (first) throw fromScopeError(first, `${this.label} (${kernels})`);
      const mapped = await Promise.all(
        reads.map(async (r) => {
          const s = staging.get(r)!;
          await s.mapAsync(GPUMapMode.READ, 0, r.size);
          const copy = s.getMappedRange(0, r.size).slice(0);
          s.unmap();
          return copy;
        }),
      );
      rt.count('readbacks', reads.length);
      reads.forEach((r, i) => r.pending.resolve(mapped[i]!));
      let timings: DispatchTiming[] | null = null;
      if (timestamps) {
        await timestamps.mapAsync(GPUMapMode.READ);
        const t = new BigUint64Array(timestamps.getMappedRange(0, 16 * dispatches.length).slice(0));
        timestamps.unmap();
        timings = dispatches.map((d, i) => ({ kernel: d.kernel.spec.name, ns: Number(t[2 * i + 1]! - t[2 * i]!) }));
        released.push(timestamps);
      }
      if (!reads.length && !timestamps) await rt.device.queue.onSubmittedWorkDone();
      for (const s of staging.values()) released.push(s);
      for (const b of released) rt.pool.release(b);
      return { label: this.label, dispatches: dispatches.length, reads: reads.length, timings, wallMs: performance.now() - t0 };
    } catch (e) {
      const err = rt.state === 'lost' ? new GpuError('device-lost', `GPU device was lost during submit: ${errorText(e)}`, this.label) : e;
      for (const r of reads) r.pending.reject(err);
      throw err;
    }
  }

  private assertOpen(where: string): void {
    if (this.submitted) throw new GpuError('usage', 'recording was already submitted; start a new one', where);
  }
}

function bufferOf(b: BufferBinding): GPUBuffer {
  return b instanceof GPUBuffer ? b : b.buffer;
}

function bindGroup(
  dev: GPUDevice,
  c: Extract<Command, { op: 'dispatch' }>,
  uniformBuffer: GPUBuffer | null,
  uniformOffset: number | undefined,
): GPUBindGroup {
  const spec = c.kernel.spec;
  const entries: GPUBindGroupEntry[] = spec.bindings.map((b, i) => {
    if (b.kind === 'uniform') {
      return { binding: i, resource: { buffer: uniformBuffer!, offset: uniformOffset!, size: c.uniform!.byteLength } };
    }
    const bound = c.bindings[b.name]!;
    if (bound instanceof GPUBuffer) return { binding: i, resource: { buffer: bound } };
    const res: GPUBufferBinding = { buffer: bound.buffer };
    if (bound.offset !== undefined) res.offset = bound.offset;
    if (bound.size !== undefined) res.size = bound.size;
    return { binding: i, resource: res };
  });
  return dev.createBindGroup({ label: spec.name, layout: c.kernel.layout, entries });
}

function checkRange(buffer: GPUBuffer, offset: number, size: number, where: string): void {
  if (offset % 4 !== 0 || size % 4 !== 0) {
    throw new GpuError('usage', `offset ${offset} and size ${size} must be multiples of 4 bytes`, where);
  }
  if (offset < 0 || size < 0 || offset + size > buffer.size) {
    throw new GpuError('usage', `range [${offset}, ${offset + size}) is outside buffer "${buffer.label}" of ${buffer.size} bytes`, where);
  }
}
