/** Plain programs (stdin in; stdout, stderr, exit code out) on the program pool: JavaScript in QuickJS, Python in Pyodide. */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SandboxPool } from './pool';
import { isProgramResult, programJob, type ProgramResult } from './program';
import { createProgramPool } from './program-pool.node';
import { DEFAULT_LIMITS, type RunLimits } from './result';
import type { Language } from '../tasks/types';

let pool: SandboxPool;
beforeAll(async () => {
  pool = await createProgramPool({ size: 1 });
});
afterAll(() => pool?.close());

const LIMITS: RunLimits = { ...DEFAULT_LIMITS, timeoutMs: 1500, graceMs: 1500, outputChars: 4096 };

async function run(language: Language, code: string, stdin = '', limits = LIMITS): Promise<ProgramResult> {
  const r = await pool.run(programJob(language, code, stdin, limits));
  if (!isProgramResult(r)) throw new Error(`no process output: ${r.verdict} ${r.message ?? ''}`);
  return r;
}

describe('python programs', () => {
  test('stdin in, stdout and stderr apart, exit code 0', async () => {
    const r = await run('python', 'import sys\na, b = map(int, input().split())\nprint(a + b)\nprint("note", file=sys.stderr)\n', '3 4\n');
    expect(r.process).toEqual({ stdout: '7\n', stderr: 'note\n', exit_code: 0 });
    expect(r.verdict).toBe('passed');
  });

  test("sys.exit's code, an uncaught exception is 1 with its traceback, a syntax error is 1", async () => {
    expect((await run('python', 'print("x", end="")\nimport sys\nsys.exit(3)\n')).process).toEqual({
      stdout: 'x',
      stderr: '',
      exit_code: 3,
    });
    const e = await run('python', 'def f():\n    assert 1 == 2, "nope"\nf()\n');
    expect(e.process.exit_code).toBe(1);
    expect(e.verdict).toBe('failed');
    expect(e.process.stderr).toMatch(/Traceback[\s\S]*File "main.py", line 2, in f[\s\S]*AssertionError: nope/);
    expect((await run('python', 'def (:\n')).process).toMatchObject({ exit_code: 1, stderr: expect.stringMatching(/SyntaxError/) });
  });

  test('the runtime is fresh for each run: what one program changed, the next does not see', async () => {
    await run('python', 'import math\nmath.pi = 3\nopen("/tmp/left", "w").write("x")\n');
    const r = await run('python', 'import math, os\nprint(math.pi, os.path.exists("/tmp/left"))\n');
    expect(r.process.stdout).toBe('3.141592653589793 False\n');
  });

  test('hostile: os.system and sockets are refused, an endless loop is a timeout, huge output is cut', async () => {
    const sys = await run('python', 'import os\nprint(os.system("echo pwned"))\n');
    expect(sys.process.exit_code).toBe(1);
    expect(sys.process.stdout).not.toContain('pwned');
    expect(sys.process.stderr).toMatch(/PermissionError.*starting a process is not allowed/);
    const net = await run('python', 'import socket\nsocket.create_connection(("127.0.0.1", 80))\n');
    expect(net.process.stderr).toMatch(/PermissionError/);
    const loop = await run('python', 'try:\n    while True: pass\nexcept BaseException:\n    pass\nprint("late")\n');
    expect(loop.verdict).toBe('timeout');
    expect(loop.process.exit_code).toBeNull();
    const big = await run('python', 'while True: print("y" * 1000)\n');
    expect(big.verdict).toBe('output-limit');
    expect(big.process.stdout.length + big.process.stderr.length).toBeLessThanOrEqual(4096);
  });
});

describe('javascript programs', () => {
  test("console to stdout and stderr, stdin through require('fs'), process.exit", async () => {
    const code =
      "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b, [1, 'x'], { k: 2 });\nconsole.error('warn');\nprocess.stdout.write('no newline');\nprocess.exit(4);\nconsole.log('never');\n";
    const r = await run('javascript', code, '5 6\n');
    expect(r.process).toEqual({ stdout: "11 [ 1, 'x' ] { k: 2 }\nno newline", stderr: 'warn\n', exit_code: 4 });
    expect(r.verdict).toBe('failed');
  });

  test('an uncaught error is exit 1 with its stack; Promise jobs run; other modules are not found', async () => {
    const e = await run('javascript', 'function f() {\n  throw new TypeError("bad");\n}\nf();\n');
    expect(e.process.exit_code).toBe(1);
    expect(e.process.stderr).toMatch(/^TypeError: bad\n.*main\.js:2/);
    expect((await run('javascript', 'Promise.resolve(2).then((x) => console.log(x * 21));\n')).process.stdout).toBe('42\n');
    const req = await run('javascript', "require('child_process').execSync('id');\n");
    expect(req.process.stderr).toMatch(/Cannot find module 'child_process'/);
    expect(req.process.exit_code).toBe(1);
  });

  test('hostile: an endless loop is a timeout, huge output is cut', async () => {
    const loop = await run('javascript', 'for (;;) {}\n');
    expect(loop.verdict).toBe('timeout');
    const big = await run('javascript', "for (;;) console.log('y'.repeat(1000));\n");
    expect(big.verdict).toBe('output-limit');
    expect(big.process.exit_code).toBe(1);
  });
});
