/** Sampling for the RL pipeline: syntax-constrained resampling, combined constraints, the API-guide hook. */
import { beforeAll, describe, expect, test } from 'vitest';
import { loadJsSyntax, type JsSyntax } from '../analysis';
import { nodeWasmLoader } from '../analysis/wasm-node';
import { createBackend } from '../model/backend';
import { initParams } from '../model/init';
import { DEFAULT_OPTIM } from '../model/optim';
import { paramTable } from '../model/params';
import { trainTokenizer } from '../tokenizer';
import { exploreHook } from './explore-hook';
import { combineConstraints, firstNonViable, sampleTasks } from './sample';
import { buildTaskSet } from './tasks';

let syntax: JsSyntax;
beforeAll(async () => {
  syntax = await loadJsSyntax(nodeWasmLoader);
});

const set = buildTaskSet({ seed: 2, families: ['spec'] });
const tok = trainTokenizer(
  [...set.train].map((t) => t.prompt + t.reference),
  { vocabSize: 320 },
);
const prompt = '// add 3 to x\nfunction f(x) {\n';
const ids = (s: string) => Array.from(tok.encode(s));

describe('firstNonViable', () => {
  test('a completion that closes the function is viable, with or without EOS', () => {
    expect(firstNonViable(syntax, tok, prompt, ids('  return x + 3;\n}\n'))).toBe(-1);
    expect(firstNonViable(syntax, tok, prompt, [...ids('  return x + 3;\n}\n'), tok.eosId])).toBe(-1);
  });
  test('names the first token that kills the prefix, and an EOS that ends an unfinished program', () => {
    const good = ids('  return x;\n}\n');
    expect(firstNonViable(syntax, tok, prompt, [...good, ...ids('}'), ...ids('\n')])).toBe(good.length);
    const open = ids('  return x + 3;\n');
    expect(firstNonViable(syntax, tok, prompt, [...open, tok.eosId])).toBe(open.length);
  });
});

describe('combineConstraints', () => {
  test('biases add and masks intersect', () => {
    const a = { bias: Float32Array.from([1, 0]), allowMask: Uint32Array.from([0b11]) };
    const b = { bias: Float32Array.from([0.5, 2]), allowMask: Uint32Array.from([0b10]) };
    const c = combineConstraints(a, b)!;
    expect(Array.from(c.bias!)).toEqual([1.5, 2]);
    expect(Array.from(c.allowMask!)).toEqual([0b10]);
    expect(combineConstraints(null, b)).toBe(b);
  });
});

describe('sampleTasks', () => {
  const config = { nLayer: 1, dModel: 32, nHead: 2, contextLength: 96, vocabSize: tok.vocabSize };
  const backend = createBackend('cpu', { config, params: initParams(paramTable(config), 4), optim: DEFAULT_OPTIM });
  const tasks = set.heldout.slice(0, 6);

  test('syntax-constrained sampling rejects and resamples non-viable tokens: fewer dead samples, lengths kept consistent', async () => {
    const opts = { samplesPerTask: 4, temperature: 1, maxNewTokens: 12, seed: 9 };
    const free = await sampleTasks(backend, tok, tasks, opts);
    const constrained = await sampleTasks(backend, tok, tasks, { ...opts, syntax, syntaxRetries: 8 });
    const dead = (ss: typeof free) => ss.filter((s) => firstNonViable(syntax, tok, s.task.prompt, s.tokens) >= 0).length;
    expect(constrained.reduce((a, s) => a + s.syntaxRejections, 0)).toBeGreaterThan(0);
    expect(dead(constrained)).toBeLessThan(dead(free));
    for (const s of constrained) {
      expect(s.logprobs.length).toBe(s.tokens.length);
      expect(s.tokens.length).toBeLessThanOrEqual(12);
      expect(s.completion).toBe(tok.decode(s.tokens.filter((t) => t !== tok.eosId)));
    }
  }, 60_000);

  test('the API guide plugs in as the constrain hook and reports its counters', async () => {
    const hook = exploreHook(tok, { syntax: false, api: 'mask', apiStrength: 2, repair: false })!;
    const strTasks = buildTaskSet({ seed: 2, families: ['spec'] })
      .heldout.filter((t) => t.prompt.includes('function f(s)'))
      .slice(0, 4);
    await sampleTasks(backend, tok, strTasks, { samplesPerTask: 2, temperature: 1, maxNewTokens: 12, seed: 1, constrain: hook.constrain });
    const m = hook.metrics();
    expect(Object.keys(m).some((k) => k.startsWith('explore/api_'))).toBe(true);
    expect(exploreHook(tok, { syntax: true, api: 'off', apiStrength: 2, repair: true })).toBeUndefined();
  }, 60_000);
});
