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
 * - The program runs in its own namespace. The tests run in a copy of it without the names that
 *   shadow built-ins (`abs = lambda x: 0` does not reach them), whose `__builtins__` is a private
 *   copy taken when the harness loaded, so `builtins.abs = ...` does not reach them either.
 * - `check` receives a guard around the entry point: a returned value not made only of built-in
 *   types (int, float, str, list, dict, ...) is an error, and an instance of a class the
 *   program defined (an `__eq__` that always says yes: the classic reward hack) is tampering.
 * - Every loaded module's namespace (builtins, sys, math, ...) and which module each
 *   `sys.modules` name maps to are snapshotted before the program runs and compared after the
 *   program and after the tests (a change is tampering; importing a submodule is not), then
 *   restored with `gc.callbacks`, `sys.path`, `sys.meta_path`, `sys.path_hooks`, the async
 *   generator hooks and the int-to-str digit limit, so one program cannot leave patches behind
 *   for the next; if a finalizer patches them again while they are restored, the worker is
 *   replaced. Modules the program imported stay imported.
 *
 * No way in to the counters. The harness's objects live in a namespace no module refers to, and
 * no harness function or class with methods is reachable from the program's objects (so no
 * `__globals__` leads there). The other ways to reach them walk the interpreter, and an audit hook
 * (installed at load, never removed, armed from then on) refuses each one, raising RuntimeError
 * and recording the attempt, which makes the run `tampering` even if the program catches the error:
 * - frames: sys._getframe, sys._current_frames, sys._current_exceptions, reading tb_frame,
 *   gi_frame, cr_frame or ag_frame, sys.settrace / sys.setprofile (threading's too),
 *   sys.monitoring.register_callback;
 * - objects: gc.get_objects, gc.get_referrers, gc.get_referents;
 * - memory: ctypes (every ctypes.* event) and importing the C test modules;
 * - a second audit hook (it would see the harness's own events);
 * - exec/eval whose calling frame is the harness's or the tests' (a built-in such as
 *   `functools.partial(eval, src, None, {})` used as a special method runs `src` with the globals
 *   of whichever frame triggered it).
 * The harness reads tb_frame itself to map an error to its line, inside a window where the hook
 * lets it and the cyclic collector is off, so no finalizer or other program code can run there.
 * Routes with no audit event are removed when the harness loads: gc.set_debug (DEBUG_SAVEALL puts
 * dead frames in gc.garbage), signal.signal (a handler receives the current frame), and
 * _imp.create_builtin/create_dynamic (fresh copies of those modules, ctypes, _testcapi), after
 * every other built-in module is imported. logging is told not to look up frames, so it still works.
 * python.ts keeps the worker realm itself from reaching the host, and the pool checks every
 * message's nonce.
 *
 * The network: socket creation, connect, bind, sends and name look-ups (and urllib, http.client,
 * ftplib, smtplib...) are refused by the same hook, naming the attempt in a tampering verdict;
 * underneath, the sockets themselves are gone (no-network.ts).
 *
 * Between runs. The snapshot above decides the verdict of the run that made a change; what the
 * next run sees is decided in python.ts, which puts the whole runtime (WebAssembly memory, file
 * system, descriptors) back as it was before the first run (fresh-runtime.ts): attributes of
 * stdlib classes, caches, random and decimal state, modules imported, files written, none of it
 * reaches the next program.
 *
 * Not covered. Hand-made code objects (marshal.loads, code.replace) can run malformed bytecode,
 * which can corrupt interpreter memory; importing needs marshal, so it stays. Honest code that
 * reads frames is refused too: traceback.print_exc, inspect.stack, pdb, doctest.testmod (tampering).
 */
export const PY_HARNESS = String.raw`
import ast as _ast, builtins as _builtins, gc as _gc, json as _json, sys as _sys, types as _types
for _m in ('math', 're', 'collections', 'itertools', 'functools', 'heapq', 'bisect', 'string', 'hashlib',
           'statistics', 'fractions', 'decimal', 'random', 'copy', 'typing', 'datetime', 'operator', 'logging', 'signal'):
    __import__(_m)

_PRISTINE = dict(_builtins.__dict__)
_PLAIN = (int, float, complex, bool, str, bytes, type(None), list, tuple, dict, set, frozenset)
_LIMIT = _sys.getrecursionlimit()
_type, _len, _isinstance, _str, _callable, _reversed, _all, _map = type, len, isinstance, str, callable, reversed, all, map
_is = __import__('operator').is_
_TB = _types.TracebackType
_TIMEOUT = {'verdict': 'timeout', 'message': 'the run exceeded its time limit (interrupted)'}
_VOLATILE = {'__warningregistry__', 'last_type', 'last_value', 'last_traceback', 'last_exc'}
_LISTS = (_gc.callbacks, _sys.meta_path, _sys.path_hooks, _sys.path)

# C modules that hand out raw memory or interpreter internals: never imported
_BANNED = frozenset(('ctypes', '_ctypes', '_testcapi', '_testinternalcapi', '_testlimitedcapi', '_testclinic',
                     '_testclinic_limited', '_testbuffer', '_testmultiphase', '_testsinglephase', '_testimportmultiple',
                     '_xxtestfuzz', 'xxsubtype', 'xxlimited', 'xxlimited_35', '_remote_debugging'))
# audit events that reach frames or arbitrary objects
_REFUSED = frozenset(('gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys._getframe', 'sys._current_frames',
                      'sys._current_exceptions', 'sys.settrace', 'sys.setprofile', 'sys.monitoring.register_callback',
                      'sys.addaudithook'))
_FRAME_ATTRS = frozenset(('tb_frame', 'gi_frame', 'cr_frame', 'ag_frame'))
# audit events of the network: the sockets themselves are gone (no-network.ts); these name the attempt
_NETWORK = frozenset(('socket.__new__', 'socket.connect', 'socket.bind', 'socket.sendto', 'socket.sendmsg',
                      'socket.getaddrinfo', 'socket.gethostbyname', 'socket.gethostbyaddr', 'socket.getnameinfo',
                      'urllib.Request', 'http.client.connect', 'ftplib.connect', 'smtplib.connect', 'poplib.connect',
                      'imaplib.open', 'nntplib.connect', 'telnetlib.Telnet.open', 'webbrowser.open'))
# audit events of starting a process: Emscripten's system() runs a real shell command under Node
# (node-seal.ts closes that door too); the rest fail in Emscripten, and are refused all the same
_PROCESS = frozenset(('os.system', 'os.exec', 'os.spawn', 'os.posix_spawn', 'os.fork', 'os.forkpty', 'os.kill',
                      'os.killpg', 'subprocess.Popen', 'pty.spawn', 'os.startfile'))
# functions defined here and in the tests report these module names
_PRIVATE = frozenset((__name__, '__coderl_tests__'))

class _Stop(BaseException):
    pass

class _Tamper(Exception):
    pass

def _make_guard():
    modname, gc_isenabled, gc_disable, gc_enable = _sys._getframemodulename, _gc.isenabled, _gc.disable, _gc.enable
    typ, ln, refused, frame_attrs, banned, private, network, process = _type, _len, _REFUSED, _FRAME_ATTRS, _BANNED, _PRIVATE, _NETWORK, _PROCESS
    reading = False  # true only while walk() reads tb_frame
    permit = None  # the one code object the harness is about to exec
    tripped = None  # the verdict's message for the first refused event since take()

    def hook(event, args):
        nonlocal permit, tripped
        if event == 'object.__getattr__':
            name = args[1] if ln(args) > 1 else None
            if typ(name) is not str or name not in frame_attrs or (reading and name == 'tb_frame'):
                return
            what = 'reading ' + name
        elif event == 'exec':
            if permit is not None and ln(args) > 0 and args[0] is permit:
                permit = None
                return
            caller = modname(1)
            if typ(caller) is not str or caller not in private:
                return
            what = 'exec/eval in a harness frame'
        elif event == 'import':
            name = args[0] if ln(args) > 0 else None
            if typ(name) is not str or name not in banned:
                return
            what = 'import ' + name
        elif event in refused or event[:7] == 'ctypes.':
            what = event
        elif event in network:
            if tripped is None:
                tripped = 'the program tried to reach the network (' + event + '); the sandbox has none'
            raise PermissionError(13, 'sandbox: the network is not reachable (' + event + ')')
        elif event in process:
            if tripped is None:
                tripped = 'the program tried to run a command on the host (' + event + '); the sandbox has no processes'
            raise PermissionError(13, 'sandbox: starting a process is not allowed (' + event + ')')
        else:
            return
        if tripped is None:
            tripped = 'the program tried to inspect the interpreter: ' + what + ' is not allowed in the sandbox'
        raise RuntimeError('sandbox: ' + what + ' is not allowed')

    def walk(tb):
        # (filename, line) of every traceback entry; no program code can run in here
        nonlocal reading
        found = []
        was = gc_isenabled()
        gc_disable()
        reading = True
        try:
            while tb is not None and ln(found) < 10000:
                found.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
                tb = tb.tb_next
        finally:
            reading = False
            if was:
                gc_enable()
        return found

    def take():
        nonlocal tripped
        t, tripped = tripped, None
        return t

    def allow(code):
        nonlocal permit
        permit = code

    return hook, walk, take, allow

def _harden():
    for name in _sys.builtin_module_names:
        if name not in _BANNED and name not in _sys.modules:
            try:
                __import__(name)
            except BaseException:
                pass
    import _imp, _signal, signal, logging
    for mod, names in ((_imp, ('create_builtin', 'create_dynamic')), (_gc, ('set_debug',)), (_signal, ('signal',)), (signal, ('signal',))):
        for name in names:
            mod.__dict__.pop(name, None)
    _gc.garbage.clear()
    logging._srcfile = None

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
    mods = [(m, dict(m.__dict__)) for m in list(_sys.modules.values()) if _type(getattr(m, '__dict__', None)) is dict]
    return mods, dict(_sys.modules), [(l, list(l)) for l in _LISTS], (_sys.get_asyncgen_hooks(), _sys.get_int_max_str_digits())

def _text(x):
    try:
        s = _str(x)
        return s if _type(s) is str else '?'
    except BaseException:
        return '?'

def _submodule(m, k, v):
    # importing pkg.sub adds sub to pkg: not a patch
    name = getattr(m, '__name__', None)
    return _type(v) is _types.ModuleType and _type(name) is str and _type(k) is str and _sys.modules.get(name + '.' + k) is v

def _changed(state):
    for m, d in state[0]:
        cur = m.__dict__
        if _len(cur) == _len(d) and _all(_map(_is, cur, d)) and _all(_map(_is, cur.values(), d.values())):
            continue  # the same keys and values in the same order: untouched
        for k in cur:
            if k not in d and k not in _VOLATILE and not _submodule(m, k, cur[k]):
                return 'added ' + _text(m.__name__) + '.' + _text(k)
        for k in d:
            if k not in _VOLATILE and (k not in cur or cur[k] is not d[k]):
                return 'changed ' + _text(m.__name__) + '.' + _text(k)
    cur, mods = _sys.modules, state[1]
    for k in mods:
        if k in cur and cur[k] is not mods[k]:
            return 'replaced the module ' + _text(k) + ' in sys.modules'
    return None

def _restore(state):
    # module namespaces, the modules sys.modules held (modules imported since stay) and the hook lists
    for m, d in state[0]:
        cur = m.__dict__
        for k in [k for k in cur if k not in d and not _submodule(m, k, cur[k])]:
            del cur[k]
        cur.update(d)
    cur, mods = _sys.modules, state[1]
    for k in mods:
        if cur.get(k) is not mods[k]:
            cur[k] = mods[k]
    for l, items in state[2]:
        l[:] = items
    _sys.set_asyncgen_hooks(*state[3][0])
    _sys.set_int_max_str_digits(state[3][1])
    _sys.setrecursionlimit(_LIMIT)
    _gc.enable()
    _gc.garbage.clear()

def _info(e):
    try:
        name = _type(e).__name__
        s = _str(e)
        message = (name + ': ' + s if s else name)[:2000]
        if _type(message) is not str:
            message = None
    except BaseException:
        message = None
    return {'message': message or 'an exception that could not be described', 'where': _where(e)}

def _where(e):
    # the innermost traceback entry in the program or the tests
    try:
        tb = e.__traceback__
        if _type(tb) is not _TB:
            return None
        for file, line in _reversed(_walk(tb)):
            if _type(file) is str and (file == 'program.py' or file == 'tests.py') and _type(line) is int:
                return {'file': file, 'line': line}
    except BaseException:
        pass
    return None

_TEMPLATE = 'try:\n    __coderl_a(%d, X)\nexcept __coderl_Stop:\n    raise\nexcept BaseException as __coderl_e:\n    __coderl_err(%d, __coderl_e)\n'
_OPAQUE = (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.Lambda, _ast.ClassDef)

def _site(node, src, sites):
    if _isinstance(node.test, _ast.Constant):
        return _ast.copy_location(_ast.Pass(), node)
    k = _len(sites)
    text = ' '.join((_ast.get_source_segment(src, node) or 'assert').split())
    sites.append({'line': node.lineno, 'source': text[:157] + '...' if _len(text) > 160 else text})
    tree = _ast.parse(_TEMPLATE % (k, k)).body[0]
    for n in _ast.walk(tree):
        if 'lineno' in n._attributes:
            n.lineno = n.end_lineno = node.lineno
            n.col_offset = n.end_col_offset = 0
    tree.body[0].value.args[1] = node.test
    return tree

def _rewrite(nodes, src, sites):
    # replaces the asserts in a list of nodes, depth first, not inside functions or classes
    for i in range(_len(nodes)):
        n = nodes[i]
        if _isinstance(n, _ast.Assert):
            nodes[i] = _site(n, src, sites)
        elif _isinstance(n, _ast.AST) and not _isinstance(n, _OPAQUE):
            for _, value in _ast.iter_fields(n):
                if _type(value) is list:
                    _rewrite(value, src, sites)
                elif _isinstance(value, _ast.AST) and not _isinstance(value, _OPAQUE):
                    _rewrite([value], src, sites)

def _instrument(tests):
    tree = _ast.parse(tests, 'tests.py')
    sites = []
    for node in tree.body:
        if _isinstance(node, _ast.FunctionDef) and node.name == 'check':
            _rewrite(node.body, tests, sites)
    return tree, sites

def __coderl_run(program, tests, entry):
    _take()  # an event refused between runs belongs to no run
    out = {'sites': [], 'evals': [], 'fails': [], 'siteErrors': {}, 'programFailed': False, 'testsFinished': False}
    try:
        tree, sites = _instrument(tests)
    except SyntaxError as e:
        out['error'] = {'message': 'the test code does not compile: ' + _info(e)['message']}
        return _json.dumps(out)
    out['sites'], out['evals'], out['fails'] = sites, [0] * _len(sites), [0] * _len(sites)
    state = _snapshot()
    try:
        _run(program, tree, entry, out, state)
    except _Stop:
        pass
    except KeyboardInterrupt:
        out['stop'] = _TIMEOUT
    except MemoryError:
        out['stop'] = {'verdict': 'memory', 'message': 'the program ran out of memory (MemoryError)'}
    except BaseException as e:
        out['error'] = _info(e)
    finally:
        _allow(None)
        what = _changed(state)
        if what and 'stop' not in out:
            out['stop'] = {'verdict': 'tampering', 'message': 'the program changed the interpreter: ' + what}
        _restore(state)
        _gc.collect()  # the program's garbage is finalized now, inside its own run
        if _changed(state):
            _restore(state)
            out['recycle'] = True
        tried = _take()
        if tried:
            out['stop'] = {'verdict': 'tampering', 'message': tried}
    return _json.dumps(out)

def _run(program, tree, entry, out, state):
    g = {'__name__': '__main__', '__builtins__': _builtins}
    try:
        code = compile(program, 'program.py', 'exec')
        _allow(code)
        exec(code, g)
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as e:
        out['programFailed'] = True
        out['error'] = _info(e)
        return
    what = _changed(state)
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
    # the tests see the program's names, except those that would shadow a built-in
    tg = {}
    for k, v in list(g.items()):
        if _type(k) is str and (k[:2] == '__' or k not in _PRISTINE):
            tg[k] = v
    tg.update({'__builtins__': dict(_PRISTINE), '__name__': '__coderl_tests__', '__coderl_a': record,
               '__coderl_err': error, '__coderl_Stop': _Stop})
    code = compile(tree, 'tests.py', 'exec')
    _allow(code)
    exec(code, tg)
    check = tg.get('check')
    if _callable(check):
        check(_guard(fn))
    out['testsFinished'] = True

_harden()
_hook, _walk, _take, _allow = _make_guard()
_sys.addaudithook(_hook)
del _hook, _m
_gc.collect()
_gc.freeze()  # what exists now lives as long as the interpreter: the collection after each run skips it
`;
