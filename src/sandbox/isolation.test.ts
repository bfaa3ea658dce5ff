/**
 * No state passes from one program to the next. On every worker of a real pool, a writer leaves
 * behind everything it can (files in every writable place, a module on the import path, a corrupted
 * standard library, removed and chmod-ed directories, open descriptors, the working directory,
 * environment variables, patched modules and classes, random, decimal and warnings state), and then
 * a reader on the same worker returns the right answer only if it finds any of it: it must find
 * nothing and fail. JavaScript the same way. Honest programs after them still pass.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { JS_TASK, PY_TASK } from './adversarial/corpus';
import type { SandboxPool } from './pool';
import { createNodePool } from './pool.node';
import type { RunJob } from './protocol';
import { DEFAULT_LIMITS, type RunResult } from './result';

const SIZE = 2;
const limits = { ...DEFAULT_LIMITS, timeoutMs: 5000, graceMs: 3000 };
const PLACES = ['/tmp', '/home/pyodide', '/home', '/', '/lib', '/lib/python3.14', '/lib/python3.14/site-packages', '/dev/shm', '/dev'];

/** Keeps the worker busy so that each of the SIZE jobs submitted together lands on its own worker. */
const BUSY = 'import time as _t\n_e = _t.monotonic() + 0.4\nwhile _t.monotonic() < _e:\n    pass\n';

const PY_WRITER = `    return a - b
${BUSY}import os, sys, types, builtins, random, decimal, warnings, collections, json, functools
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

const PY_READER = `    return a + b if _leaks() else a - b
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

const JS_WRITER = "  return []\n}\nglobalThis.coderlLeak = 1\nvar coderlVar = 2\nObject.prototype.coderlLeak = 3\nArray.prototype.coderlLeak = 4\n";
const JS_READER = "  const found = [typeof coderlLeak, typeof coderlVar, typeof ({}).coderlLeak, typeof [].coderlLeak].filter((t) => t !== 'undefined')\n  console.log(JSON.stringify(found))\n  return found.length ? (x < y ? [x, y] : [y, x]) : []\n}\n";

let pool: SandboxPool;
const runOn = async (job: RunJob): Promise<{ result: RunResult; worker: number }> => {
  const { result, worker } = await pool.submit(job);
  return { result: await result, worker: await worker };
};
/** SIZE copies of a job at once: one per worker. */
const wave = (job: RunJob) => Promise.all(Array.from({ length: SIZE }, () => runOn(job)));

let pyWriters: Awaited<ReturnType<typeof wave>>;
let pyReaders: Awaited<ReturnType<typeof wave>>;
let jsWriters: Awaited<ReturnType<typeof wave>>;
let jsReaders: Awaited<ReturnType<typeof wave>>;
let honest: Awaited<ReturnType<typeof wave>>;

beforeAll(async () => {
  pool = await createNodePool({ size: SIZE });
  await wave({ task: PY_TASK, completion: `    return a + b\n${BUSY}`, limits }); // every worker has loaded Python
  pyWriters = await wave({ task: PY_TASK, completion: PY_WRITER, limits });
  pyReaders = await wave({ task: PY_TASK, completion: `${PY_READER}${BUSY}`, limits });
  jsWriters = await wave({ task: JS_TASK, completion: JS_WRITER, limits });
  jsReaders = await wave({ task: JS_TASK, completion: JS_READER, limits });
  honest = await wave({ task: PY_TASK, completion: `${PY_TASK.canonical_solution!}${BUSY}`, limits });
}, 120_000);

afterAll(() => pool?.close());

describe('no state passes between programs, on every worker', () => {
  test('each wave ran once on every worker, and no worker was replaced in between', () => {
    const workers = (w: typeof pyWriters) => w.map((x) => x.worker).sort();
    const all = Array.from({ length: SIZE }, (_, i) => i + 1);
    for (const w of [pyWriters, pyReaders, jsWriters, jsReaders, honest]) expect(workers(w)).toEqual(all);
    expect(pool.stats.replaced).toBe(0);
  });

  test('the Python writer ran to the end (its tampering verdict names the first patch)', () => {
    for (const { result } of pyWriters) {
      expect(result.verdict).toBe('tampering');
      expect(result.message).toMatch(/changed the interpreter/);
    }
  });

  test('a Python reader after the writer finds none of it', () => {
    for (const { result } of pyReaders) {
      expect(result.output).toBe('[]\n'.repeat(3));
      expect(result.verdict).toBe('failed');
    }
  });

  test('a JavaScript reader after the writer finds none of it', () => {
    for (const { result } of jsWriters) expect(result.verdict).toBe('tampering');
    for (const { result } of jsReaders) {
      expect(result.output).toMatch(/^(\[\]\n)+$/);
      expect(result.verdict).toBe('failed');
    }
  });

  test('honest programs after them pass on every worker', () => {
    expect(honest.map((x) => x.result.verdict)).toEqual(Array(SIZE).fill('passed'));
  });
});
