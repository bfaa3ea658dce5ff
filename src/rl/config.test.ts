/** RL presets and config validation. */
import { describe, expect, test } from 'vitest';
import { mergeConfig, resolveConfig, RL_PRESETS, validateRlConfig } from './config';

describe('RL config', () => {
  test('every preset validates', () => {
    for (const name of Object.keys(RL_PRESETS)) expect(resolveConfig(name).preset).toBe(name);
  });
  test("composer2-scaled keeps the seed report's clip and entropy and states its scalings", () => {
    const c = resolveConfig('composer2-scaled');
    expect(c.rl.clip).toBe(0.2);
    expect(c.rl.entCoef).toBe(0.01);
    expect(c.rl.promptsPerIteration * c.rl.samplesPerPrompt).toBe(64);
  });
  test('overrides merge deeply', () => {
    const c = resolveConfig('tiny', { rl: { algo: 'grpo', kl: { coef: 0.5 } }, explore: { repair: true } });
    expect(c.rl.algo).toBe('grpo');
    expect(c.rl.kl.coef).toBe(0.5);
    expect(c.rl.kl.target).toBe(RL_PRESETS.tiny!.rl.kl.target);
    expect(c.rl.clip).toBe(RL_PRESETS.tiny!.rl.clip);
    expect(c.explore.repair).toBe(true);
    expect(mergeConfig({ a: [1, 2] }, { a: [3] })).toEqual({ a: [3] });
  });
  test('errors name the field and the rule', () => {
    expect(() => resolveConfig('huge')).toThrow(/unknown preset "huge" \(presets: quick, tiny, small, composer2-scaled\)/);
    expect(() => resolveConfig('tiny', { rl: { clip: 2 } })).toThrow(/config\.rl\.clip: must be a number in \[0\.001, 0\.999\], got 2/);
    expect(() => resolveConfig('tiny', { rl: { algo: 'dpo' } })).toThrow(/config\.rl\.algo: must be one of ppo, grpo, got "dpo"/);
    expect(() => resolveConfig('tiny', { sft: { batch: 1.5 } })).toThrow(/config\.sft\.batch: must be an integer/);
    expect(() => resolveConfig('tiny', { rl: { lr2: 1 } })).toThrow(/config\.rl: unknown field "lr2"/);
    expect(() => resolveConfig('tiny', { promptFormat: 'xml' })).toThrow(
      /config\.promptFormat: must be one of auto, chat, completion, got "xml"/,
    );
    expect(resolveConfig('tiny', { promptFormat: 'chat' }).promptFormat).toBe('chat');
    expect(() => resolveConfig('tiny', { model: { nLayer: 0 } })).toThrow(/config\.model\.nLayer/);
    expect(() => resolveConfig('tiny', { tasks: { families: ['spec', 'poetry'] } })).toThrow(/config\.tasks\.families/);
    expect(() => resolveConfig('tiny', { eval: { k: [1, 8] } })).toThrow(/config\.eval\.k: .*1\.\.eval\.samples \(4\)/);
    expect(() => resolveConfig('tiny', { rl: { algo: 'grpo', samplesPerPrompt: 1 } })).toThrow(/GRPO needs groups of at least 2/);
    expect(() => resolveConfig('tiny', { reward: { testPass: -1 } })).toThrow(/config\.reward\.testPass/);
    expect(() => resolveConfig('tiny', { explore: { api: 'loud' } })).toThrow(/config\.explore\.api: must be one of off, bias, mask/);
  });
  test("rm.score: the likelihood by default, a run's config.json from before it existed reads as a value head, and its values are checked", () => {
    expect(resolveConfig('tiny').rm).toMatchObject({ score: 'likelihood', beta: 2, lr: 1e-4 });
    const old = structuredClone(resolveConfig('tiny')) as unknown as { rm: Record<string, unknown> };
    delete old.rm.score;
    delete old.rm.beta;
    expect(validateRlConfig(old).rm).toMatchObject({ score: 'value', beta: 1 });
    expect(resolveConfig('tiny', { rm: { score: 'likelihood', beta: 2 } }).rm).toMatchObject({ score: 'likelihood', beta: 2 });
    expect(() => resolveConfig('tiny', { rm: { score: 'logits' } })).toThrow(
      /config\.rm\.score: must be one of value, likelihood, value\+likelihood, got "logits"/,
    );
    expect(() => resolveConfig('tiny', { rm: { score: 'likelihood', objective: 'regression' } })).toThrow(
      /config\.rm\.score: "likelihood" cannot be trained by regression/,
    );
    expect(() => resolveConfig('tiny', { rm: { beta: 0 } })).toThrow(/config\.rm\.beta: must be a number in \[0\.001, 1000\], got 0/);
  });
});
