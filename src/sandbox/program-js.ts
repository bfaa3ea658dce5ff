/**
 * A plain JavaScript program (program.ts) in a fresh QuickJS runtime, shaped like `node main.js`:
 * the source runs inside Node's CommonJS wrapper `(function (exports, require, module,
 * __filename, __dirname) {...})` (kept on the source's first line, so line numbers hold), then
 * the Promise jobs it queued run to the end.
 *
 * What the program gets of Node, and nothing more: `console.*` (log, info, debug to stdout;
 * error, warn, trace to stderr; values printed roughly as util.inspect does for plain data),
 * `process.stdout.write`, `process.stderr.write`, `process.exit(code)`, `process.exitCode`,
 * `process.argv`, an empty `process.env`, and `require('fs').readFileSync(0 | '/dev/stdin')`,
 * which returns the standard input as a string (a string's `.toString('utf8')` is itself, so
 * both usual idioms work). Any other module is Node's "Cannot find module" error; there are no
 * timers, no readline and no streams to listen to.
 *
 * The host functions (write, exit, exit code) are arguments of the boot function, never globals.
 * The limits are those of the test runner (quickjs.ts): QuickJS's memory and stack limits, a
 * ceiling on the WebAssembly heap's growth, and an interrupt handler at the deadline that the
 * program cannot catch; it also ends the run right after `process.exit`.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { OutputCapture, programResult, type ProgramJob, type ProgramResult } from './program';
import { withMemoryCeiling } from './wasm-cap';

/** Node's module wrapper, on the first line of the source so that line numbers stay the source's. */
const WRAP_HEAD = '(function (exports, require, module, __filename, __dirname) { ';

/** The boot function: given the host functions and stdin, installs console and process, returns [require, module, describe]. */
const BOOT = String.raw`(function (hostWrite, hostExit, hostCode, stdin) {
  'use strict';
  const inspect = (v, depth) => {
    if (typeof v === 'string') return depth === 0 ? v : "'" + v + "'";
    if (typeof v === 'bigint') return v + 'n';
    if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
    if (typeof v === 'function') return '[Function: ' + (v.name || '(anonymous)') + ']';
    if (v === null || typeof v !== 'object') return String(v);
    if (depth > 2) return Array.isArray(v) ? '[Array]' : '[Object]';
    try {
      if (Array.isArray(v)) return v.length ? '[ ' + v.map((x) => inspect(x, depth + 1)).join(', ') + ' ]' : '[]';
      const keys = Object.keys(v);
      return keys.length ? '{ ' + keys.map((k) => k + ': ' + inspect(v[k], depth + 1)).join(', ') + ' }' : '{}';
    } catch (e) {
      return '[object]';
    }
  };
  const line = (fd) => (...args) => void hostWrite(fd, args.map((a) => inspect(a, 0)).join(' ') + '\n');
  globalThis.console = { log: line(1), info: line(1), debug: line(1), error: line(2), warn: line(2), trace: line(2) };
  const stream = (fd) => ({ isTTY: false, write: (s) => (hostWrite(fd, typeof s === 'string' ? s : String(s)), true) });
  const EXIT = { toString: () => 'process.exit() was called' };
  let exitCode;
  const proc = {
    argv: ['node', '/main.js'], env: {}, platform: 'linux', stdout: stream(1), stderr: stream(2),
    exit(code) { hostExit(code === undefined ? (exitCode ?? 0) : Number(code)); throw EXIT; },
    get exitCode() { return exitCode; },
    set exitCode(c) { exitCode = c; hostCode(c === undefined ? 0 : Number(c)); },
  };
  globalThis.process = proc;
  const nodeError = (message, code) => Object.assign(new Error(message), { code });
  const fs = {
    readFileSync(path) {
      if (path === 0 || path === '/dev/stdin') return stdin;
      throw nodeError("ENOENT: no such file or directory, open '" + String(path) + "'", 'ENOENT');
    },
  };
  const require = (name) => {
    if (name === 'fs' || name === 'node:fs') return fs;
    throw nodeError("Cannot find module '" + String(name) + "'", 'MODULE_NOT_FOUND');
  };
  const describe = (e) => {
    if (e === EXIT) return '';
    try {
      if (e instanceof Error) return (typeof e.stack === 'string' && e.stack ? String(e) + '\n' + e.stack : String(e)) + '\n';
      return 'Uncaught ' + inspect(e, 1) + '\n';
    } catch (x) {
      return 'Uncaught exception (could not be described)\n';
    }
  };
  return [require, { exports: {} }, describe];
})`;

