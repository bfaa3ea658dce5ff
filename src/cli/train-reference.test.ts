/**
 * `coderl train --reference M.onnx`: the KL reference is the ONNX model. A run is trained once;
 * copies of it resume at PPO with (a) the export of its own SFT checkpoint as the reference (the
 * same model: KL ~ 0, as without --reference), (b) a random model with the run's tokenizer (a
 * large KL: the reference is really used), (c) a model with another tokenizer (refused).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadModel } from '../model/model-file';
import { exportOnnx } from '../onnx/export';
import { bigramForSuite, tinySnapshot } from '../onnx/testing';
import { MINI_RUN } from '../rl/testing';
import { main } from './main';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

const root = mkdtempSync(join(tmpdir(), 'coderl-train-ref-'));
const base = join(root, 'base');
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
  // config.json goes too: the rerun's config names its reference model (config.rl.reference)
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
  const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const ppo = lines.filter((l) => l.stage === 'ppo');
  expect(ppo).toHaveLength(1);
  return ppo[0]!['objective/kl'] as number;
};

beforeAll(async () => {
  const t = capture();
  expect(await main(args(base), t.io)).toBe(0);
  const c = capture();
  expect(await main(['onnx', 'export', '--checkpoint', join(base, 'sft.ckpt'), '--out', join(root, 'sft.onnx')], c.io)).toBe(0);
}, 180_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('coderl train --reference', () => {
  test("the export of the run's own SFT model as the reference gives the KL of the run without it (~0)", async () => {
    const dir = ppoOnlyCopy('same');
    const t = capture();
    expect(await main([...args(dir), '--reference', join(root, 'sft.onnx')], t.io)).toBe(0);
    expect(t.out.join('\n')).toMatch(/RL \(ppo, 1 iterations\)/);
    const without = ppoKl(base);
    const withRef = ppoKl(dir);
    expect(Math.abs(without)).toBeLessThan(1e-6); // policy == reference at the first iteration
    expect(Math.abs(withRef - without)).toBeLessThan(1e-3); // float32 ORT vs the float64 CPU model
    // the config names the reference; resuming PPO without it is refused, naming the model
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
      cfg: { rl: { reference?: { name: string; sha256: string } } };
    };
    expect(cfg.cfg.rl.reference?.name).toBe('sft.onnx');
    expect(cfg.cfg.rl.reference?.sha256).toMatch(/^[0-9a-f]{64}$/);
    for (const f of ['ppo-state.json', 'policy.ckpt', 'summary.json', 'rollouts']) rmSync(join(dir, f), { recursive: true, force: true });
    const r = capture();
    expect(await main(args(dir), r.io)).toBe(1);
    expect(r.err.join('\n')).toMatch(
      /coderl train: the run directory holds a run with a different config or seed: rl\.reference \(stored \{"name":"sft\.onnx","sha256":"[0-9a-f]+/,
    );
  }, 120_000);

  test("a different model with the run's tokenizer is the reference: the KL is large", async () => {
    const sft = loadModel(readFileSync(join(base, 'sft.ckpt')));
    const rand = join(root, 'rand.onnx');
    writeFileSync(rand, exportOnnx(tinySnapshot(sft.config, 9, 1)));
    writeFileSync(join(root, 'other-name.json'), readFileSync(join(base, 'tokenizer.json')));
    const dir = ppoOnlyCopy('random');
    const t = capture();
    expect(await main([...args(dir), '--reference', rand, '--reference-tokenizer', join(root, 'other-name.json')], t.io)).toBe(0);
    expect(ppoKl(dir)).toBeGreaterThan(0.1);
  }, 120_000);

  test('a reference with another tokenizer is refused naming the file; bad usage is exit 2', async () => {
    const { model, tok } = bigramForSuite();
    const m = join(root, 'bigram.onnx');
    writeFileSync(m, model);
    writeFileSync(join(root, 'bigram.tokenizer.json'), JSON.stringify(tok.toJSON()));
    const dir = ppoOnlyCopy('other-tok');
    const t = capture();
    expect(await main([...args(dir), '--reference', m], t.io)).toBe(1);
    expect(t.err.join('\n')).toMatch(
      /^coderl train: .*bigram\.onnx \(--reference\): its tokenizer differs from the policy's \(vocab 258 vs \d+\)/,
    );
    const u = capture();
    expect(await main([...args(join(root, 'x')), '--reference-tokenizer', 't.json'], u.io)).toBe(2);
    expect(u.err.join('\n')).toMatch(/--reference-tokenizer needs --reference M\.onnx/);
    const missing = capture();
    expect(await main([...args(join(root, 'y')), '--reference', join(root, 'nope.onnx')], missing.io)).toBe(2);
    expect(missing.err.join('\n')).toMatch(/nope\.onnx/);
  }, 120_000);
});
