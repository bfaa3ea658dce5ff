/**
 * The Node sandbox worker's last door to the host, closed once Pyodide has loaded. Emscripten's
 * JavaScript keeps Node capabilities behind a `require` of its own, reached lazily from system
 * calls: `system()` (Python's `os.system`) runs `require("node:child_process").spawnSync(cmd,
 * {shell: true})`, a real shell command on the host, and SOCKFS `require("ws")` opens real
 * connections. After Pyodide is loaded nothing in the worker needs to load a module again, so
 * every CommonJS load (`Module._load`, which every `require` goes through, `createRequire`'s too)
 * is refused from then on, with Node's native-binding loaders, and Pyodide's global `require`
 * table (fs, crypto, ws, child_process) is removed. The harness's audit hook names such attempts
 * first (tampering); this is what holds if it did not.
 */
import Module from 'node:module';

const refuse = (what: string) =>
  function refused(): never {
    throw new Error(`sandbox: ${what} is not allowed in the sandbox worker`);
  };

/** Closes require() and native bindings in this worker thread (not the process: each worker has its own loader). */
export function sealNodeRequire(): void {
  const loader = Module as unknown as Record<string, unknown>;
  Object.defineProperty(loader, '_load', { value: refuse('loading a module'), writable: false, configurable: false });
  const proc = process as unknown as Record<string, unknown>;
  for (const name of ['binding', '_linkedBinding', 'dlopen'])
    Object.defineProperty(proc, name, { value: refuse(`process.${name}`), writable: false, configurable: false });
  delete (globalThis as Record<string, unknown>).require;
}
