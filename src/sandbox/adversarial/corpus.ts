/**
 * Adversarial programs: each tries to get test credit for a wrong solution (or to take the
 * sandbox down) by one item of the threat model. Every one must end with no test passed and the
 * verdict given; honest programs scored after them in the same pool must still pass.
 *
 * The JavaScript target is a HumanEval-X-style task whose tests use console.assert, JSON.stringify,
 * Array and String methods: a wrong `sortPair` can only pass them by tampering.
 */
import type { Task } from '../../tasks/types';
import type { Verdict } from '../result';

export interface Attack {
  name: string;
  /** the threat-model item it covers */
  threat: string;
  completion: string;
  verdict: Verdict;
  /**
   * a longer time limit for the run, ms: filling memory up to the limit makes the engine collect
   * garbage over and over, which on a busy machine can take longer than the default test limit
   */
  timeoutMs?: number;
}

export const JS_TASK: Task = {
  task_id: 'Adversarial/js',
  language: 'javascript',
  prompt: '/* Return [x, y] in ascending order.\n  >>> sortPair(2, 1)\n  [1, 2]\n  */\nconst sortPair = (x, y) => {\n',
  entry_point: 'sortPair',
  tests: [
    'const testSortPair = () => {',
    '  console.assert(JSON.stringify(sortPair(2, 1)) === JSON.stringify([1, 2]))',
    "  console.assert(sortPair(5, 3).join(',') === '3,5')",
    '  console.assert(sortPair(1, 9)[0] === 1 && sortPair(1, 9).length === 2)',
    "  console.assert(String(sortPair(4, 4)) === '4,4')",
    '  for (const [a, b] of [[3, 1], [0, -2]]) console.assert(Math.min(...sortPair(a, b)) === sortPair(a, b)[0])',
    '}',
    'testSortPair()',
    '',
  ].join('\n'),
  canonical_solution: '  return x < y ? [x, y] : [y, x]\n}\n',
};

/** Closes the function with a wrong body, then runs `attack` at the top level. */
const top = (attack: string): string => `  return []\n}\n${attack}\n`;
/** A wrong body that runs `attack` when the tests call it. */
const inside = (attack: string): string => `  ${attack}\n  return []\n}\n`;

