/** Built-in suites on the command line: `--suite NAME` resolution, the unknown-name error, `coderl suites`, and what train records. */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { benchmarkPath } from '../tasks/benchmarks';
import { BUILTIN_SUITES } from '../tasks/builtin-suites';
import type { SuiteListing } from './commands/suites';
import { suiteOption } from './commands/train';
import { main } from './main';
import { readSuiteArg, resolveSuiteArg } from './suite-arg';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      out: (t: string) => void out.push(...t.replace(/\n$/, '').split('\n')),
      err: (t: string) => void err.push(...t.replace(/\n$/, '').split('\n')),
    },
    out,
    err,
  };
}

const NAMES = BUILTIN_SUITES.map((s) => s.name);

describe('--suite NAME', () => {
  test('a built-in name resolves to its file in data/benchmarks; anything else is a path', async () => {
    for (const s of BUILTIN_SUITES) {
      const r = resolveSuiteArg(s.name);
      expect(r).toEqual({ path: benchmarkPath(s.file), builtin: s, label: s.name });
      expect(await readSuiteArg('score', r)).toEqual(new Uint8Array(readFileSync(benchmarkPath(s.file))));
    }
    expect(resolveSuiteArg('runs/x/tasks/heldout.jsonl')).toEqual({
      path: 'runs/x/tasks/heldout.jsonl',
      label: 'runs/x/tasks/heldout.jsonl',
    });
    expect(resolveSuiteArg('./humaneval-x-js')).toEqual({ path: './humaneval-x-js', label: './humaneval-x-js' });
  });

  test.each([
    ['score', ['score', '--canonical']],
    ['eval', ['eval', '--checkpoint', 'no-such.ckpt']],
    ['train', ['train', '--out', join(tmpdir(), 'coderl-never-made')]],
  ])('coderl %s: an unknown name that is no file names the argument and lists the built-in names', async (cmd, argv) => {
    const c = capture();
    expect(await main([...argv, '--suite', 'humaneval-js'], c.io)).toBe(2);
    const msg = c.err.join('\n');
    expect(msg).toContain(`coderl ${cmd}: cannot read --suite humaneval-js: ENOENT`);
    expect(msg).toContain(`'humaneval-js' is not a built-in suite either (built-in suites: ${NAMES.join(', ')}; coderl suites lists them)`);
  });

  test('a built-in file that is missing says where it is looked for', async () => {
    const before = process.env.CODERL_DATA;
    process.env.CODERL_DATA = mkdtempSync(join(tmpdir(), 'coderl-nodata-'));
    try {
      const c = capture();
      expect(await main(['score', '--suite', 'humaneval-python', '--canonical'], c.io)).toBe(2);
      expect(c.err.join('\n')).toMatch(
        new RegExp(
          `^coderl score: cannot read the built-in suite humaneval-python \\(${process.env.CODERL_DATA}/humaneval-python\\.jsonl\\.gz\\): ENOENT.*CODERL_DATA names another folder`,
        ),
      );
      const l = capture();
      expect(await main(['suites'], l.io)).toBe(1);
      for (const n of NAMES) expect(l.err.join('\n')).toContain(`coderl suites: ${n}: cannot read `);
    } finally {
      if (before === undefined) delete process.env.CODERL_DATA;
      else process.env.CODERL_DATA = before;
    }
  });
});

describe('coderl suites', () => {
  test('--json lists every built-in suite with the task count and SHA-256 of its file', async () => {
    const c = capture();
    expect(await main(['suites', '--json'], c.io)).toBe(0);
    const rows = JSON.parse(c.out.join('')) as SuiteListing[];
    expect(rows.map((r) => r.name)).toEqual(NAMES);
    for (const [i, s] of BUILTIN_SUITES.entries()) {
      const bytes = readFileSync(benchmarkPath(s.file));
      expect(rows[i]).toEqual({
        name: s.name,
        title: s.title,
        language: s.language,
        tasks: s.tasks,
        file: benchmarkPath(s.file),
        sha256: createHash('sha256').update(bytes).digest('hex'),
        source: s.source,
        description: s.description,
      });
    }
    expect(rows.find((r) => r.name === 'humaneval-x-js')).toMatchObject({ language: 'javascript', tasks: 164 });
    expect(rows.find((r) => r.name === 'humaneval-python')).toMatchObject({ language: 'python', tasks: 164 });
  });

  test('the table: name, language, tasks and file on a line, then title, description and source', async () => {
    const c = capture();
    expect(await main(['suites'], c.io)).toBe(0);
    expect(c.out[0]).toMatch(/^name +language +tasks +file$/);
    for (const s of BUILTIN_SUITES) {
      const i = c.out.findIndex((l) => l.startsWith(`${s.name} `));
      expect(c.out[i]).toMatch(new RegExp(`^${s.name} +${s.language} +${s.tasks}  \\S*${s.file.replace(/\./g, '\\.')}$`));
      expect(c.out[i + 1]!.trim()).toBe(`${s.title}: ${s.description}`);
      expect(c.out[i + 2]!.trim()).toBe(`source: ${s.source}`);
    }
    expect(c.out.at(-1)).toMatch(/^folder: .*data\/benchmarks/);
  });
});

describe('coderl train --suite NAME', () => {
  test('records the built-in file as --suite FILE does (name, size, SHA-256), so either resumes the run', async () => {
    for (const s of BUILTIN_SUITES) {
      const byName = await suiteOption(s.name);
      const byFile = await suiteOption(benchmarkPath(s.file));
      const text = gunzipSync(readFileSync(benchmarkPath(s.file))).toString('utf8');
      expect(byName!.text).toBe(text);
      expect(byName!.ref).toEqual({ name: s.file, tasks: s.tasks, sha256: createHash('sha256').update(text).digest('hex') });
      expect(byFile).toEqual(byName);
    }
    expect(await suiteOption(undefined)).toBeUndefined();
  });
});
