/**
 * The GPU runtime: one device with negotiated limits and detected features, a pipeline cache,
 * a buffer pool, recordings submitted as one command buffer, readback, error scopes and
 * device-loss recovery. The same code runs in the browser and in Node; only the
 * GpuProvider differs (./provider.ts, ./node.ts).
 */
import { requestedFeatures, requiredLimits, summarizeAdapter, type AdapterSummary } from './adapter';
import { GpuError, fromScopeError } from './errors';
import { pipelineConstants, pipelineKey, type KernelSpec } from './kernel';
import { BufferPool } from './pool';
import type { GpuProvider } from './provider';
import { Recorder, type RecordOptions } from './recorder';
import { errorText } from '../util/errors';

export interface DeviceLossReport {
  /** 'destroyed' or 'unknown' (WebGPU's GPUDeviceLostReason) */
  reason: string;
  message: string;
  /** device generation that was lost (0 for the first device) */
  generation: number;
  at: string;
}

export interface RuntimeStats {
  dispatches: number;
  submits: number;
  readbacks: number;
  pipelinesBuilt: number;
  pipelineCacheHits: number;
}

export interface RuntimeOptions {
  powerPreference?: GPUPowerPreference;
  /** called once for each device loss */
  onLost?(report: DeviceLossReport): void;
  /** errors that escaped every error scope */
  onUncapturedError?(error: GpuError): void;
}

export interface CompiledKernel<P> {
  readonly spec: KernelSpec<P>;
  readonly key: string;
  readonly pipeline: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
  readonly generation: number;
}

export type RuntimeState = 'ready' | 'lost' | 'disposed';

export class GpuRuntime {
  static async create(provider: GpuProvider, options: RuntimeOptions = {}): Promise<GpuRuntime> {
    const adapter = await provider.requestAdapter(powerOpts(options));
    const device = await openDevice(adapter);
    return new GpuRuntime(provider, options, adapter, device);
  }

  state: RuntimeState = 'ready';
  lostReport: DeviceLossReport | null = null;
  generation = 0;
  readonly stats: RuntimeStats = { dispatches: 0, submits: 0, readbacks: 0, pipelinesBuilt: 0, pipelineCacheHits: 0 };
  readonly pool: BufferPool;
  /** the last errors that escaped every scope (at most 20) */
  readonly uncapturedErrors: GpuError[] = [];

  private readonly pipelines = new Map<string, Promise<CompiledKernel<unknown>>>();
  private readonly bufferGeneration = new WeakMap<GPUBuffer, number>();
  private readonly lostListeners = new Set<(r: DeviceLossReport) => void>();
  private dev: GPUDevice;
  private disposing = false;

  private constructor(
    readonly provider: GpuProvider,
    private readonly options: RuntimeOptions,
    private adapterRef: GPUAdapter,
    device: GPUDevice,
  ) {
    this.dev = device;
    this.pool = new BufferPool((size, usage, label) => this.createBuffer({ size, usage, label }));
    this.watch(device);
    if (options.onLost) this.lostListeners.add(options.onLost);
  }

  /** The live device. Throws GpuError('device-lost') after a loss until recover() succeeds. */
  get device(): GPUDevice {
    this.assertUsable('device');
    return this.dev;
  }

  get adapter(): GPUAdapter {
    return this.adapterRef;
  }

  get adapterSummary(): AdapterSummary {
    return summarizeAdapter(this.adapterRef);
  }

  get features(): ReadonlySet<string> {
    return this.dev.features as unknown as ReadonlySet<string>;
  }

  get limits(): GPUSupportedLimits {
    return this.dev.limits;
  }

  hasFeature(f: GPUFeatureName): boolean {
    return this.dev.features.has(f);
  }

  /** Subscribes to device loss; returns the unsubscribe function. */
  onLost(listener: (r: DeviceLossReport) => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }

  /** Compiles (or fetches from the cache) the pipeline for a kernel spec and its constants. */
  async compile<P>(spec: KernelSpec<P>): Promise<CompiledKernel<P>> {
    this.assertUsable(spec.name);
    const key = pipelineKey(spec as KernelSpec<unknown>);
    const cached = this.pipelines.get(key);
    if (cached) {
      this.stats.pipelineCacheHits++;
      return cached as Promise<CompiledKernel<P>>;
    }
    const built = this.build(spec, key);
    this.pipelines.set(key, built as Promise<CompiledKernel<unknown>>);
    built.catch(() => this.pipelines.delete(key));
    return built;
  }