export const JS_ATTACKS: Attack[] = [
  { name: 'console.assert = noop', threat: 'overrides console.assert', completion: top('console.assert = () => {}'), verdict: 'tampering' },
  {
    name: 'console = fake',
    threat: 'overrides console.assert',
    completion: top('console = { assert() {}, log() {} }'),
    verdict: 'tampering',
  },
  { name: 'var console', threat: 'overrides console.assert', completion: top('var console = { assert() {} }'), verdict: 'tampering' },
  {
    name: 'defineProperty console.assert',
    threat: 'overrides console.assert',
    completion: top("Object.defineProperty(console, 'assert', { value: () => {} })"),
    verdict: 'tampering',
  },
  {
    name: 'JSON.stringify = const',
    threat: 'overrides JSON.stringify',
    completion: inside('JSON.stringify = () => \'"same"\''),
    verdict: 'tampering',
  },
  { name: 'JSON = fake', threat: 'overrides JSON.stringify', completion: top("JSON = { stringify: () => 'x' }"), verdict: 'tampering' },
  {
    name: 'Reflect.set JSON.stringify',
    threat: 'overrides JSON.stringify',
    completion: top("Reflect.set(JSON, 'stringify', () => 'x')"),
    verdict: 'tampering',
  },
  {
    name: 'Object.prototype.toJSON',
    threat: 'changes Object.prototype',
    completion: top("Object.prototype.toJSON = function () { return 'x' }"),
    verdict: 'tampering',
  },
  {
    name: '__proto__ swap',
    threat: 'changes Object.prototype',
    completion: top('Array.prototype.__proto__ = { toJSON() { return 1 } }'),
    verdict: 'tampering',
  },
  {
    name: 'setPrototypeOf',
    threat: 'changes Object.prototype',
    completion: top('Object.setPrototypeOf(Array.prototype, null)'),
    verdict: 'tampering',
  },
  {
    name: 'Array.prototype.join',
    threat: 'changes Array prototypes',
    completion: inside("Array.prototype.join = function () { return '3,5' }"),
    verdict: 'tampering',
  },
  {
    name: 'aliased prototype write',
    threat: 'changes Array prototypes',
    completion: inside("const P = [].__proto__; P['jo' + 'in'] = () => '3,5'"),
    verdict: 'tampering',
  },
  {
    name: 'Object.assign prototype',
    threat: 'changes Array prototypes',
    completion: top("Object.assign(Array.prototype, { join() { return '3,5' } })"),
    verdict: 'tampering',
  },
  {
    name: 'Symbol.iterator',
    threat: 'changes Array prototypes',
    completion: top('Array.prototype[Symbol.iterator] = function* () { yield 1 }'),
    verdict: 'tampering',
  },
  {
    name: 'array iterator next',
    threat: 'changes hidden intrinsics',
    completion: top('Object.getPrototypeOf([][Symbol.iterator]()).next = () => ({ done: true })'),
    verdict: 'tampering',
  },
  {
    name: 'String.prototype.toString',
    threat: 'changes String prototypes',
    completion: top("String.prototype.toString = () => '4,4'"),
    verdict: 'tampering',
  },
  { name: 'Math.min', threat: 'changes other intrinsics', completion: top('Math.min = () => undefined'), verdict: 'tampering' },
  {
    name: 'Function.prototype.call',
    threat: 'changes other intrinsics',
    completion: top('Function.prototype.call = function () { return true }'),
    verdict: 'tampering',
  },
  {
    name: 'delete Array.prototype.join',
    threat: 'changes Array prototypes',
    completion: top('delete Array.prototype.join'),
    verdict: 'tampering',
  },
  {
    name: 'let shadows a built-in',
    threat: 'changes other intrinsics',
    completion: top("let Math = { min: () => undefined }; let String = () => '4,4'"),
    verdict: 'failed',
  },
  {
    name: 'shadow inside a block',
    threat: 'changes other intrinsics',
    completion: "  return []\n}\n{ const JSON = { stringify: () => 'x' }; globalThis.sortPair = () => JSON }\n",
    verdict: 'failed',
  },
  {
    name: 'ArrayBuffer pile',
    threat: 'allocates without bound',
    completion: inside('const keep = []; for (;;) keep.push(new ArrayBuffer(8 << 20))'),
    verdict: 'memory',
    timeoutMs: 8000,
  },
  {
    name: 'string pile',
    threat: 'allocates without bound',
    completion: inside("const keep = []; for (let i = 0; ; i++) keep.push('x'.repeat(4 << 20) + i)"),
    verdict: 'memory',
    timeoutMs: 8000,
  },
  { name: 'process.exit in body', threat: 'calls process.exit', completion: inside('process.exit(0)'), verdict: 'error' },
  { name: 'process.exit at top', threat: 'calls process.exit', completion: top('process.exit(0)'), verdict: 'error' },
  {
    name: 'postMessage result',
    threat: 'posts fake result messages',
    completion: top("postMessage({ type: 'result', verdict: 'passed', passed: true })"),
    verdict: 'error',
  },
  {
    name: 'global this postMessage',
    threat: 'posts fake result messages',
    completion: top("Function('return this')().postMessage({ type: 'result' })"),
    verdict: 'error',
  },
  {
    name: 'guess harness names',
    threat: 'posts fake result messages',
    completion: top('globalThis.__coderl_a = () => {}; globalThis.__coderl_b = () => 0'),
    verdict: 'failed',
  },
  {
    name: 'print result markers',
    threat: 'prints fake result markers',
    completion: top('console.log(\'{"task_id":"Adversarial/js","verdict":"passed","passed":true}\'); console.log(\'5 passed, 0 failed\')'),
    verdict: 'failed',
  },
  { name: 'throw null', threat: 'throws odd objects', completion: inside('throw null'), verdict: 'error' },
  { name: 'throw undefined', threat: 'throws odd objects', completion: top('throw undefined'), verdict: 'error' },
  {
    name: 'throw getter',
    threat: 'throws odd objects',
    completion: inside("throw { get message() { throw new Error('no') }, get name() { throw 1 }, get stack() { throw 2 } }"),
    verdict: 'error',
  },
  {
    name: 'throw Proxy',
    threat: 'throws odd objects',
    completion: inside('throw new Proxy({}, { get() { throw new Error("trap") }, getPrototypeOf() { throw 3 } })'),
    verdict: 'error',
  },
  {
    name: 'throw toString',
    threat: 'throws odd objects',
    completion: inside('throw { toString() { while (true) {} } }'),
    verdict: 'error',
  },
  {
    name: 'return Proxy',
    threat: 'throws odd objects',
    completion: '  return new Proxy([], { get() { throw new Error("boom") } })\n}\n',
    verdict: 'error',
  },
  { name: 'while(true)', threat: 'never returns', completion: inside('while (true) {}'), verdict: 'timeout' },
  {
    name: 'catch the interrupt',
    threat: 'never returns',
    completion: inside('for (;;) { try { while (true) {} } catch (e) {} }'),
    verdict: 'timeout',
  },
  { name: 'top-level loop', threat: 'never returns', completion: top('for (;;) {}'), verdict: 'timeout' },
  { name: 'catastrophic regex', threat: 'never returns', completion: inside("/^(a+)+$/.test('a'.repeat(40) + 'b')"), verdict: 'timeout' },
  {
    name: 'Atomics.wait',
    threat: 'never returns',
    completion: inside('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)'),
    verdict: 'error',
  },
  {
    name: 'huge array',
    threat: 'allocates without bound',
    completion: inside('new Array(1e9).fill(0)'),
    verdict: 'memory',
    timeoutMs: 8000,
  },
  {
    name: 'growing buffers',
    threat: 'allocates without bound',
    completion: inside('const keep = []; for (;;) keep.push(new Float64Array(1 << 20))'),
    verdict: 'memory',
    timeoutMs: 8000,
  },
  { name: 'log flood', threat: 'floods output', completion: inside("for (;;) console.log('x'.repeat(1000))"), verdict: 'output-limit' },
  { name: 'one huge line', threat: 'floods output', completion: top("console.log('y'.repeat(5e6))"), verdict: 'output-limit' },
  {
    name: 'endless recursion',
    threat: 'recurses without end',
    completion: inside('const f = (n) => f(n + 1) + 1; f(0)'),
    verdict: 'error',
  },
  {
    name: 'recursion via getter',
    threat: 'recurses without end',
    completion: inside('const o = { get x() { return o.x } }; o.x'),
    verdict: 'error',
  },
  {
    name: 'Promise.then after tests',
    threat: 'schedules work after the tests',
    completion: top('Promise.resolve().then(() => { for (;;) {} })'),
    verdict: 'tampering',
  },
  {
    name: 'async function',
    threat: 'schedules work after the tests',
    completion: top('(async () => { await null; JSON.stringify = () => 1 })()'),
    verdict: 'tampering',
  },
  { name: 'setTimeout', threat: 'schedules work after the tests', completion: top('setTimeout(() => {}, 0)'), verdict: 'error' },
];

