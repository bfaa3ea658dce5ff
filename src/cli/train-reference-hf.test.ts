/**
 * `coderl train --reference DIR`: a Hugging Face model folder as the KL reference. A run is
 * trained once; copies of it resume at PPO with (a) its own sft.ckpt written by `coderl export-hf`
 * as the reference (the same model: KL ~ 0, as without --reference; the config records "hf/" and
 * the folder's SHA-256), (b) the qwen2 fixture (another tokenizer: refused naming both tokenizers),
 * (c) a folder the loader refuses (exit 2, the loader's message); --reference-tokenizer with a
 * folder is a usage error. --reference M.onnx keeps working (train-reference.test.ts).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { nodeFolder } from '../hf/node';
import { loadHfReferenced } from '../rl/reference-hf';
import { MINI_RUN } from '../rl/testing';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

const QWEN2 = join(import.meta.dirname, '../../data/hf-fixtures/qwen2');
const root = mkdtempSync(join(tmpdir(), 'coderl-train-ref-hf-'));
const base = join(root, 'base');
const hf = join(root, 'hf');
const args = (out: string) => [
  'train',
  '--preset',
  'tiny',
  '--seed',
  '2',
  '--out',
  out,
  '--set',
  JSON.stringify(MINI_RUN),
  '--quiet',
  '--workers',
  '1',
];

/** A copy of the finished base run with everything from PPO on removed: a rerun redoes PPO only. */
function ppoOnlyCopy(name: string): string {
  const dir = join(root, name);
  cpSync(base, dir, { recursive: true });
  for (const f of ['config.json', 'ppo-state.json', 'policy.ckpt', 'summary.json', 'rollouts'])
    rmSync(join(dir, f), { recursive: true, force: true });
  const kept = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => !/^\{"stage":"(ppo|rl-eval)"/.test(l));
  writeFileSync(join(dir, 'metrics.jsonl'), kept.join('\n') + '\n');
  return dir;
}

const ppoKl = (dir: string): number => {
  const ppo = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.stage === 'ppo');
  expect(ppo).toHaveLength(1);
  return ppo[0]!['objective/kl'] as number;
};

beforeAll(async () => {
  expect(await main(args(base), capture().io)).toBe(0);
  const c = capture();
  expect(await main(['export-hf', '--checkpoint', join(base, 'sft.ckpt'), '--out', hf], c.io), c.err.join('\n')).toBe(0);
}, 180_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('coderl train --reference DIR (a Hugging Face folder)', () => {
  test("the run's own SFT model exported with coderl export-hf: the KL of the run without a reference (~0); the config names the folder", async () => {
    const dir = ppoOnlyCopy('same');
    const t = capture();
    expect(await main([...args(dir), '--reference', hf], t.io), t.err.join('\n')).toBe(0);
    const without = ppoKl(base);
    expect(Math.abs(without)).toBeLessThan(1e-6);
    expect(Math.abs(ppoKl(dir) - without)).toBeLessThan(1e-4); // both the float64 cpu model; the export is float32
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { cfg: { rl: { reference?: unknown } } };
    expect(cfg.cfg.rl.reference).toEqual((await loadHfReferenced(await nodeFolder(hf))).ref);
    expect(cfg.cfg.rl.reference).toMatchObject({ name: 'hf/', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  }, 120_000);

  test('a folder with another tokenizer is refused naming both tokenizers and the first id that differs', async () => {
    const dir = ppoOnlyCopy('qwen2');
    const t = capture();
    expect(await main([...args(dir), '--reference', QWEN2], t.io)).toBe(1);
    expect(t.err.join('\n')).toMatch(
      /^coderl train: .*qwen2 \(--reference\): its tokenizer \(.*qwen2\/tokenizer\.json, 459 ids\) is not the run's \(the run's tokenizer\.json, \d+ ids\): id \d+ is .* in .*qwen2\/tokenizer\.json and .* in the run's tokenizer\.json/,
    );
  }, 120_000);

  test('a folder the loader refuses, and --reference-tokenizer with a folder, are usage errors (exit 2)', async () => {
    const bad = join(root, 'no-tokenizer');
    cpSync(QWEN2, bad, { recursive: true });
    rmSync(join(bad, 'tokenizer.json'));
    const t = capture();
    expect(await main([...args(join(root, 'x')), '--reference', bad], t.io)).toBe(2);
    expect(t.err.join('\n')).toContain(`coderl train: ${bad}: no tokenizer.json (a Hugging Face model folder has config.json`);
    const u = capture();
    expect(await main([...args(join(root, 'y')), '--reference', hf, '--reference-tokenizer', 't.json'], u.io)).toBe(2);
    expect(u.err.join('\n')).toMatch(/--reference-tokenizer is for an ONNX file; the folder .*hf has its own tokenizer\.json/);
  }, 60_000);
});
