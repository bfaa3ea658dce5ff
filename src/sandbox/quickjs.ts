/**
 * The JavaScript sandbox: one program (prompt + completion) and its tests in a fresh QuickJS
 * runtime (quickjs-emscripten, a separate WebAssembly JavaScript engine).
 *
 * DESIGN. The threat is the program itself: it may try to make failing tests look passed.
 *
 * Isolation. QuickJS has no fetch, XHR, fs, process, timers or module loader; the context gets
 * only the standard built-ins plus a `console` made by the prelude. Nothing of the host is
 * exposed: the two host functions (output, tampering report) are arguments of the prelude and
 * live only in its closures, and the assertion recorders are arguments of the test wrapper.
 * Every run gets a new runtime: a memory limit (QuickJS's malloc limit, which in this build
 * counts allocations rather than bytes, so a ceiling on the WebAssembly heap's growth backs it:
 * wasm-cap.ts), an interpreter stack limit (small enough that QuickJS reports "stack overflow"
 * before the host's own stack runs out), and an interrupt handler that stops the run at the deadline or as soon as the host has
 * seen tampering or too much output (the interrupt cannot be caught by the program). Work left
 * queued after the tests (Promise jobs) never runs and is reported as tampering; there are no
 * timers. A worker-level hard timeout (pool.ts) backs up the deadline for C builtins that do not
 * check the interrupt.
 *
 * Results are recorded host-side only. The test code is rewritten (js-tests.ts) so each
 * `console.assert(E)` becomes `__coderl_a(__coderl_b(K), E)`; both are host functions passed as
 * parameters to the wrapper function around the tests, compiled before the program runs, so
 * the program cannot reach, replace or call them. The host computes E's truthiness from the
 * value's type tag (no program code runs), counts evaluations and failures per site, and the
 * verdict comes from those counters alone; printed text is never parsed, so printed "results"
 * mean nothing.
 *
 * The intrinsics the tests use are locked before the program runs (prelude.ts): every object
 * reachable from the built-ins, hidden intrinsics included, is frozen, and its writable
 * properties become accessors whose setter reports tampering; the reflective mutators report
 * tampering on built-ins too. So `console.assert = ...`, `JSON.stringify = ...`,
 * `Object.prototype.toJSON = ...`, `Array.prototype.map = ...` either are detected (verdict
 * `tampering`, the run stops) or fail silently (sloppy-mode assignment that adds a new property
 * to a frozen object) and change nothing. The wrapper also receives the original global
 * bindings as parameters, so `let JSON = fake` at the program's top level does not reach the
 * tests. The program and the tests are evaluated as separate scripts, so the program cannot
 * swallow the tests syntactically either. What fails silently at run time (adding a property to
 * a frozen built-in in sloppy mode, `delete` of one) is found by a static scan of the completion
 * (tamper-scan.ts) and also reported as tampering; aliased forms of it change nothing.
 *
 * Exceptions are described inside the VM by a prelude function that reads only string-typed
 * `name`/`message`/`stack` under try/catch (getters, Proxies, null and undefined are fine); the
 * host never calls dump() on a program value. Verdict priority: tampering / output-limit /
 * timeout (whichever stopped the run first), memory, error, failed, passed.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { ASSERT_FN, BEGIN_FN, findAssertSites, instrumentTests } from './js-tests';
import { assemble, describeLocation, locate, siteTests, type Observed } from './outcome';
import { PRELUDE } from './prelude';
import type { RunJob } from './protocol';
import type { RunResult, TestResult } from './result';
import { scanTampering } from './tamper-scan';
import { withMemoryCeiling } from './wasm-cap';

type StopCause = NonNullable<Observed['stop']>;

interface State {
  deadline: number;
  stop?: StopCause;
  output: string;
  outputChars: number;
}

function stopWith(st: State, verdict: StopCause['verdict'], message: string): void {
  st.stop ??= { verdict, message };
}

function truthy(vm: QuickJSContext, h: QuickJSHandle | undefined): boolean {
  if (!h) return false;
  switch (vm.typeof(h)) {
    case 'undefined':
      return false;
    case 'boolean':
      return vm.dump(h) === true; // a primitive: no program code runs
    case 'number': {
      const n = vm.getNumber(h);
      return n !== 0 && !Number.isNaN(n);
    }
    case 'string':
      return vm.getString(h) !== '';
    case 'bigint':
      return vm.getBigInt(h) !== 0n;
    case 'object':
      return !vm.sameValue(h, vm.null);
    default:
      return true; // symbol, function
  }
}

/** Runs the prelude; returns the harness handles (caller disposes them). */
function installHarness(vm: QuickJSContext, st: State, own: <T extends QuickJSHandle>(h: T) => T) {
  const hostLog = own(
    vm.newFunction('log', (h) => {
      if (vm.typeof(h) !== 'string') return;
      const s = vm.getString(h);
      const room = st.outputChars - st.output.length;
      st.output += s.length > room ? s.slice(0, Math.max(0, room)) : s;
      if (s.length > room) stopWith(st, 'output-limit', `the program printed more than ${st.outputChars} characters`);
    }),
  );
  const hostTamper = own(
    vm.newFunction('tamper', (h) => {
      stopWith(st, 'tampering', vm.typeof(h) === 'string' ? vm.getString(h).slice(0, 300) : 'tampering');
    }),
  );
  const prelude = own(vm.unwrapResult(vm.evalCode(PRELUDE, 'harness.js', { type: 'global', strict: true })));
  const limit = own(vm.newNumber(st.outputChars));
  const harness = own(vm.unwrapResult(vm.callFunction(prelude, vm.undefined, hostLog, hostTamper, limit)));
  const namesH = own(vm.getProp(harness, 'names'));
  const valuesH = own(vm.getProp(harness, 'values'));
  const n = vm.getNumber(own(vm.getProp(namesH, 'length')));
  const names: string[] = [];
  const values: QuickJSHandle[] = [];
  for (let i = 0; i < n; i++) {
    names.push(vm.getString(own(vm.getProp(namesH, i))));
    values.push(own(vm.getProp(valuesH, i)));
  }
  return { names, values, describe: own(vm.getProp(harness, 'describe')) };
}

