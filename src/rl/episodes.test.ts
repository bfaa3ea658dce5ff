/**
 * scoreActions on an imported model (the Qwen2 fixture, cpu backend): scoring sequences of mixed
 * lengths together (sorted by length into passes, the LM head on the action rows only) gives each
 * sequence exactly the numbers it gets scored alone, in the order given; without logits (the
 * reward model's use) the values are the same and no log-probs are made.
 */
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadHfFolder } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { DEFAULT_OPTIM } from '../model/optim';
import { hfPolicyFactory } from '../policy/hf-train';
import { HF_FIXTURES } from '../testing/hf-fixtures';
import { Rng } from '../util/random';
import type { Sequence } from './data';
import { scoreActions } from './episodes';

test('mixed lengths scored together = each scored alone, in the given order; logits: false gives the same values', async () => {
  const model = await loadHfFolder(await nodeFolder(join(HF_FIXTURES, 'qwen2')));
  const f = hfPolicyFactory(model, { backend: 'cpu', lora: { rank: 2, alpha: 4, targets: ['q_proj', 'lm_head'] }, contextLength: 32 });
  const policy = f.init({ config: f.pretrained!.config, tokenizer: model.tokenizer }, 3, DEFAULT_OPTIM);
  const V = model.tokenizer.vocabSize;
  const pad = model.tokenizer.padId;
  const rng = new Rng(11);
  // lengths 4..30 in no order, prompts of 1..half of each
  const seqs: Sequence[] = Array.from({ length: 11 }, (_, i) => {
    const n = 4 + ((i * 7) % 27);
    return { ids: Array.from({ length: n }, () => Math.floor(rng.next() * V)), promptLength: 1 + ((i * 5) % Math.floor(n / 2)) };
  });
  const together = await scoreActions(policy, seqs, pad, 1 / 0.7, { batch: 4, entropy: true });
  const valuesOnly = await scoreActions(policy, seqs, pad, 1 / 0.7, { batch: 4, logits: false });
  for (const [i, s] of seqs.entries()) {
    const alone = await scoreActions(policy, [s], pad, 1 / 0.7, { entropy: true });
    const n = s.ids.length - s.promptLength;
    expect(together.logp[i]!.length, `sequence ${i}`).toBe(n);
    expect([...together.logp[i]!], `logp ${i}`).toEqual([...alone.logp[0]!]);
    expect([...together.entropy[i]!], `entropy ${i}`).toEqual([...alone.entropy[0]!]);
    expect([...together.values[i]!], `values ${i}`).toEqual([...alone.values[0]!]);
    expect([...valuesOnly.values[i]!], `values only ${i}`).toEqual([...alone.values[0]!]);
    expect(valuesOnly.logp[i]!.length).toBe(0);
    expect(together.logp[i]!.every((x) => Number.isFinite(x) && x < 0)).toBe(true);
  }
  policy.dispose();
});
