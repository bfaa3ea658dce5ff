/**
 * The Python side of the Pyodide runner, loaded once per interpreter before any untrusted code.
 * `__coderl_run(program, tests, entry_point)` returns JSON of what outcome.ts grades:
 *
 * - The tests are parsed with `ast`; every `assert` inside `check` (in loops and branches too,
 *   not in nested functions) is one test, rewritten to
 *       try: __coderl_a(K, <test>)
 *       except __coderl_Stop: raise
 *       except BaseException as e: __coderl_err(K, e)
 *   so one assertion's failure or exception does not hide the others (HumanEval's own check
 *   stops at the first). `assert <constant>` lines are debugging markers, not tests. With no
 *   `check` or no assertion in it, the whole `check(candidate)` call is one test.
 * - The program runs in its own namespace; the tests run in a copy of it whose `__builtins__` is
 *   a private copy taken when the harness loaded, so `builtins.abs = ...` does not reach them.
 * - `check` receives a guard around the entry point: a returned value not made only of built-in
 *   types (int, float, str, list, dict, ...) is an error, and an instance of a class the
 *   program defined (an `__eq__` that always says yes: the classic reward hack) is tampering.
 * - Every loaded module's namespace (builtins, sys, math, ...) is snapshotted before the program
 *   runs and compared after the program and after the tests (a change is tampering), then
 *   restored, so one program cannot leave patches behind for the next.
 * Limits: Python code can reach any object of its interpreter (gc, frames), so a deliberate
 * program could still find and edit the counters; python.ts keeps the worker realm itself from
 * reaching the host, and the pool checks every message's nonce.
 */
