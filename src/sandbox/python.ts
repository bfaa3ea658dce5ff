/**
 * The Python sandbox: HumanEval-style programs in Pyodide (CPython compiled to WebAssembly),
 * one interpreter per worker, loaded on the worker's first Python job.
 *
 * Isolation from the host. Pyodide lets Python reach JavaScript (the `js` and `pyodide_js`
 * modules, JsProxy objects); from there `fn.constructor.constructor('...')` would evaluate code
 * in the worker's realm and `import('node:fs')` would reach the host. So, before any untrusted
 * code runs: the `js` module is an empty object (jsglobals), `js` and `pyodide_js` are
 * unregistered and removed from sys.modules, the realm's code evaluators are poisoned (eval and
 * the Function, GeneratorFunction, AsyncFunction, AsyncGeneratorFunction constructors throw),
 * and the network globals are deleted. Stdin is closed. Output is counted here and cut at the
 * limit. Test grading and the in-interpreter defences are in python-harness.ts.
 *
 * No network: Emscripten's socket layer is removed at its root (no-network.ts), so no Python
 * module, whichever it is, can open a connection; the harness's audit hook also names the attempt
 * in the verdict. No state between runs: after the interpreter is ready a baseline of its whole
 * runtime (WebAssembly memory, file system, open descriptors) is taken, and it is put back after
 * every run (fresh-runtime.ts), so each program starts in the same interpreter, with the same
 * files, whatever the programs before it did.
 *
 * Limits. Time: at the deadline the pool stores SIGINT in a word shared with this worker
 * (Pyodide's interrupt buffer), Python raises KeyboardInterrupt and the harness ends the run as
 * a timeout; a program that swallows it is killed at the hard timeout and a new worker loads a
 * new interpreter. Memory: MemoryError is the
 * `memory` verdict; a worker whose WebAssembly heap has grown past 1 GiB is replaced after the run,
 * and so is one whose interpreter the harness could not restore to its state before the run.
 * A crash of the interpreter (os._exit, a fatal error) marks the runner dead: error verdict, and
 * the worker is replaced.
 */
import { assemble, describeLocation, siteTests, type Observed, type SiteInfo } from './outcome';
import type { RunJob } from './protocol';
import type { RunResult, SourceLocation, TestResult } from './result';
import { FreshRuntime, type EmscriptenModule } from './fresh-runtime';
import { removeSockets, type SocketModule } from './no-network';
import { PY_HARNESS } from './python-harness';
import { withMemoryCeiling } from './wasm-cap';

/** The part of Pyodide's API the runner uses. */
export interface PyodideLike {
  runPython(code: string): unknown;
  globals: { get(name: string): unknown };
  setStdout(o: { write(buf: Uint8Array): number }): void;
  setStderr(o: { write(buf: Uint8Array): number }): void;
  setStdin(o: { error: boolean }): void;
  unregisterJsModule(name: string): void;
  setInterruptBuffer(buffer: Int32Array): void;
  _module: EmscriptenModule & SocketModule;
}

/** A PyProxy the runner lets go of before the baseline is taken. */
const release = (proxy: unknown): void => (proxy as { destroy?: () => void }).destroy?.();

export type LoadPyodide = (config: {
  jsglobals: object;
  stdout?: (s: string) => void;
  stderr?: (s: string) => void;
}) => Promise<PyodideLike>;

const HEAP_RECYCLE_BYTES = 1 << 30;

/** The trusted program PythonRunner.warmUp runs (HumanEval-shaped: typing, a loop, asserts in check). */
const WARM_UP = {
  runs: 8,
  prompt: 'from typing import List\n\n\ndef warm_up(xs: List[int], k: int) -> List[int]:\n    """Every x in xs times k, sorted."""\n',
  completion: '    return sorted(x * k for x in xs)\n',
  tests:
    "def check(candidate):\n    assert candidate([3, 1, 2], 2) == [2, 4, 6]\n    assert candidate([], 5) == []\n    for n in range(3):\n        assert candidate([n], 1) == [n]\n    assert ' '.join(map(str, candidate([1], 3))) == '3'\n",
};

/** Execs the harness source in a fresh dict and returns its two entry points; binds nothing in __main__. */
const HARNESS_BOOT =
  "lambda src: (lambda ns: (exec(src, ns), (ns['__coderl_run'], ns['__coderl_sites']))[1])({'__name__': '__coderl_harness__'})";

