/** Every failure the GPU runtime reports is a GpuError whose `kind` says what went wrong. */
export type GpuErrorKind =
  /** no WebGPU, or no adapter could be found */
  | 'unavailable'
  /** a WebGPU validation error (wrong binding, bad size, ...) */
  | 'validation'
  /** the device ran out of memory */
  | 'out-of-memory'
  /** an internal error of the implementation */
  | 'internal'
  /** WGSL failed to compile or a pipeline failed to build */
  | 'shader'
  /** a request exceeds a device limit */
  | 'limit'
  /** the device was lost; call recover() */
  | 'device-lost'
  /** the runtime was used wrongly (missing binding, unknown kernel, ...) */
  | 'usage';

export class GpuError extends Error {
  override readonly name = 'GpuError';

  constructor(
    readonly kind: GpuErrorKind,
    message: string,
    /** what the runtime was doing: a kernel, a buffer or a recording label */
    readonly where?: string,
  ) {
    super(where ? `${where}: ${message}` : message);
  }
}

/** Converts a popped GPUError (from an error scope) into a GpuError. */
export function fromScopeError(err: GPUError, where: string): GpuError {
  const ctor = (err as { constructor?: { name?: string } }).constructor?.name ?? '';
  const kind: GpuErrorKind = ctor.includes('OutOfMemory') ? 'out-of-memory' : ctor.includes('Internal') ? 'internal' : 'validation';
  return new GpuError(kind, err.message.trim(), where);
}
