/**
 * Programs that try to pass state to the program scored after them in the same worker: a writer
 * leaves behind everything it can (files in every writable place, a module on the import path, a
 * corrupted standard library, removed and chmod-ed entries, open descriptors, the working
 * directory, environment variables, patched modules and classes, random, decimal and warnings
 * state), and a reader returns the right answer only if it finds any of it. Used by
 * isolation.test.ts (every worker of a Node pool) and e2e/network.e2e.ts (the Reward panel).
 */
const PLACES = ['/tmp', '/home/pyodide', '/home', '/', '/lib', '/lib/python3.14', '/lib/python3.14/site-packages', '/dev/shm', '/dev'];

/** Top-level code after a wrong body (`return None`): leaves every kind of state it can. */
export const PY_STATE_WRITER = `    return None
import os, sys, types, builtins, random, decimal, warnings, collections, json, functools
for d in ${JSON.stringify(PLACES).replace(/"/g, "'")}:
    try:
        with open(os.path.join(d, 'coderl_leak.py'), 'w') as f:
            f.write('LEAK = 1\\n')
    except OSError:
        pass
os.makedirs('/tmp/coderl_dir/sub', exist_ok=True)
_kept = open('/tmp/coderl_dir/open', 'w')
_kept.write('left open')
_r, _w = os.pipe()
os.symlink('/tmp/coderl_dir/open', '/home/pyodide/coderl_link')
with open('/lib/python314.zip', 'r+b') as f:
    f.seek(100)
    f.write(b'CODERL')
os.rmdir('/home/web_user')
os.rename('/dev/null', '/dev/coderl_null')
os.chmod('/dev/shm', 0)
os.utime('/lib', (1, 1))
os.environ['CODERL_LEAK'] = '1'
os.chdir('/tmp/coderl_dir')
sys.modules['coderl_leak_mod'] = types.ModuleType('coderl_leak_mod')
sys.path.insert(0, '/tmp/coderl_dir')
json.coderl_leak = 1
collections.Counter.coderl_leak = 1
json.JSONEncoder.coderl_leak = 1
functools.coderl_leak = 1
builtins.coderl_leak = 1
random.seed(12345)
decimal.getcontext().prec = 3
warnings.filterwarnings('ignore', message='coderl')
sys.setrecursionlimit(123)
`;

/**
 * A body that returns `right` (an expression of the task's arguments) only when it finds any state a
 * writer left, else None; it prints what it found.
 */
export const pyStateReader = (right: string): string => `    return (${right}) if _leaks() else None
def _leaks():
    import os, sys, builtins, collections, json, functools, random, decimal, warnings
    found = []
    for d in ${JSON.stringify(PLACES).replace(/"/g, "'")}:
        if os.path.exists(os.path.join(d, 'coderl_leak.py')):
            found.append('file in ' + d)
    try:
        import coderl_leak
        found.append('importable module')
    except ImportError:
        pass
    for p in ('/tmp/coderl_dir', '/home/pyodide/coderl_link', '/dev/coderl_null'):
        if os.path.lexists(p):
            found.append(p)
    if not os.path.exists('/home/web_user') or not os.path.exists('/dev/null'):
        found.append('a removed entry stayed removed')
    if os.stat('/dev/shm').st_mode & 0o777 != 0o777:
        found.append('mode of /dev/shm')
    if os.stat('/lib').st_mtime < 10:
        found.append('times of /lib')
    with open('/lib/python314.zip', 'rb') as f:
        f.seek(100)
        if f.read(6) == b'CODERL':
            found.append('stdlib zip changed')
    fds = []
    for fd in range(3, 64):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            pass
    if fds:
        found.append('open descriptors ' + str(fds))
    if os.getcwd() != '/home/pyodide':
        found.append('cwd ' + os.getcwd())
    if 'CODERL_LEAK' in os.environ:
        found.append('environment')
    if 'coderl_leak_mod' in sys.modules or '/tmp/coderl_dir' in sys.path:
        found.append('sys.modules / sys.path')
    for obj, name in ((json, 'json'), (collections.Counter, 'Counter'), (json.JSONEncoder, 'JSONEncoder'), (functools, 'functools'), (builtins, 'builtins')):
        if hasattr(obj, 'coderl_leak'):
            found.append('patched ' + name)
    if random.random() == random.Random(12345).random():
        found.append('random state')
    if decimal.getcontext().prec == 3:
        found.append('decimal context')
    if any('coderl' in str(f) for f in warnings.filters):
        found.append('warnings filters')
    if sys.getrecursionlimit() == 123:
        found.append('recursion limit')
    print(found)
    return found
`;

/** The same for JavaScript (a fresh QuickJS runtime per run): globals and prototypes. */
export const JS_STATE_WRITER =
  '  return []\n}\nglobalThis.coderlLeak = 1\nvar coderlVar = 2\nObject.prototype.coderlLeak = 3\nArray.prototype.coderlLeak = 4\n';
export const jsStateReader = (right: string): string =>
  `  const found = [typeof coderlLeak, typeof coderlVar, typeof ({}).coderlLeak, typeof [].coderlLeak].filter((t) => t !== 'undefined')\n  console.log(JSON.stringify(found))\n  return found.length ? (${right}) : []\n}\n`;