export const PY_HARNESS = String.raw`
import ast as _ast, builtins as _builtins, json as _json, sys as _sys, traceback as _tb
for _m in ('math', 're', 'collections', 'itertools', 'functools', 'heapq', 'bisect', 'string', 'hashlib',
           'statistics', 'fractions', 'decimal', 'random', 'copy', 'typing', 'datetime', 'operator'):
    __import__(_m)

_PRISTINE = dict(_builtins.__dict__)
_PLAIN = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict, set, frozenset)
_LIMIT = _sys.getrecursionlimit()
_type, _len, _isinstance, _str, _callable = type, len, isinstance, str, callable
_TIMEOUT = {'verdict': 'timeout', 'message': 'the run exceeded its time limit (interrupted)'}
_VOLATILE = {'__warningregistry__', 'last_type', 'last_value', 'last_traceback', 'last_exc'}

class _Stop(BaseException):
    pass

class _Tamper(Exception):
    pass

def _is_plain(t):
    for p in _PLAIN:
        if t is p:
            return True
    return False

def _check_value(v):
    stack, budget = [v], 100000
    while stack and budget > 0:
        x = stack.pop()
        budget -= 1
        t = _type(x)
        if not _is_plain(t):
            user = [c.__name__ for c in t.__mro__ if c.__module__ != 'builtins']
            if user:
                raise _Tamper('the candidate returned an instance of ' + user[0] + ', a class the program defined; only built-in values are compared')
            raise TypeError('the candidate returned a ' + t.__name__ + ' object; only built-in values (int, str, list, dict, ...) are compared')
        if t is dict:
            for k in x:
                stack.append(k)
                stack.append(x[k])
        elif t is list or t is tuple or t is set or t is frozenset:
            stack.extend(x)

def _guard(fn):
    def candidate(*args, **kwargs):
        r = fn(*args, **kwargs)
        _check_value(r)
        return r
    return candidate

def _snapshot():
    return [(m, dict(m.__dict__)) for m in list(_sys.modules.values()) if _type(getattr(m, '__dict__', None)) is dict]

def _changed(snap):
    for m, d in snap:
        cur = m.__dict__
        for k in cur:
            if k not in d and k not in _VOLATILE:
                return 'added ' + m.__name__ + '.' + _str(k)
        for k in d:
            if k not in _VOLATILE and (k not in cur or cur[k] is not d[k]):
                return 'changed ' + m.__name__ + '.' + _str(k)
    return None

def _restore(snap):
    for m, d in snap:
        cur = m.__dict__
        for k in [k for k in cur if k not in d]:
            del cur[k]
        cur.update(d)
    _sys.setrecursionlimit(_LIMIT)
    _sys.settrace(None)
    _sys.setprofile(None)

def _info(e):
    try:
        name = _type(e).__name__
        s = _str(e)
        message = (name + ': ' + s if s else name)[:2000]
    except BaseException:
        message = 'an exception that could not be described'
    where = None
    try:
        for f in reversed(_tb.extract_tb(e.__traceback__)):
            if f.filename in ('program.py', 'tests.py'):
                where = {'file': f.filename, 'line': f.lineno}
                break
    except BaseException:
        pass
    return {'message': message, 'where': where}

_TEMPLATE = 'try:\n    __coderl_a(%d, X)\nexcept __coderl_Stop:\n    raise\nexcept BaseException as __coderl_e:\n    __coderl_err(%d, __coderl_e)\n'

class _Instrument(_ast.NodeTransformer):
    def __init__(self, src):
        self.src, self.sites = src, []
    def visit_FunctionDef(self, node):
        return node
    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef
    def visit_Assert(self, node):
        if _isinstance(node.test, _ast.Constant):
            return _ast.copy_location(_ast.Pass(), node)
        k = _len(self.sites)
        text = ' '.join((_ast.get_source_segment(self.src, node) or 'assert').split())
        self.sites.append({'line': node.lineno, 'source': text[:157] + '...' if _len(text) > 160 else text})
        tree = _ast.parse(_TEMPLATE % (k, k)).body[0]
        for n in _ast.walk(tree):
            if 'lineno' in n._attributes:
                n.lineno = n.end_lineno = node.lineno
                n.col_offset = n.end_col_offset = 0
        tree.body[0].value.args[1] = node.test
        return tree

def _instrument(tests):
    tree = _ast.parse(tests, 'tests.py')
    inst = _Instrument(tests)
    for node in tree.body:
        if _isinstance(node, _ast.FunctionDef) and node.name == 'check':
            node.body = [inst.visit(s) for s in node.body]
    return tree, inst.sites

def __coderl_run(program, tests, entry):
    out = {'sites': [], 'evals': [], 'fails': [], 'siteErrors': {}, 'programFailed': False, 'testsFinished': False}
    try:
        tree, sites = _instrument(tests)
    except SyntaxError as e:
        out['error'] = {'message': 'the test code does not compile: ' + _info(e)['message']}
        return _json.dumps(out)
    out['sites'], out['evals'], out['fails'] = sites, [0] * _len(sites), [0] * _len(sites)
    snap = _snapshot()
    try:
        _run(program, tree, entry, out, snap)
    except _Stop:
        pass
    except KeyboardInterrupt:
        out['stop'] = _TIMEOUT
    except MemoryError:
        out['stop'] = {'verdict': 'memory', 'message': 'the program ran out of memory (MemoryError)'}
    except BaseException as e:
        out['error'] = _info(e)
    finally:
        what = _changed(snap)
        if what and 'stop' not in out:
            out['stop'] = {'verdict': 'tampering', 'message': 'the program changed the interpreter: ' + what}
        _restore(snap)
    return _json.dumps(out)

def _run(program, tree, entry, out, snap):
    g = {'__name__': '__main__', '__builtins__': _builtins}
    try:
        exec(compile(program, 'program.py', 'exec'), g)
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as e:
        out['programFailed'] = True
        out['error'] = _info(e)
        return
    what = _changed(snap)
    if what:
        out['stop'] = {'verdict': 'tampering', 'message': 'the program changed the interpreter: ' + what}
        return
    fn = g.get(entry)
    if not _callable(fn):
        out['programFailed'] = True
        out['error'] = {'message': 'the program does not define a function ' + entry, 'where': None}
        return
    evals, fails, errors = out['evals'], out['fails'], out['siteErrors']
    def record(k, v):
        evals[k] += 1
        if not v:
            fails[k] += 1
    def error(k, e):
        if _isinstance(e, _Tamper):
            out['stop'] = {'verdict': 'tampering', 'message': _str(e)}
            raise _Stop()
        if _isinstance(e, MemoryError):
            out['stop'] = {'verdict': 'memory', 'message': 'the program ran out of memory (MemoryError)'}
            raise _Stop()
        if _isinstance(e, KeyboardInterrupt):
            out['stop'] = _TIMEOUT
            raise _Stop()
        evals[k] += 1
        if _str(k) not in errors:
            errors[_str(k)] = _info(e)
    tg = dict(g)
    tg.update({'__builtins__': dict(_PRISTINE), '__name__': '__coderl_tests__', '__coderl_a': record,
               '__coderl_err': error, '__coderl_Stop': _Stop})
    exec(compile(tree, 'tests.py', 'exec'), tg)
    check = tg.get('check')
    if _callable(check):
        check(_guard(fn))
    out['testsFinished'] = True
`;