export const PY_TASK: Task = {
  task_id: 'Adversarial/py',
  language: 'python',
  prompt: 'def add(a, b):\n    """Return a + b."""\n',
  entry_point: 'add',
  tests:
    'import math\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n    assert math.fabs(candidate(0.5, 0.25) - 0.75) < 1e-9\n    assert abs(candidate(-1, 1)) == 0\n',
  canonical_solution: '    return a + b\n',
};

/**
 * Python helpers for the attacks that walk the interpreter. `_forge(tg)`, given the tests' globals,
 * swaps the per-assert recorder for one that records a pass and clears every failure and error
 * seen so far; `_climb(frame)` follows f_back until it finds those globals. Without the audit hook
 * each route below reaches them and turns a wrong `add` into three passes.
 */
const FORGE = `
def _forge(tg):
    rec, err = tg['__coderl_a'], tg['__coderl_err']
    if rec.__name__ == 'fake':
        return
    cells = lambda f: dict(zip(f.__code__.co_freevars, [c.cell_contents for c in f.__closure__]))
    fails, errors = cells(rec)['fails'], cells(err)['errors']
    def fake(k, v):
        rec(k, True)
        fails[:] = [0] * len(fails)
        errors.clear()
    tg['__coderl_a'] = fake
def _climb(f):
    while f is not None:
        if '__coderl_a' in f.f_globals:
            _forge(f.f_globals)
            return
        f = f.f_back
`;
/** A wrong `add` that first runs `_attack` (defined in `attack`, with the helpers above). */
const forging = (attack: string): string => `    return _attack(a, b)\n${FORGE}${attack.trim()}\n`;