/** Describes a thrown value inside the VM; never runs dump() on it. */
function describeError(
  vm: QuickJSContext,
  rt: QuickJSRuntime,
  st: State,
  job: RunJob,
  describe: QuickJSHandle,
  err: QuickJSHandle,
): Observed['error'] {
  if (st.stop) return { message: st.stop.message };
  st.deadline = Math.max(st.deadline, Date.now() + 250);
  rt.setMemoryLimit(job.limits.memoryBytes + (1 << 20)); // room to describe an out-of-memory error
  const r = vm.callFunction(describe, vm.undefined, err);
  let text = 'Uncaught exception (could not be described)\u0001';
  if (r.error) r.error.dispose();
  else {
    if (vm.typeof(r.value) === 'string') text = vm.getString(r.value);
    r.value.dispose();
  }
  const [message = '', stack = ''] = text.split('\u0001');
  const location = locate(stack, (job.task.prompt.match(/\n/g) ?? []).length);
  return location ? { message: message + describeLocation(location), location } : { message };
}

/** The engine's heap right after it was created, per module. */
const baselines = new WeakMap<QuickJSWASMModule, number>();
const HEAP_SLACK = 16 << 20;

/** Where the module's WebAssembly heap must stop growing during a run (see wasm-cap.ts). */
function heapCeiling(mod: QuickJSWASMModule, memoryBytes: number): number {
  let base = baselines.get(mod);
  if (base === undefined) baselines.set(mod, (base = mod.getWasmMemory().buffer.byteLength));
  return base + memoryBytes + HEAP_SLACK;
}

function classify(st: State, o: Observed): void {
  if (!st.stop && o.error && /^InternalError: out of memory/.test(o.error.message)) {
    st.stop = { verdict: 'memory', message: `the program ran out of memory (limit exceeded)` };
  }
}

