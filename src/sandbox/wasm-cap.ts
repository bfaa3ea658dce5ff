/**
 * A ceiling on WebAssembly memory growth while untrusted code runs. QuickJS's own malloc limit
 * counts little more than the number of allocations in the emscripten build (malloc_usable_size
 * is unavailable there), so one `new ArrayBuffer(8 << 20)` after another would grow the engine's
 * heap toward 2 GiB; Pyodide's heap has no limit of its own. Both grow through
 * `WebAssembly.Memory.prototype.grow`, so in the worker's realm that method is wrapped once:
 * while a ceiling is set, growth past it throws, emscripten's allocator returns NULL, and the
 * engine raises its out-of-memory error (QuickJS InternalError, Python MemoryError).
 * A worker runs one job at a time, so one ceiling at a time is enough.
 */
let ceiling: number | undefined;
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  const proto = WebAssembly.Memory.prototype;
  const grow = proto.grow;
  Object.defineProperty(proto, 'grow', {
    value: function (this: WebAssembly.Memory, pages: number): number {
      if (ceiling !== undefined && this.buffer.byteLength + pages * 65536 > ceiling) throw new RangeError('sandbox: memory limit');
      return grow.call(this, pages);
    },
    writable: false,
    configurable: false,
  });
}

/** Runs `fn` with WebAssembly memories unable to grow past `bytes`. */
export function withMemoryCeiling<T>(bytes: number, fn: () => T): T {
  install();
  const previous = ceiling;
  ceiling = bytes;
  try {
    return fn();
  } finally {
    ceiling = previous;
  }
}