interface State {
  deadline: number;
  output: OutputCapture;
  /** set by process.exit */
  exited?: number;
  /** set by process.exitCode = n */
  code?: number;
  timedOut: boolean;
}

/** The engine's heap right after it was created, per module. */
const baselines = new WeakMap<QuickJSWASMModule, number>();
const HEAP_SLACK = 16 << 20;

function heapCeiling(mod: QuickJSWASMModule, memoryBytes: number): number {
  let base = baselines.get(mod);
  if (base === undefined) baselines.set(mod, (base = mod.getWasmMemory().buffer.byteLength));
  return base + memoryBytes + HEAP_SLACK;
}

export function runJsProgram(mod: QuickJSWASMModule, job: ProgramJob): ProgramResult {
  const t0 = performance.now();
  const { limits } = job;
  const st: State = { deadline: Date.now() + limits.timeoutMs, output: new OutputCapture(limits.outputChars), timedOut: false };
  const rt = mod.newRuntime();
  const owned: QuickJSHandle[] = [];
  const own = <T extends QuickJSHandle>(h: T): T => (owned.push(h), h);
  let vm: QuickJSContext | undefined;
  let threw: boolean;
  try {
    rt.setMemoryLimit(limits.memoryBytes);
    rt.setMaxStackSize(limits.stackBytes);
    rt.setInterruptHandler(() => {
      if (st.exited !== undefined || st.output.exceeded) return true;
      if (Date.now() <= st.deadline) return false;
      st.timedOut = true;
      return true;
    });
    vm = rt.newContext();
    const context = vm;
    threw = withMemoryCeiling(heapCeiling(mod, limits.memoryBytes), () => execute(context, rt, job, st, own));
  } finally {
    for (const h of owned.reverse()) if (h.alive) h.dispose();
    vm?.dispose();
    rt.dispose();
  }
  const exitCode = st.exited ?? (threw ? 1 : (st.code ?? 0));
  return programResult({ exitCode, timedOut: st.timedOut, output: st.output, limits, durationMs: performance.now() - t0 });
}

/** Boots the context, runs the program and its Promise jobs; true when an exception escaped. */
function execute(vm: QuickJSContext, rt: QuickJSRuntime, job: ProgramJob, st: State, own: <T extends QuickJSHandle>(h: T) => T): boolean {
  const write = own(
    vm.newFunction('write', (fd, text) => {
      if (st.exited !== undefined || vm.typeof(text) !== 'string') return;
      st.output.write(vm.getNumber(fd) === 2 ? 'stderr' : 'stdout', vm.getString(text));
    }),
  );
  const exit = own(vm.newFunction('exit', (code) => void (st.exited ??= exitStatus(vm.getNumber(code)))));
  const setCode = own(vm.newFunction('code', (code) => void (st.code = exitStatus(vm.getNumber(code)))));
  const boot = own(vm.unwrapResult(vm.evalCode(BOOT, 'boot.js', { type: 'global', strict: true })));
  const parts = own(vm.unwrapResult(vm.callFunction(boot, vm.undefined, write, exit, setCode, own(vm.newString(job.program.stdin)))));
  const [require, module, describe] = [0, 1, 2].map((i) => own(vm.getProp(parts, i)));
  const fail = (err: QuickJSHandle): true => {
    own(err);
    if (st.exited !== undefined || st.timedOut || st.output.exceeded) return true;
    st.deadline = Math.max(st.deadline, Date.now() + 250); // room to describe it
    const text = vm.callFunction(describe!, vm.undefined, err);
    if (text.error) own(text.error);
    else st.output.write('stderr', vm.typeof(own(text.value)) === 'string' ? vm.getString(text.value) : 'Uncaught exception\n');
    return true;
  };
  const fn = vm.evalCode(`${WRAP_HEAD}${job.completion}\n})`, 'main.js', { type: 'global' });
  if (fn.error) return fail(fn.error);
  const exports = own(vm.getProp(module!, 'exports'));
  const ran = vm.callFunction(own(fn.value), exports, exports, require!, module!, own(vm.newString('/main.js')), own(vm.newString('/')));
  if (ran.error) return fail(ran.error);
  own(ran.value);
  while (rt.hasPendingJob() && st.exited === undefined && !st.timedOut) {
    const jobs = rt.executePendingJobs();
    if (jobs.error) return fail(jobs.error);
  }
  return false;
}

/** A process exit status as the OS keeps it: the low 8 bits; not a number is 1. */
function exitStatus(n: number): number {
  return Number.isInteger(n) ? ((n % 256) + 256) % 256 : 1;
}