export function runJavaScript(mod: QuickJSWASMModule, job: RunJob, onStarted?: (tests: TestResult[]) => void): RunResult {
  const t0 = performance.now();
  const { task, limits } = job;
  const found = findAssertSites(task.tests);
  const o: Observed = {
    sites: found.map((s) => ({ line: s.line, source: s.source })),
    whole: found.length === 0,
    evals: found.map(() => 0),
    fails: found.map(() => 0),
    current: -1,
    programFailed: false,
    testsFinished: false,
  };
  onStarted?.(siteTests(o.sites, o.whole));
  const seen = scanTampering(job.completion);
  if (seen) {
    o.stop = {
      verdict: 'tampering',
      message: `the completion writes to a built-in: ${seen.text}${describeLocation({ in: 'completion', line: seen.line })}`,
    };
    return assemble(task.task_id, o, '', performance.now() - t0);
  }
  const st: State = { deadline: Date.now() + limits.timeoutMs, output: '', outputChars: limits.outputChars };
  const rt = mod.newRuntime();
  const owned: QuickJSHandle[] = [];
  const own = <T extends QuickJSHandle>(h: T): T => (owned.push(h), h);
  let vm: QuickJSContext | undefined;
  try {
    rt.setMemoryLimit(limits.memoryBytes);
    rt.setMaxStackSize(limits.stackBytes);
    rt.setInterruptHandler(() => {
      if (st.stop) return true;
      if (Date.now() <= st.deadline) return false;
      stopWith(st, 'timeout', `the run exceeded ${limits.timeoutMs} ms`);
      return true;
    });
    vm = rt.newContext();
    const context = vm;
    withMemoryCeiling(heapCeiling(mod, limits.memoryBytes), () =>
      execute(context, rt, job, st, o, instrumentTests(task.tests, found), own),
    );
    if (!st.stop && rt.hasPendingJob()) stopWith(st, 'tampering', 'work was left scheduled to run after the tests (Promise jobs)');
    classify(st, o);
    if (st.stop) o.stop = st.stop;
    return assemble(task.task_id, o, st.output, performance.now() - t0);
  } finally {
    for (const h of owned.reverse()) if (h.alive) h.dispose();
    vm?.dispose();
    rt.dispose();
  }
}

function execute(
  vm: QuickJSContext,
  rt: QuickJSRuntime,
  job: RunJob,
  st: State,
  o: Observed,
  instrumented: string,
  own: <T extends QuickJSHandle>(h: T) => T,
): void {
  const { names, values, describe } = installHarness(vm, st, own);
  const valid = (k: number): boolean => Number.isInteger(k) && k >= 0 && k < o.sites.length;
  const begin = own(
    vm.newFunction(BEGIN_FN, (kh) => {
      const k = vm.getNumber(kh);
      if (valid(k)) o.current = k;
      return vm.newNumber(k);
    }),
  );
  const record = own(
    vm.newFunction(ASSERT_FN, (kh, vh) => {
      const k = vm.getNumber(kh);
      if (!valid(k)) return;
      o.evals[k] = (o.evals[k] ?? 0) + 1;
      if (!truthy(vm, vh)) o.fails[k] = (o.fails[k] ?? 0) + 1;
      o.current = -1;
    }),
  );
  const wrapperSrc = `(function (${ASSERT_FN}, ${BEGIN_FN}, ${names.join(', ')}) { (function () {${instrumented}\n})(); })`;
  const wrapper = vm.evalCode(wrapperSrc, 'tests.js', { type: 'global' });
  if (wrapper.error) {
    o.error = { message: `the test code does not compile: ${describeError(vm, rt, st, job, describe, own(wrapper.error))?.message}` };
    return;
  }
  own(wrapper.value);
  const program = vm.evalCode(job.task.prompt + job.completion, 'program.js', { type: 'global' });
  if (program.error) {
    o.programFailed = true;
    o.error = describeError(vm, rt, st, job, describe, own(program.error));
    return;
  }
  own(program.value);
  if (st.stop) return;
  const ran = vm.callFunction(wrapper.value, vm.undefined, record, begin, ...values);
  if (ran.error) {
    o.error = describeError(vm, rt, st, job, describe, own(ran.error));
    if (o.whole) o.current = -1;
    return;
  }
  own(ran.value);
  o.testsFinished = true;
}
