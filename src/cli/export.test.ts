/**
 * `coderl export` in-process: a finished run exported for each trainer; bad input (no --run, an
 * unknown --to, a missing, partial or unfinished run directory, a non-empty --out without --force,
 * a bad --serve-url or --checkpoint, --model for a lab run) exits 2 naming the path or flag.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { trainLabRun } from '../export/testing';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) },
    out,
    err,
    text: () => [...out, ...err].join('\n'),
  };
}

const root = mkdtempSync(join(tmpdir(), 'coderl-export-cli-'));
let run = '';
beforeAll(async () => {
  run = await trainLabRun(main, root);
}, 120_000);

async function exportCli(...args: string[]) {
  const c = capture();
  const code = await main(['export', ...args], c.io);
  return { code, text: c.text(), out: c.out };
}

describe('coderl export', () => {
  test('is listed, and exports a finished run for each trainer', async () => {
    const h = capture();
    expect(await main(['--help'], h.io)).toBe(0);
    expect(h.text()).toMatch(/export\s+write a run as a folder for a cluster RL trainer/);
    for (const to of ['verl', 'trl', 'openrlhf']) {
      const r = await exportCli('--run', run, '--to', to);
      expect(r.code, r.text).toBe(0);
      expect(r.out[0]).toMatch(new RegExp(`^wrote ${join(run, `export-${to}`)} for ${to}: \\d+ files; \\d+ settings mapped$`));
      expect(r.text).toMatch(/not carried \(NOTES\.md\): .*rl\.targetKl/);
      expect(existsSync(join(run, `export-${to}`, 'README.md'))).toBe(true);
    }
  });

  test('usage errors exit 2 and name the flag', async () => {
    expect(await exportCli('--to', 'verl')).toMatchObject({ code: 2, text: expect.stringMatching(/--run DIR is required/) });
    expect(await exportCli('--run', run, '--to', 'deepspeed')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/--to must be one of verl, trl, openrlhf, got 'deepspeed'/),
    });
    expect(await exportCli('--run', run)).toMatchObject({ code: 2, text: expect.stringMatching(/--to must be one of/) });
    expect(await exportCli('--run', run, '--to', 'trl', '--serve-url', 'ftp://x')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/--serve-url must be an http\(s\) URL/),
    });
    const missing = join(root, 'nope');
    expect(await exportCli('--run', missing, '--to', 'trl')).toMatchObject({
      code: 2,
      text: expect.stringContaining(`--run ${missing}: no such directory`),
    });
    expect(await exportCli('--run', run, '--to', 'trl', '--checkpoint', join(root, 'x.ckpt'), '--out', join(root, 'c'))).toMatchObject({
      code: 2,
      text: expect.stringContaining(`--checkpoint ${join(root, 'x.ckpt')}: no such file`),
    });
    expect(await exportCli('--run', run, '--to', 'trl', '--model', run, '--out', join(root, 'm'))).toMatchObject({
      code: 2,
      text: expect.stringMatching(/--model .*: the run trained the lab's GPT/),
    });
  });

  test('a partial or unfinished run directory is refused, naming what is missing', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    expect(await exportCli('--run', empty, '--to', 'verl')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/no config\.json, so not a run directory/),
    });
    const setupOnly = join(root, 'setup-only');
    mkdirSync(setupOnly);
    cpSync(join(run, 'config.json'), join(setupOnly, 'config.json'));
    expect(await exportCli('--run', setupOnly, '--to', 'verl')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/no tasks\/rl\.jsonl/),
    });
    const broken = join(root, 'broken');
    cpSync(run, broken, { recursive: true });
    writeFileSync(join(broken, 'config.json'), '{"cfg": {"preset": "tiny"}, "seed": 1}');
    expect(await exportCli('--run', broken, '--to', 'verl')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/broken\/config\.json: config\.model/),
    });
    const unfinished = join(root, 'unfinished');
    cpSync(run, unfinished, { recursive: true });
    rmSync(join(unfinished, 'summary.json'));
    rmSync(join(unfinished, 'export-verl'), { recursive: true, force: true });
    expect(await exportCli('--run', unfinished, '--to', 'verl')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/the run is not finished \(no summary\.json\).*--checkpoint sft or --checkpoint rl/),
    });
    expect((await exportCli('--run', unfinished, '--to', 'verl', '--checkpoint', 'sft')).code).toBe(0);
    rmSync(join(unfinished, 'policy.ckpt'));
    expect(await exportCli('--run', unfinished, '--to', 'trl', '--checkpoint', 'rl')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/no policy\.ckpt: RL has not finished an iteration yet/),
    });
  });

  test('a non-empty --out is refused unless --force, which replaces the export there', async () => {
    const out = join(root, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'mine.txt'), 'keep');
    expect(await exportCli('--run', run, '--to', 'openrlhf', '--out', out)).toMatchObject({
      code: 2,
      text: expect.stringContaining(`--out ${out}: exists and is not empty; choose a new folder, or pass --force`),
    });
    expect(existsSync(join(out, 'run.sh'))).toBe(false);
    expect((await exportCli('--run', run, '--to', 'openrlhf', '--out', out, '--force')).code).toBe(0);
    writeFileSync(join(out, 'data', 'stale.jsonl'), '');
    expect((await exportCli('--run', run, '--to', 'openrlhf', '--out', out, '--force')).code).toBe(0);
    expect(existsSync(join(out, 'run.sh'))).toBe(true);
    expect(existsSync(join(out, 'data', 'stale.jsonl'))).toBe(false); // the export's own folders are written anew
    expect(existsSync(join(out, 'mine.txt'))).toBe(true); // what is not the export's stays
  });
});
