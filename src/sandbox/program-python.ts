/**
 * A plain Python program (program.ts) in Pyodide, shaped like `python main.py < in`: the source
 * runs as `__main__`, `input()` and `sys.stdin` read the job's stdin, stdout and stderr are kept
 * apart, and the exit code is CPython's: 0 at the end, `sys.exit(n)`'s n (its low 8 bits; a
 * non-integer is printed to stderr and is 1), 1 after an uncaught exception (its traceback on
 * stderr). `os._exit(n)` ends the interpreter itself: the run gets n, and the worker is replaced.
 *
 * Defences, as for the tests (python.ts): Python cannot reach JavaScript (lockRealm), sockets
 * are gone (no-network.ts), the worker can load no module after Pyodide (node-seal.ts), the heap
 * has a ceiling (wasm-cap.ts), and the whole runtime (WebAssembly memory, files, descriptors) is
 * put back after every run (fresh-runtime.ts). An audit hook names network and process attempts
 * (PermissionError, as a sandboxed host would give) and refuses ctypes. Unlike the test harness
 * nothing here guards counters, so frames and tracebacks stay available to honest programs.
 * Time: the pool's interrupt word raises KeyboardInterrupt at the deadline; a program that
 * catches it and finishes late is still a timeout (program.ts compares the time taken).
 */
import { FreshRuntime } from './fresh-runtime';
import { removeSockets } from './no-network';
import { OutputCapture, programResult, type ProgramJob, type ProgramResult } from './program';
import { lockRealm, type LoadPyodide, type PyodideLike } from './python';
import { withMemoryCeiling } from './wasm-cap';

interface ProgramPyodide extends PyodideLike {
  setStdin(o: { error: boolean } | { read(buffer: Uint8Array): number; isatty?: boolean }): void;
}

/** The harness: an audit hook, then `__coderl_program(source) -> exit code`, in a namespace no module refers to. */
const PY_PROGRAM = String.raw`
import builtins as _builtins, sys as _sys, traceback as _traceback
for _m in ('math', 're', 'collections', 'itertools', 'functools', 'heapq', 'bisect', 'string', 'io', 'json',
           'statistics', 'fractions', 'decimal', 'random', 'copy', 'typing', 'datetime', 'operator'):
    __import__(_m)

def _make_hook():
    network = frozenset(('socket.__new__', 'socket.connect', 'socket.bind', 'socket.sendto', 'socket.sendmsg',
                         'socket.getaddrinfo', 'socket.gethostbyname', 'socket.gethostbyaddr', 'socket.getnameinfo',
                         'urllib.Request', 'http.client.connect', 'ftplib.connect', 'smtplib.connect', 'webbrowser.open'))
    process = frozenset(('os.system', 'os.exec', 'os.spawn', 'os.posix_spawn', 'os.fork', 'os.forkpty', 'os.kill',
                         'os.killpg', 'subprocess.Popen', 'pty.spawn', 'os.startfile'))
    banned = frozenset(('ctypes', '_ctypes'))
    def hook(event, args):
        if event in network:
            raise PermissionError(13, 'sandbox: the network is not reachable (' + event + ')')
        if event in process:
            raise PermissionError(13, 'sandbox: starting a process is not allowed (' + event + ')')
        if (event == 'import' and len(args) > 0 and args[0] in banned) or event[:7] == 'ctypes.':
            raise ImportError('sandbox: ctypes is not available')
    return hook

def _status(code):
    if code is None:
        return 0
    if type(code) is int or type(code) is bool:
        return int(code) & 0xff
    try:
        print(code, file=_sys.stderr)
    except BaseException:
        pass
    return 1

def _flush():
    for s in (_sys.stdout, _sys.stderr, _sys.__stdout__, _sys.__stderr__):
        try:
            s.flush()
        except BaseException:
            pass

def __coderl_program(source):
    try:
        code = compile(source, 'main.py', 'exec')
    except (SyntaxError, ValueError) as e:
        _traceback.print_exception(e, limit=0)
        _flush()
        return 1
    status = 0
    try:
        exec(code, {'__name__': '__main__', '__builtins__': _builtins, '__file__': 'main.py'})
    except SystemExit as e:
        status = _status(e.code)
    except BaseException as e:
        _traceback.print_exception(e)
        status = 130 if isinstance(e, KeyboardInterrupt) else 1
    _flush()
    return status

_sys.addaudithook(_make_hook())
del _m
`;

const BOOT = "lambda src: (lambda ns: (exec(src, ns), ns['__coderl_program'])[1])({'__name__': '__coderl_program__'})";

