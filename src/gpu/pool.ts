/**
 * A pool of GPU buffers bucketed by usage and size class (powers of two from 256 bytes), so
 * per-step temporaries, uniform blocks and staging buffers are reused instead of re-created.
 */
export interface PoolStats {
  /** buffers created by the pool, still alive */
  live: number;
  /** bytes held by live buffers */
  liveBytes: number;
  /** buffers waiting in the free lists */
  free: number;
  /** acquisitions served from the free lists */
  hits: number;
  /** acquisitions that created a buffer */
  misses: number;
}

export function sizeClass(bytes: number): number {
  return Math.max(256, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))));
}

export class BufferPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly owned = new Set<GPUBuffer>();
  private hits = 0;
  private misses = 0;
  private liveBytes = 0;

  constructor(private readonly create: (size: number, usage: GPUBufferUsageFlags, label: string) => GPUBuffer) {}

  /** A buffer of at least `bytes` bytes with exactly `usage`. Give it back with release(). */
  acquire(bytes: number, usage: GPUBufferUsageFlags, label = 'pooled'): GPUBuffer {
    const size = sizeClass(bytes);
    const list = this.free.get(`${usage}:${size}`);
    const reused = list?.pop();
    if (reused) {
      this.hits++;
      return reused;
    }
    this.misses++;
    const buffer = this.create(size, usage, `${label} (pool ${size} B)`);
    this.owned.add(buffer);
    this.liveBytes += size;
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    if (!this.owned.has(buffer)) throw new Error(`BufferPool.release: buffer "${buffer.label}" is not from this pool`);
    const key = `${buffer.usage}:${buffer.size}`;
    const list = this.free.get(key) ?? [];
    if (list.includes(buffer)) throw new Error(`BufferPool.release: buffer "${buffer.label}" released twice`);
    list.push(buffer);
    this.free.set(key, list);
  }

  /** Destroys every free buffer (live ones stay with their holders). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const b of list) {
        this.owned.delete(b);
        this.liveBytes -= b.size;
        b.destroy();
      }
    }
    this.free.clear();
  }

  /** Forgets everything without touching the GPU (after device loss the buffers are gone). */
  reset(): void {
    this.free.clear();
    this.owned.clear();
    this.liveBytes = 0;
  }

  stats(): PoolStats {
    let free = 0;
    for (const l of this.free.values()) free += l.length;
    return { live: this.owned.size, liveBytes: this.liveBytes, free, hits: this.hits, misses: this.misses };
  }
}
