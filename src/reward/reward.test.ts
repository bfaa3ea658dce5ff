import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { createAnalyzer, type Analyzer } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { main } from '../cli/main';
import type { ScoreRecord } from '../sandbox/score';
import { computeReward, countTokens, DEFAULT_REWARD, validateRewardConfig } from './reward';

let analyzer: Analyzer;
beforeAll(async () => {
  analyzer = await createAnalyzer(nodeWasmLoader);
});

const prompt = 'const isEven = (n) => {\n';
const clean = '  return n % 2 === 0;\n};\n';
const sloppy = '  var unused = 3;\n  if (n % 2 == 0) { return true; } else { return false; }\n};\n';
const broken = '  return n % 2 === (0;\n};\n';

describe('computeReward', () => {
  test('every component has raw, weight and contribution, and they sum to the total', () => {
    const r = computeReward(clean, { verdict: 'passed', tests_passed: 3, tests_total: 3 }, analyzer.analyze(clean, { prompt }));
    expect(r.components.map((c) => c.name)).toEqual(['test_pass', 'all_pass', 'ast_valid', 'lint', 'complexity', 'length']);
    for (const c of r.components) expect(c.contribution).toBeCloseTo(c.raw === null ? 0 : c.sign * c.weight * c.raw, 12);
    expect(r.total).toBeCloseTo(
      r.components.reduce((a, c) => a + c.contribution, 0),
      12,
    );
    expect(r.total).toBeCloseTo(DEFAULT_REWARD.testPass + DEFAULT_REWARD.allPass + DEFAULT_REWARD.astValid, 12);
  });

  test('lint findings, syntax errors and failures lower the reward; tampering earns no test credit', () => {
    const passAll = { verdict: 'passed' as const, tests_passed: 3, tests_total: 3 };
    const good = computeReward(clean, passAll, analyzer.analyze(clean, { prompt })).total;
    const lintHeavy = computeReward(sloppy, passAll, analyzer.analyze(sloppy, { prompt }));
    expect(lintHeavy.total).toBeLessThan(good);
    expect(lintHeavy.components.find((c) => c.name === 'lint')!.raw).toBeCloseTo(1.1, 12); // eqeqeq 0.5 + no-unused-vars 0.5 + no-var 0.1
    const syntax = computeReward(broken, { verdict: 'error', tests_passed: 0, tests_total: 3 }, analyzer.analyze(broken, { prompt }));
    expect(syntax.components.find((c) => c.name === 'ast_valid')!.raw).toBe(0);
    const tampered = computeReward(clean, { verdict: 'tampering', tests_passed: 0, tests_total: 3 }, null);
    expect(tampered.components.slice(0, 2).map((c) => c.contribution)).toEqual([0, 0]);
    expect(tampered.components.find((c) => c.name === 'lint')!.raw).toBeNull(); // no analysis: not measured
  });

  test('the length penalty starts past lengthFree tokens', () => {
    const long = 'x + '.repeat(300);
    expect(countTokens(long)).toBe(600);
    const r = computeReward(long, { verdict: 'failed', tests_passed: 0, tests_total: 1 }, null, { ...DEFAULT_REWARD, lengthFree: 200 });
    expect(r.components.find((c) => c.name === 'length')!.raw).toBeCloseTo(2, 12);
  });

  test('weights are validated and errors name the field', () => {
    expect(validateRewardConfig({ lint: 0.5 }).lint).toBe(0.5);
    expect(() => validateRewardConfig({ lnt: 1 })).toThrow(/unknown field "lnt"/);
    expect(() => validateRewardConfig({ testPass: -1 })).toThrow(/reward\.testPass: must be a finite number >= 0, got -1/);
    expect(() => validateRewardConfig({ lengthFree: 0 })).toThrow(/lengthFree: must be > 0/);
  });
});

describe('coderl score adds analysis and the reward to every record', () => {
  test('ranks a clean solution above a sloppy one that passes the same tests; the cache serves repeats', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'coderl-reward-'));
    const suite = join(dir, 'suite.jsonl');
    const tests = 'console.assert(isEven(2) === true);\nconsole.assert(isEven(3) === false);\n';
    writeFileSync(suite, `${JSON.stringify({ task_id: 't/even', language: 'javascript', prompt, entry_point: 'isEven', tests })}\n`);
    const completions = join(dir, 'c.jsonl');
    writeFileSync(completions, [clean, sloppy, clean, broken].map((c) => JSON.stringify({ task_id: 't/even', completion: c })).join('\n'));
    const out = join(dir, 'r.jsonl');
    const err: string[] = [];
    const code = await main(
      ['score', '--suite', suite, '--completions', completions, '--out', out, '--workers', '1', '--reward', '{"lint": 0.05}'],
      {
        out: (t) => void err.push(t),
        err: (t) => void err.push(t),
      },
    );
    expect(code).toBe(0);
    const recs = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ScoreRecord);
    expect(recs.map((r) => r.passed)).toEqual([true, true, true, false]);
    expect(recs[0]!.reward!.total).toBeGreaterThan(recs[1]!.reward!.total);
    expect(recs[1]!.lint!.map((f) => f.ruleId)).toEqual(expect.arrayContaining(['eqeqeq', 'no-unused-vars']));
    expect(recs[1]!.reward!.components.find((c) => c.name === 'lint')!.weight).toBe(0.05);
    expect(recs[3]!.ast!.valid).toBe(false);
    expect(recs[3]!.reward!.total).toBeLessThan(recs[1]!.reward!.total);
    expect(err.join('\n')).toMatch(/analysis cache: 1 hits, 3 misses \(hit rate 25\.0%\)/);
    expect(err.join('\n')).toMatch(/reward: mean /);
  });
});