/** A trusted program run a few times before the baseline, so every run starts from a warm interpreter. */
const WARM_UP = { runs: 4, code: 'import sys\nn = int(input())\nprint(sum(range(n)), file=sys.stdout)\n', stdin: '10\n' };

const HEAP_RECYCLE_BYTES = 1 << 30;
const INTERRUPT_SLACK_MS = 100;

export class PythonProgramRunner {
  /** true once the interpreter has exited or crashed; the worker must be replaced */
  dead = false;
  private output = new OutputCapture(0);
  private stdin = new Uint8Array(0);
  private stdinAt = 0;
  private readonly decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  private fresh: FreshRuntime | undefined;
  private interrupt: Int32Array | undefined;

  private constructor(
    private readonly py: ProgramPyodide,
    private readonly runFn: (source: string) => number,
  ) {}

  static async create(load: LoadPyodide, interrupt?: SharedArrayBuffer): Promise<PythonProgramRunner> {
    const py = (await load({ jsglobals: Object.create(null) as object, stdout: () => {}, stderr: () => {} })) as ProgramPyodide;
    const boot = py.runPython(BOOT) as (src: string) => (source: string) => number;
    const runner = new PythonProgramRunner(py, boot(PY_PROGRAM));
    (boot as unknown as { destroy?: () => void }).destroy?.();
    py.setStdout({ write: (b) => runner.write('stdout', b) });
    py.setStderr({ write: (b) => runner.write('stderr', b) });
    py.setStdin({ read: (b) => runner.read(b), isatty: false });
    if (interrupt) {
      runner.interrupt = new Int32Array(interrupt);
      Atomics.store(runner.interrupt, 0, 0); // a deadline that passed during this worker's earlier JavaScript run
      py.setInterruptBuffer(runner.interrupt);
    }
    lockRealm(py);
    removeSockets(py._module);
    for (let i = 0; i < WARM_UP.runs; i++) runner.runSource(WARM_UP.code, WARM_UP.stdin, 1 << 20);
    runner.fresh = FreshRuntime.take(py._module);
    return runner;
  }

  private write(stream: 'stdout' | 'stderr', buf: Uint8Array): number {
    if (!this.output.write(stream, this.decoders[stream].decode(buf, { stream: true }))) throw new Error('output limit exceeded');
    return buf.length;
  }

  private read(buf: Uint8Array): number {
    const n = Math.min(buf.length, this.stdin.length - this.stdinAt);
    buf.set(this.stdin.subarray(this.stdinAt, this.stdinAt + n));
    this.stdinAt += n;
    return n;
  }

  /** Runs `source` with `stdin`; the exit code (an exit of the interpreter itself marks the runner dead). */
  private runSource(source: string, stdin: string, outputChars: number): number {
    this.output = new OutputCapture(outputChars);
    this.stdin = new TextEncoder().encode(stdin);
    this.stdinAt = 0;
    try {
      return this.runFn(source);
    } catch (e) {
      this.dead = true;
      const status = (e as { status?: unknown }).status; // Emscripten's ExitStatus: os._exit(n)
      if (typeof status === 'number') return status & 0xff;
      this.output.write('stderr', `\nthe Python interpreter failed: ${String(e).split('\n').slice(-3).join(' ').slice(0, 500)}\n`);
      return 1;
    }
  }

  /** Runs one job; `recycle` says the worker should be replaced afterwards. */
  run(job: ProgramJob): { result: ProgramResult; recycle: boolean } {
    const t0 = performance.now();
    const { limits } = job;
    if (this.interrupt) Atomics.store(this.interrupt, 0, 0); // a signal meant for an earlier run
    this.fresh?.startRun(limits.pythonMemoryBytes);
    const heap = this.py._module.HEAPU8.length;
    const exitCode = withMemoryCeiling(heap + limits.pythonMemoryBytes, () =>
      this.runSource(job.completion, job.program.stdin, limits.outputChars),
    );
    const durationMs = performance.now() - t0;
    // KeyboardInterrupt escaped near the deadline: the pool's interrupt (its timer starts when it
    // hears `started`, a moment before t0), not one the program raised itself
    const timedOut = exitCode === 130 && durationMs >= limits.timeoutMs - INTERRUPT_SLACK_MS;
    this.decoders.stdout = new TextDecoder();
    this.decoders.stderr = new TextDecoder();
    const recycle = this.dead || !this.restore() || this.py._module.HEAPU8.length > HEAP_RECYCLE_BYTES;
    return { result: programResult({ exitCode, timedOut, output: this.output, limits, durationMs }), recycle };
  }

  private restore(): boolean {
    try {
      this.fresh?.restore();
      return true;
    } catch {
      this.dead = true;
      return false;
    }
  }
}