  /** Creates a buffer, checking its size against the device limit; `data` is uploaded at creation. */
  createBuffer(desc: { size: number; usage: GPUBufferUsageFlags; label: string; data?: ArrayBufferView }): GPUBuffer {
    this.assertUsable(desc.label);
    const size = Math.ceil(Math.max(desc.size, desc.data?.byteLength ?? 0, 4) / 4) * 4;
    if (size > this.dev.limits.maxBufferSize) {
      throw new GpuError(
        'limit',
        `needs ${size} bytes but this device allows at most ${this.dev.limits.maxBufferSize} (maxBufferSize)`,
        `buffer "${desc.label}"`,
      );
    }
    const buffer = this.dev.createBuffer({ size, usage: desc.usage, label: desc.label, mappedAtCreation: !!desc.data });
    if (desc.data) {
      new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(desc.data.buffer, desc.data.byteOffset, desc.data.byteLength));
      buffer.unmap();
    }
    this.bufferGeneration.set(buffer, this.generation);
    return buffer;
  }

  /** A storage buffer holding `data` (readable back and writable by copies). */
  upload(data: ArrayBufferView, label: string): GPUBuffer {
    return this.createBuffer({
      size: data.byteLength,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      label,
      data,
    });
  }

  /** An empty storage buffer of `bytes` bytes. */
  storage(bytes: number, label: string): GPUBuffer {
    return this.createBuffer({
      size: bytes,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      label,
    });
  }

  /** Starts a recording: many dispatches, copies and reads, submitted once. */
  record(label: string, options: RecordOptions = {}): Recorder {
    this.assertUsable(label);
    return new Recorder(this, label, options);
  }

  /** Reads a buffer back to the CPU (one submit, one readback). */
  async read(buffer: GPUBuffer, byteOffset = 0, byteLength = buffer.size - byteOffset): Promise<ArrayBuffer> {
    const rec = this.record(`read ${buffer.label}`);
    const data = rec.read(buffer, byteOffset, byteLength);
    await rec.submit();
    return data;
  }

  /**
   * Runs `fn` inside validation, out-of-memory and internal error scopes; the first error
   * caught is thrown as a GpuError naming `where`.
   */
  async scoped<T>(where: string, fn: () => T | Promise<T>): Promise<T> {
    const dev = this.device;
    dev.pushErrorScope('internal');
    dev.pushErrorScope('out-of-memory');
    dev.pushErrorScope('validation');
    let result: T | undefined;
    let thrown: unknown = null;
    try {
      result = await fn();
    } catch (e) {
      thrown = e;
    }
    const popped = [await dev.popErrorScope(), await dev.popErrorScope(), await dev.popErrorScope()];
    if (thrown) throw thrown;
    const first = popped.find((e) => e !== null);
    if (first) throw fromScopeError(first, where);
    return result as T;
  }

  /** Throws GpuError('device-lost') if `buffer` was made by a device that has since been lost. */
  checkBuffer(buffer: GPUBuffer, where: string): void {
    const g = this.bufferGeneration.get(buffer);
    if (g !== undefined && g !== this.generation) {
      throw new GpuError(
        'device-lost',
        `buffer "${buffer.label}" belongs to device generation ${g}, which was lost; re-create it on the current device`,
        where,
      );
    }
  }

  /** Records a dispatch/submit/readback in the counters (used by Recorder). */
  count(kind: keyof RuntimeStats, n = 1): void {
    this.stats[kind] += n;
  }

  /** Re-creates adapter and device after a loss. Pipelines and buffers must be rebuilt by their owners. */
  async recover(): Promise<void> {
    if (this.state === 'disposed') throw new GpuError('usage', 'runtime was disposed', 'recover');
    if (this.state === 'ready') return;
    const adapter = await this.provider.requestAdapter(powerOpts(this.options));
    const device = await openDevice(adapter);
    this.pipelines.clear();
    this.pool.reset();
    this.adapterRef = adapter;
    this.dev = device;
    this.generation++;
    this.state = 'ready';
    this.lostReport = null;
    this.watch(device);
  }

  /** Destroys the device as a real loss would (for testing recovery paths, and the app's "simulate loss"). */
  simulateLoss(): void {
    this.assertUsable('simulateLoss');
    this.dev.destroy();
  }

  /**
   * dispose(), in order and awaited: waits for the work submitted so far to finish, destroys the
   * device, and waits until the device reports it is gone (each wait bounded by `timeoutMs`). A
   * worker that is terminated after it gives its result calls this first: a worker terminated
   * while its device was still tearing down was seen to linger in the page's worker list.
   */
  async release(timeoutMs = 5000): Promise<void> {
    if (this.state === 'disposed') return;
    const dev = this.dev;
    const bounded = (p: Promise<unknown>): Promise<unknown> =>
      Promise.race([p.catch(() => undefined), new Promise((r) => setTimeout(r, timeoutMs))]);
    if (this.state === 'ready') await bounded(dev.queue.onSubmittedWorkDone());
    this.dispose();
    await bounded(dev.lost);
  }

  dispose(): void {
    if (this.state === 'disposed') return;
    this.disposing = true;
    this.state = 'disposed';
    this.pool.trim();
    this.dev.destroy();
  }

  private assertUsable(where: string): void {
    if (this.state === 'lost') {
      const r = this.lostReport!;
      throw new GpuError('device-lost', `GPU device was lost (${r.reason}: ${r.message}); call recover()`, where);
    }
    if (this.state === 'disposed') throw new GpuError('usage', 'runtime was disposed', where);
  }

  private watch(device: GPUDevice): void {
    const generation = this.generation;
    void device.lost.then((info) => {
      if (this.disposing || device !== this.dev) return;
      this.state = 'lost';
      this.lostReport = { reason: String(info.reason), message: info.message || '(no message)', generation, at: new Date().toISOString() };
      for (const l of this.lostListeners) l(this.lostReport);
    });
    const onError = (ev: Event): void => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      const e = fromScopeError(err, 'uncaptured');
      this.uncapturedErrors.push(e);
      if (this.uncapturedErrors.length > 20) this.uncapturedErrors.shift();
      this.options.onUncapturedError?.(e);
    };
    if (typeof device.addEventListener === 'function') device.addEventListener('uncapturederror', onError);
    else (device as { onuncapturederror: unknown }).onuncapturederror = onError;
  }

  private async build<P>(spec: KernelSpec<P>, key: string): Promise<CompiledKernel<P>> {
    validateSpec(spec, this.dev.limits);
    const dev = this.dev;
    const generation = this.generation;
    const module = dev.createShaderModule({ label: spec.name, code: spec.wgsl });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      const text = errors.map((m) => `${spec.name}.wgsl:${m.lineNum}:${m.linePos}: ${m.message}`).join('\n');
      throw new GpuError('shader', `WGSL does not compile:\n${text}`, `kernel "${spec.name}"`);
    }
    const layout = dev.createBindGroupLayout({
      label: spec.name,
      entries: spec.bindings.map((b, i) => ({ binding: i, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.kind } })),
    });
    let pipeline: GPUComputePipeline;
    try {
      pipeline = await dev.createComputePipelineAsync({
        label: key,
        layout: dev.createPipelineLayout({ label: spec.name, bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: spec.entryPoint ?? 'main', constants: pipelineConstants(spec as KernelSpec<unknown>) },
      });
    } catch (e) {
      throw new GpuError('shader', `pipeline creation failed: ${errorText(e)}`, `kernel "${key}"`);
    }
    this.stats.pipelinesBuilt++;
    return { spec, key, pipeline, layout, generation };
  }
}