const SITES_DEF =
  'def __coderl_sites(tests):\n    try:\n        return _json.dumps(_instrument(tests)[1])\n    except SyntaxError:\n        return "[]"\n';

const SCRUB_JS = `
import sys as _s
from pyodide.ffi import JsProxy as _J
for _n in ('js', 'pyodide_js'):
    _s.modules.pop(_n, None)
for _m in list(_s.modules.values()):
    _d = getattr(_m, '__dict__', None)
    if type(_d) is dict:
        for _k in [k for k, v in _d.items() if isinstance(v, _J)]:
            _d[_k] = None
del _s, _J, _n, _m, _d
`;

/** Removes every way back from Python to the realm's code evaluators and network. */
export function lockRealm(py: PyodideLike): void {
  for (const name of ['js', 'pyodide_js']) {
    try {
      py.unregisterJsModule(name);
    } catch {
      /* not registered */
    }
  }
  // drop the modules, and every JavaScript object Pyodide's own modules keep in their globals
  py.runPython(SCRUB_JS);
  const poison = function Function(): never {
    throw new TypeError('code evaluation is disabled in the sandbox');
  };
  const protos = [function () {}, function* () {}, async function () {}, async function* () {}].map(
    (f) => Object.getPrototypeOf(f) as object,
  );
  for (const p of protos) Object.defineProperty(p, 'constructor', { value: poison, writable: false, configurable: false });
  const g = globalThis as Record<string, unknown>;
  Object.defineProperty(g, 'eval', { value: poison, writable: false, configurable: false });
  for (const name of ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'importScripts', 'Worker', 'SharedWorker']) {
    try {
      delete g[name];
    } catch {
      /* not configurable: leave it */
    }
  }
}

interface HarnessOut {
  sites: SiteInfo[];
  evals: number[];
  fails: number[];
  siteErrors: Record<string, { message: string; where: { file: string; line: number } | null }>;
  programFailed: boolean;
  testsFinished: boolean;
  error?: { message: string; where?: { file: string; line: number } | null };
  stop?: Observed['stop'];
  /** the interpreter could not be restored to its state before the run */
  recycle?: boolean;
}

function mapWhere(where: { file: string; line: number } | null | undefined, promptNewlines: number): SourceLocation | undefined {
  if (!where) return undefined;
  if (where.file === 'tests.py') return { in: 'tests', line: where.line };
  return where.line > promptNewlines ? { in: 'completion', line: where.line - promptNewlines } : { in: 'prompt', line: where.line };
}

export class PythonRunner {
  /** true after the interpreter crashed; the worker must be replaced */
  dead = false;
  private output = '';
  private outputChars = 0;
  private outputExceeded = false;
  private decoder = new TextDecoder();

  private constructor(
    private readonly py: PyodideLike,
    private readonly runFn: (program: string, tests: string, entry: string) => string,
    private readonly sitesFn: (tests: string) => string,
  ) {}

  /** the runtime as it was before any program ran; put back after every run */
  private fresh: FreshRuntime | undefined;

  /** the pool's interrupt word: 2 means "deadline passed" (KeyboardInterrupt in Python) */
  private interrupt: Int32Array | undefined;

  static async create(load: LoadPyodide, interrupt?: SharedArrayBuffer): Promise<PythonRunner> {
    const py = await load({ jsglobals: Object.create(null) as object, stdout: () => {}, stderr: () => {} });
    // The harness lives in a private namespace that no module refers to: a program can
    // `import __main__`, so nothing it could patch (the tampering check, the counters' helpers)
    // may be resolved from there. Only JavaScript holds the two entry points.
    const boot = py.runPython(HARNESS_BOOT) as (src: string) => { get(i: number): unknown };
    const entry = boot(`${PY_HARNESS}\n${SITES_DEF}`);
    const runFn = entry.get(0) as (p: string, t: string, e: string) => string;
    const sitesFn = entry.get(1) as (t: string) => string;
    release(entry);
    release(boot);
    const runner = new PythonRunner(py, runFn, sitesFn);
    const write = (buf: Uint8Array): number => runner.write(buf);
    py.setStdout({ write });
    py.setStderr({ write });
    py.setStdin({ error: true });
    if (interrupt) {
      runner.interrupt = new Int32Array(interrupt);
      Atomics.store(runner.interrupt, 0, 0); // a deadline that passed during this worker's earlier JavaScript run
      py.setInterruptBuffer(runner.interrupt);
    }
    lockRealm(py);
    removeSockets(py._module);
    runner.warmUp();
    runner.fresh = FreshRuntime.take(py._module);
    return runner;
  }

