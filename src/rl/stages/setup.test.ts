/**
 * Setup on every seed: the tokenizer is trained on each seed's own tasks, so a seed can make an
 * io prompt (random example strings) outgrow the context; setup shows such a prompt with fewer
 * examples instead of refusing the run, and leaves out only what no shorter form fits.
 */
import { describe, expect, test } from 'vitest';
import { labGptFactory } from '../../policy';
import { trainTokenizer } from '../../tokenizer';
import { resolveConfig, RL_PRESETS, type RlConfig } from '../config';
import { MemoryRunDir } from '../run-dir';
import { buildTaskSet, fitTaskSet } from '../tasks';
import { openRun } from './context';
import { setup } from './setup';

async function setupFor(cfg: RlConfig, seed: number) {
  const events: string[] = [];
  const run = await openRun({
    cfg,
    seed,
    store: new MemoryRunDir(),
    policies: labGptFactory('cpu'),
    // setup scores nothing: the stages after it do
    scorer: { pool: null as never, analyzer: null as never },
    onEvent: (e) => events.push(e.message),
  });
  return { ctx: await setup(run), events };
}

describe('setup on every seed', () => {
  for (const preset of Object.keys(RL_PRESETS)) {
    test(`${preset}: seeds 1 to 50 get past setup with every prompt fitting its context`, async () => {
      const cfg = resolveConfig(preset);
      const room = Math.max(cfg.rl.maxNewTokens, cfg.eval.maxNewTokens);
      for (let seed = 1; seed <= 50; seed++) {
        const { ctx } = await setupFor(cfg, seed);
        for (const k of ['train', 'val', 'rl', 'heldout'] as const) {
          expect(ctx.set[k].length, `seed ${seed} ${k}`).toBeGreaterThan(0);
          for (const t of ctx.set[k])
            expect(ctx.tok.encode(t.prompt).length + room, `seed ${seed} ${t.task_id}`).toBeLessThanOrEqual(cfg.model.contextLength);
        }
      }
    }, 120_000);
  }

  test('tiny seed 5: the one io prompt that outgrew the context is shown with fewer examples, its tests kept, and setup says so', async () => {
    const cfg = resolveConfig('tiny');
    const { ctx, events } = await setupFor(cfg, 5);
    const drawn = buildTaskSet({ seed: 5, ...cfg.tasks });
    const all = (s: typeof drawn) => [...s.train, ...s.val, ...s.rl, ...s.heldout];
    const before = new Map(all(drawn).map((t) => [t.task_id, t]));
    const changed = all(ctx.set).filter((t) => t.prompt !== before.get(t.task_id)!.prompt);
    expect(changed.map((t) => t.task_id)).toEqual(['coderl/io/repeat/4']);
    const [t] = changed;
    expect(t!.tests).toBe(before.get(t!.task_id)!.tests);
    expect(t!.meta.examples).toBe(2);
    expect(t!.prompt.split('->').length - 1).toBe(2);
    expect(all(ctx.set)).toHaveLength(all(drawn).length);
    expect(events.join('\n')).toMatch(/1 io prompt\(s\) shown with fewer examples to fit the context \(coderl\/io\/repeat\/4\)/);
  });

  test('a prompt no shorter form fits is left out (and a suite task is never rewritten); a split left empty refuses the run, naming the settings', async () => {
    const set = buildTaskSet({ seed: 1 });
    const tok = trainTokenizer(
      [...set.train, ...set.val].map((t) => t.prompt + t.demonstration),
      { vocabSize: 512 },
    );
    const fits = (t: { prompt: string }) => tok.encode(t.prompt).length <= 40;
    const built = fitTaskSet(set, fits, true);
    const suite = fitTaskSet(set, fits, false);
    expect(built.shortened.length).toBeGreaterThan(0);
    expect(suite.shortened).toEqual([]);
    expect(suite.dropped.length).toBeGreaterThan(built.dropped.length);
    for (const t of [...built.set.train, ...built.set.heldout]) expect(fits(t)).toBe(true);
    const cfg = resolveConfig('tiny', { rl: { maxNewTokens: 120 } });
    await expect(setupFor(cfg, 1)).rejects.toThrow(
      /prompt fits 8 tokens \(the context of 128 less 120 new tokens, the larger of rl.maxNewTokens and eval.maxNewTokens\): lower them or raise model.contextLength/,
    );
  });
});