function powerOpts(o: RuntimeOptions): GPURequestAdapterOptions {
  return o.powerPreference ? { powerPreference: o.powerPreference } : {};
}

async function openDevice(adapter: GPUAdapter): Promise<GPUDevice> {
  try {
    return await adapter.requestDevice({
      label: 'coderl',
      requiredFeatures: requestedFeatures(adapter),
      requiredLimits: requiredLimits(adapter),
    });
  } catch (e) {
    throw new GpuError('unavailable', `requestDevice failed: ${errorText(e)}`, 'device');
  }
}

function validateSpec(spec: KernelSpec<unknown>, limits: GPUSupportedLimits): void {
  const where = `kernel "${spec.name}"`;
  const [x, y = 1, z = 1] = spec.workgroupSize;
  const dims: [number, number, keyof GPUSupportedLimits][] = [
    [x, limits.maxComputeWorkgroupSizeX, 'maxComputeWorkgroupSizeX'],
    [y, limits.maxComputeWorkgroupSizeY, 'maxComputeWorkgroupSizeY'],
    [z, limits.maxComputeWorkgroupSizeZ, 'maxComputeWorkgroupSizeZ'],
  ];
  for (const [v, max, name] of dims) {
    if (!Number.isInteger(v) || v < 1) throw new GpuError('usage', `workgroup size ${v} must be a positive integer`, where);
    if (v > max) throw new GpuError('limit', `workgroup size ${v} exceeds ${name}=${max}`, where);
  }
  if (x * y * z > limits.maxComputeInvocationsPerWorkgroup) {
    throw new GpuError(
      'limit',
      `workgroup ${x}x${y}x${z}=${x * y * z} invocations exceeds maxComputeInvocationsPerWorkgroup=${limits.maxComputeInvocationsPerWorkgroup}`,
      where,
    );
  }
  const names = new Set<string>();
  for (const b of spec.bindings) {
    if (names.has(b.name)) throw new GpuError('usage', `binding "${b.name}" is declared twice`, where);
    names.add(b.name);
  }
  const uniforms = spec.bindings.filter((b) => b.kind === 'uniform').length;
  if (uniforms > 1) throw new GpuError('usage', 'at most one uniform binding is supported', where);
  if (uniforms === 1 && !spec.uniforms) throw new GpuError('usage', 'has a uniform binding but no uniforms() function', where);
}