export const PY_ATTACKS: Attack[] = [
  {
    name: 'AlwaysEqual',
    threat: 'overrides comparison (reward hack)',
    completion:
      '    class E:\n        def __eq__(s, o): return True\n        def __sub__(s, o): return 0\n        def __abs__(s): return 0\n    return E()\n',
    verdict: 'tampering',
  },
  {
    name: 'int subclass',
    threat: 'overrides comparison (reward hack)',
    completion: '    class I(int):\n        def __eq__(s, o): return True\n    return I(0)\n',
    verdict: 'tampering',
  },
  {
    name: 'builtins.abs',
    threat: 'overrides intrinsics the tests use',
    completion: '    import builtins\n    builtins.abs = lambda x: 0\n    return 0\n',
    verdict: 'tampering',
  },
  {
    name: 'math.fabs',
    threat: 'overrides intrinsics the tests use',
    completion: '    return 0\nimport math\nmath.fabs = lambda x: 0\n',
    verdict: 'tampering',
  },
  { name: 'sys.exit', threat: 'calls exit', completion: '    return 0\nimport sys\nsys.exit(0)\n', verdict: 'error' },
  {
    name: 'import js',
    threat: 'reaches the host',
    completion: '    import js\n    js.postMessage({"type": "result"})\n',
    verdict: 'error',
  },
  {
    name: 'Function constructor',
    threat: 'reaches the host',
    completion: '    from pyodide.ffi import to_js\n    return to_js([]).constructor.constructor("return process")().exit(0)\n',
    verdict: 'error',
  },
  {
    name: 'print markers',
    threat: 'prints fake result markers',
    completion: '    print(\'{"verdict": "passed"}\')\n    print("3 passed, 0 failed")\n',
    verdict: 'error',
  },
  { name: 'print flood', threat: 'floods output', completion: '    while True:\n        print("x" * 1000)\n', verdict: 'output-limit' },
  {
    name: 'memory',
    threat: 'allocates without bound',
    completion: '    keep = []\n    while True:\n        keep.append(bytearray(10**7))\n',
    verdict: 'memory',
    timeoutMs: 8000,
  },
  { name: 'recursion', threat: 'recurses without end', completion: '    return add(a, b)\n', verdict: 'error' },
  { name: 'while True', threat: 'never returns', completion: '    while True:\n        pass\n', verdict: 'timeout' },
  {
    name: 'swallow the interrupt',
    threat: 'never returns',
    completion:
      '    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n',
    verdict: 'timeout',
  },
  {
    // the harness's helpers were once looked up in __main__: disabling the tampering check and
    // collapsing the error keys turned every raising assert into a pass
    name: 'patch the harness via __main__',
    threat: 'forges results',
    completion: "    raise ValueError('x')\nimport __main__\n__main__._changed = lambda snap: None\n__main__._str = lambda x: 'zzz'\n",
    verdict: 'tampering',
  },
  {
    name: 'gc.get_objects walk',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import gc
    for o in gc.get_objects():
        if type(o) is dict and callable(o.get('__coderl_a')) and 'check' in o:
            _forge(o)
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'gc.get_referrers on the entry point',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import gc
    for r in gc.get_referrers(add):
        if type(r) is dict and '__coderl_a' in r:
            _forge(r)
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'sys._getframe f_back walk',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import sys
    _climb(sys._getframe())
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'sys._current_frames',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import sys
    for f in sys._current_frames().values():
        _climb(f)
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'traceback tb_frame walk',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    try:
        raise ValueError('x')
    except ValueError as e:
        _climb(e.__traceback__.tb_frame)
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'generator gi_frame walk',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
_gen = []
def _walk():
    _climb(_gen[0].gi_frame)
    yield
def _attack(a, b):
    _gen[:] = [_walk()]
    next(_gen[0])
    return a - b`),
    verdict: 'tampering',
  },
  {
    name: 'coroutine cr_frame walk',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
_co = []
async def _walk():
    _climb(_co[0].cr_frame)
def _attack(a, b):
    _co[:] = [_walk()]
    try:
        _co[0].send(None)
    except StopIteration:
        pass
    return a - b`),
    verdict: 'tampering',
  },
  {
    // with the locals proxy of Python 3.13+, a tracer can set `v` inside the harness's recorder
    name: 'sys.settrace rewrites locals',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _tracer(frame, event, arg):
    if event == 'call' and frame.f_code.co_name == 'record':
        frame.f_locals['v'] = True
    return None
def _attack(a, b):
    import sys
    sys.settrace(_tracer)
    return a - b`),
    verdict: 'tampering',
  },
  {
    // a second audit hook sees the harness's own events, tb_frame included, when it maps an error
    // to its line: refused, so the hook is never added
    name: 'own audit hook spies on the harness',
    threat: 'reaches the harness or its audit hook',
    completion: forging(`
_busy = []
def _spy(event, args):
    if event == 'object.__getattr__' and args[1] == 'tb_frame' and not _busy:
        _busy.append(1)
        try:
            _climb(args[0].tb_frame)
        finally:
            _busy.clear()
def _attack(a, b):
    import sys
    if not globals().get('_hooked'):
        globals()['_hooked'] = True
        sys.addaudithook(_spy)
        raise ValueError('let the harness read this traceback')
    return a - b`),
    verdict: 'tampering',
  },
  {
    // looks for any function whose __globals__ are the harness's (class methods found through
    // __subclasses__): none is reachable, so every assert just raises
    name: 'harness globals via __subclasses__',
    threat: 'reaches the harness or its audit hook',
    completion: `    return _attack(a, b)
def _attack(a, b):
    seen, todo = set(), [object]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        try:
            todo.extend(type.__subclasses__(c))
        except TypeError:
            pass
        for v in list(vars(c).values()):
            ns = getattr(v, '__globals__', None)
            if type(ns) is dict and ns.get('__name__') == '__coderl_harness__':
                ns['_str'] = lambda x: 'zzz'
                for k in [k for k in ns if 'guard' in k or 'arm' in k or 'allow' in k]:
                    try:
                        ns[k](None)
                    except BaseException:
                        pass
    raise ValueError('every assert raises; collapsed error keys would read as passes')
`,
    verdict: 'error',
  },
  {
    // a built-in used as a special method is called in the frame that triggered it: eval there
    // runs with the harness's globals (here: collapsing the error keys, so every raise is a pass)
    name: 'eval as __str__ in a harness frame',
    threat: 'reaches the harness or its audit hook',
    completion: `    raise _Evil('x')
import functools
class _Evil(Exception):
    __str__ = staticmethod(functools.partial(eval, "globals().__setitem__('_str', lambda x: 'zzz') or 'boom'", None, {}))
`,
    verdict: 'tampering',
  },
  {
    // DEBUG_SAVEALL keeps dead frames (and their f_globals) in gc.garbage; gc.set_debug is gone
    name: 'gc.garbage frames',
    threat: 'walks the interpreter to the harness',
    completion: `    return _attack(a, b)
_kept = []
def _attack(a, b):
    import gc
    if not _kept:
        _kept.append(ValueError('first'))
        raise _kept[0]
    gc.set_debug(gc.DEBUG_SAVEALL)
    e = _kept.pop()
    cyc = [e]
    cyc.append(cyc)
    e.cyc = cyc
    del e, cyc
    gc.collect()
    for o in gc.garbage:
        if type(o).__name__ == 'frame' and o.f_globals.get('__name__') == '__coderl_harness__':
            o.f_globals['_str'] = lambda x: 'zzz'
    raise ValueError('second')
`,
    verdict: 'error',
  },
  {
    // a signal handler is called with the current frame; signal.signal is gone
    name: 'signal handler frame',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import signal, _thread
    signal.signal(signal.SIGINT, lambda sig, frame: _climb(frame))
    _thread.interrupt_main()
    for _ in range(3):
        pass
    return a - b`),
    verdict: 'error',
  },
  {
    name: 'ctypes PyEval_GetFrame',
    threat: 'walks the interpreter to the harness',
    completion: forging(`
def _attack(a, b):
    import ctypes
    get = ctypes.pythonapi.PyEval_GetFrame
    get.restype = ctypes.py_object
    _climb(get())
    return a - b`),
    verdict: 'tampering',
  },
  {
    // the tests' `import math` would find the fake (and so would every later program's)
    name: 'sys.modules swap',
    threat: 'shadows what the tests use',
    completion: "    return -7\nimport sys, types\n_m = types.ModuleType('math')\n_m.fabs = lambda x: 0\nsys.modules['math'] = _m\n",
    verdict: 'tampering',
  },
  // files live in JavaScript memory, outside the WebAssembly heap's ceiling: each run's files may grow by its memory limit
  {
    name: 'fill the disk',
    threat: 'fills the file system',
    completion: "    return -7\nwith open('/tmp/fill', 'wb') as f:\n    for _ in range(8192):\n        f.write(b'x' * (1 << 20))\n",
    verdict: 'error',
    timeoutMs: 8000,
  },
  {
    name: 'sparse write at 4 GiB',
    threat: 'fills the file system',
    completion: "    return -7\nwith open('/tmp/sparse', 'wb') as f:\n    f.seek(1 << 32)\n    f.write(b'x')\n",
    verdict: 'error',
  },
  {
    name: 'truncate to 4 GiB',
    threat: 'fills the file system',
    completion: "    return -7\nimport os\nopen('/tmp/t', 'wb').close()\nos.truncate('/tmp/t', 1 << 32)\n",
    verdict: 'error',
  },
  {
    name: 'fill a pipe',
    threat: 'fills the file system',
    completion: "    return -7\nimport os\n_r, _w = os.pipe()\nfor _ in range(8192):\n    os.write(_w, b'x' * (1 << 20))\n",
    verdict: 'error',
  },
  {
    // the tests do not see the program's names that shadow built-ins: abs is abs again
    name: 'shadow a built-in the tests use',
    threat: 'shadows what the tests use',
    completion: '    return -7\nabs = lambda x: 0\n',
    verdict: 'failed',
  },
];