  /**
   * Runs a trusted program through the harness a few times before the baseline is taken, so the
   * baseline holds an interpreter whose harness code is already specialised (CPython's adaptive
   * interpreter) and whose common paths are warm: every run starts from that state, where a cold
   * baseline would make each run pay the first run's costs again.
   */
  private warmUp(): void {
    for (let i = 0; i < WARM_UP.runs; i++) this.runFn(WARM_UP.prompt + WARM_UP.completion, WARM_UP.tests, 'warm_up');
  }

  private write(buf: Uint8Array): number {
    if (this.outputExceeded) throw new Error('output limit exceeded');
    const s = this.decoder.decode(buf, { stream: true });
    const room = this.outputChars - this.output.length;
    this.output += s.length > room ? s.slice(0, Math.max(0, room)) : s;
    if (s.length > room) {
      this.outputExceeded = true;
      throw new Error('output limit exceeded');
    }
    return buf.length;
  }

  /** Runs one job; `recycle` says the worker should be replaced afterwards. */
  run(job: RunJob, onStarted?: (tests: TestResult[]) => void): { result: RunResult; recycle: boolean } {
    const t0 = performance.now();
    const { task, completion, limits } = job;
    if (this.interrupt) Atomics.store(this.interrupt, 0, 0); // a signal meant for an earlier run
    const sites = JSON.parse(this.sitesFn(task.tests)) as SiteInfo[];
    onStarted?.(siteTests(sites, sites.length === 0));
    this.output = '';
    this.outputChars = limits.outputChars;
    this.outputExceeded = false;
    this.decoder = new TextDecoder();
    this.fresh?.startRun(limits.pythonMemoryBytes); // files count against the run's memory too
    const promptNewlines = (task.prompt.match(/\n/g) ?? []).length;
    let raw: HarnessOut;
    try {
      const text = withMemoryCeiling(this.heapBytes() + limits.pythonMemoryBytes, () =>
        this.runFn(task.prompt + completion, task.tests, task.entry_point),
      );
      raw = JSON.parse(text) as HarnessOut;
    } catch (e) {
      this.dead = true;
      const o: Observed = {
        sites,
        whole: sites.length === 0,
        evals: [],
        fails: [],
        current: -1,
        programFailed: true,
        testsFinished: false,
        error: {
          message: `the Python interpreter crashed: ${String(errorText(e) ?? e)
            .split('\n')
            .slice(-3)
            .join(' ')
            .slice(0, 500)}`,
        },
      };
      return { result: assemble(task.task_id, o, this.output, performance.now() - t0), recycle: true };
    }
    const o = this.observed(raw, promptNewlines);
    if (this.outputExceeded)
      o.stop ??= { verdict: 'output-limit', message: `the program printed more than ${limits.outputChars} characters` };
    const recycle = !this.restore() || raw.recycle === true || this.heapBytes() > HEAP_RECYCLE_BYTES;
    return { result: assemble(task.task_id, o, this.output, performance.now() - t0), recycle };
  }

  /** Puts the runtime back as it was before any program ran; false when that failed (the worker is then replaced). */
  private restore(): boolean {
    try {
      this.fresh?.restore();
      return true;
    } catch {
      this.dead = true;
      return false;
    }
  }

  private heapBytes(): number {
    return this.py._module.HEAPU8.length;
  }

  private observed(raw: HarnessOut, promptNewlines: number): Observed {
    const loc = (w: { file: string; line: number } | null | undefined) => mapWhere(w, promptNewlines);
    const siteErrors = raw.sites.map((_, i) => {
      const e = raw.siteErrors[String(i)];
      if (!e) return undefined;
      const location = loc(e.where);
      return { message: e.message + describeLocation(location), ...(location ? { location } : {}) };
    });
    const o: Observed = {
      sites: raw.sites,
      whole: raw.sites.length === 0,
      evals: raw.evals,
      fails: raw.fails,
      current: -1,
      siteErrors,
      programFailed: raw.programFailed,
      testsFinished: raw.testsFinished,
    };
    if (raw.error) {
      const location = loc(raw.error.where);
      o.error = { message: raw.error.message + describeLocation(location), ...(location ? { location } : {}) };
    }
    if (raw.stop) o.stop = raw.stop;
    return o;
  }
}

import { errorText } from '../util/errors';
