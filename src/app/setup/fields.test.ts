import { describe, expect, test } from 'vitest';
import { RL_PRESETS, resolveConfig } from '../../rl/config';
import {
  applyField,
  changedCount,
  effective,
  explainError,
  fieldAt,
  fieldError,
  fieldOfError,
  FIELDS,
  fieldView,
  getPath,
  isChanged,
  parseField,
  SECTIONS,
  staleNotice,
  withOverride,
  type Drafts,
} from './fields';

describe('settings form fields', () => {
  test('every field is a real config path with a value of its kind in every preset (an optional one: what its absence means)', () => {
    for (const preset of Object.keys(RL_PRESETS)) {
      const cfg = resolveConfig(preset);
      for (const f of FIELDS) {
        const v = getPath(cfg, f.path) ?? f.absent;
        const want = f.kind === 'bool' ? 'boolean' : f.kind === 'enum' ? 'string' : 'number';
        expect(typeof v, `${preset} ${f.path}`).toBe(want);
        if (f.kind === 'enum') expect(f.values).toContain(v);
        expect(fieldError(preset, f.path, v), `${preset} ${f.path}`).toBeNull();
      }
    }
  });

  test('an optional setting: its absence shows as what it means; choosing that again removes it', () => {
    const f = FIELDS.find((x) => x.path === 'promptFormat')!;
    expect(fieldView('tiny', {}, f, undefined, null).value).toBe('auto');
    expect(isChanged('tiny', {}, f)).toBe(false);
    const o = withOverride({}, 'tiny', 'promptFormat', 'chat');
    expect(o).toEqual({ promptFormat: 'chat' });
    expect(isChanged('tiny', o, f)).toBe(true);
    expect(withOverride(o, 'tiny', 'promptFormat', 'auto')).toEqual({});
    expect(fieldError('tiny', 'promptFormat', 'xml')).toMatch(/must be one of auto, chat, completion/);
  });

  test('overrides keep only the difference from the preset', () => {
    let o = withOverride({}, 'tiny', 'rl.kl.coef', 0.5);
    expect(o).toEqual({ rl: { kl: { coef: 0.5 } } });
    o = withOverride(o, 'tiny', 'rl.lr', 1e-3);
    expect(o).toEqual({ rl: { lr: 1e-3, kl: { coef: 0.5 } } });
    o = withOverride(o, 'tiny', 'rl.kl.coef', RL_PRESETS.tiny!.rl.kl.coef);
    expect(o).toEqual({ rl: { lr: 1e-3 } });
    o = withOverride(o, 'tiny', 'rl.lr', RL_PRESETS.tiny!.rl.lr);
    expect(o).toEqual({});
    expect(withOverride({ model: { dModel: 32 } }, 'tiny', 'reward.lint', 0)).toEqual({ model: { dModel: 32 }, reward: { lint: 0 } });
    // the input is not changed; a value equal to the preset where no override exists changes nothing
    const input = { sft: { lr: 0.1 } };
    expect(withOverride(input, 'tiny', 'rl.clip', RL_PRESETS.tiny!.rl.clip)).toEqual(input);
    withOverride(input, 'tiny', 'sft.lr', RL_PRESETS.tiny!.sft.lr);
    expect(input).toEqual({ sft: { lr: 0.1 } });
    expect(getPath(effective('tiny', o), 'rl.lr')).toBe(RL_PRESETS.tiny!.rl.lr);
    expect(getPath(effective('tiny', { rl: { lr: 7 } }), 'rl.lr')).toBe(7);
    expect(effective('nope', {})).toBeNull();
  });

  test('text parses by kind; the validator names the problem', () => {
    const f = (p: string) => FIELDS.find((x) => x.path === p)!;
    expect(parseField(f('rl.iterations'), ' 12 ')).toEqual({ value: 12, error: null });
    expect(parseField(f('rl.iterations'), '1.5').error).toMatch(/whole number/);
    expect(parseField(f('rl.lr'), 'abc').error).toMatch(/not a number: "abc"/);
    expect(parseField(f('rl.lr'), '').error).toBe('required');
    expect(parseField(f('rl.algo'), 'dqn').error).toMatch(/one of ppo, grpo/);
    expect(fieldError('tiny', 'rl.clip', 3)).toBe('must be a number in [0.001, 0.999], got 3');
    expect(fieldError('tiny', 'reward.lint', -1)).toMatch(/must be a finite number >= 0, got -1/);
    expect(fieldError('tiny', 'rl.lr', 1e-3)).toBeNull();
    expect(fieldOfError('config.rl.kl.coef: must be a number in [0, 100], got -1')?.label).toBe('KL coefficient');
    expect(fieldOfError('config.model.dModel: must be a multiple of nHead')).toBeNull();
    expect(fieldOfError('not valid JSON')).toBeNull();
  });

  const section = (id: string) => SECTIONS.find((x) => x.id === id)!;
  const invalid = (text: string, error = 'bad'): Drafts[string] => ({ text, error });

  test('(1) while a field holds invalid text, the form says the JSON is not updated and what it keeps', () => {
    expect(staleNotice('tiny', {}, {})).toBeNull();
    expect(staleNotice('tiny', {}, { 'rl.lr': { text: '0.001', error: null } })).toBeNull(); // a valid draft is in the JSON
    expect(staleNotice('tiny', {}, { 'rl.lr': invalid('abc') })).toBe(
      'Overrides (JSON) not updated: Reinforcement learning → Learning rate holds "abc", so the JSON keeps rl.lr at 0.0003 ' +
        "(the preset's). Fix or reset that field and the JSON follows.",
    );
    const two = staleNotice('tiny', { sft: { lr: 0.01 } }, { 'sft.lr': invalid('x'), 'eval.samples': invalid('') })!;
    expect(two).toMatch(/Supervised fine-tuning → Learning rate holds "x", so the JSON keeps sft\.lr at 0\.01 \(your last valid value\)/);
    expect(two).toMatch(
      /Evaluation → Samples per task holds "", so the JSON keeps eval\.samples at 4 \(the preset's\)\. Fix or reset those fields/,
    );
  });

  test('(2) every invalid field offers a reset to the preset, changed or not', () => {
    const lr = fieldAt('rl.lr')!;
    const parsed = parseField(lr, 'abc');
    const view = fieldView('tiny', {}, lr, { text: 'abc', error: parsed.error }, null);
    expect(view).toMatchObject({ error: 'not a number: "abc"', reset: true, presetValue: 3e-4, changed: true });
    // an error from the JSON box at a field also offers it, and an unchanged valid field does not
    const clip = fieldView(
      'tiny',
      { rl: { clip: 3 } },
      fieldAt('rl.clip')!,
      undefined,
      'config.rl.clip: must be a number in [0.001, 0.999], got 3',
    );
    expect(clip).toMatchObject({ error: 'must be a number in [0.001, 0.999], got 3', reset: true, presetValue: 0.2 });
    expect(fieldView('tiny', {}, lr, undefined, null)).toMatchObject({ error: null, reset: false, changed: false });
  });

  test('(3) "n changed" counts every field that differs from the preset, invalid text included, and only those', () => {
    const rl = section('rl');
    expect(changedCount('tiny', { rl: { lr: 1e-3 } }, rl, { 'rl.clip': invalid('abc') })).toBe(2);
    expect(changedCount('tiny', { rl: { lr: 1e-3, kl: { coef: 0.5 } } }, rl, {})).toBe(2);
    // an override equal to the preset's value (typed into the JSON) is no change
    expect(changedCount('tiny', { rl: { lr: RL_PRESETS.tiny!.rl.lr } }, rl, {})).toBe(0);
    // a valid draft is already in the overrides: counted once
    expect(changedCount('tiny', { rl: { lr: 1e-3 } }, rl, { 'rl.lr': { text: '0.001', error: null } })).toBe(1);
  });

  test('(4) eval samples derives the hidden eval.k: 1 sample is no error, and k follows the preset again', () => {
    expect(fieldError('tiny', 'eval.samples', 1)).toBeNull();
    const one = applyField({}, 'tiny', 'eval.samples', 1);
    expect(one).toEqual({ eval: { samples: 1, k: [1] } });
    expect(resolveConfig('tiny', one).eval.k).toEqual([1]);
    expect(applyField(one, 'tiny', 'eval.samples', 2)).toEqual({ eval: { samples: 2, k: [1, 2] } });
    expect(applyField(one, 'tiny', 'eval.samples', RL_PRESETS.tiny!.eval.samples)).toEqual({});
    expect(applyField({}, 'small', 'eval.samples', 4)).toEqual({ eval: { samples: 4, k: [1] } });
    // a k list of the user's own (from the JSON) is clamped, not replaced
    expect(applyField({ eval: { samples: 8, k: [2, 3, 8] } }, 'tiny', 'eval.samples', 3)).toEqual({ eval: { samples: 3, k: [2, 3] } });
    expect(applyField({ eval: { samples: 8, k: [8] } }, 'tiny', 'eval.samples', 2)).toEqual({ eval: { samples: 2, k: [1] } });
    // resetting eval samples also fixes a k list from the JSON that the preset's count cannot hold
    expect(applyField({ eval: { k: [1, 5] } }, 'tiny', 'eval.samples', RL_PRESETS.tiny!.eval.samples)).toEqual({ eval: { k: [1] } });
  });

  test('(4) an error about a setting the form does not show is put at the shown field that causes it, naming it', () => {
    const k = explainError('config.eval.k: must be a non-empty list of integers in 1..eval.samples (4), got [1,5]');
    expect(k.field?.path).toBe('eval.samples');
    expect(k.text).toBe(
      'the pass@k list eval.k, set in the Overrides JSON, is [1,5]; every k must be a whole number from 1 to Samples per task (4): ' +
        'raise Samples per task, or edit eval.k in the JSON',
    );
    const real = fieldView('tiny', { eval: { k: [1, 5] } }, fieldAt('eval.samples')!, undefined, errOf({ eval: { k: [1, 5] } }));
    expect(real.error).toBe(k.text);
    expect(real.reset).toBe(true);
    expect(real.hint).toBe('pass@k is reported for k = 1, 5 (a smaller count drops the larger k)');
    // GRPO's group size names the two shown fields
    expect(fieldError('tiny', 'rl.samplesPerPrompt', 1)).toBe(
      'with Algorithm grpo, Samples per prompt is the group size and must be at least 2, got 1: raise it, or set Algorithm to ppo',
    );
    expect(fieldOfError(errOf({ rl: { algo: 'grpo', samplesPerPrompt: 1 } }))?.path).toBe('rl.samplesPerPrompt');
    // fields are checked against the current overrides: with PPO one sample per prompt is fine; switching back is named
    expect(fieldError('tiny', 'rl.samplesPerPrompt', 1, { rl: { algo: 'ppo' } })).toBeNull();
    expect(fieldError('tiny', 'rl.algo', 'grpo', { rl: { algo: 'ppo', samplesPerPrompt: 1 } })).toMatch(
      /^Reinforcement learning → Samples per prompt: with Algorithm grpo/,
    );
    // an error the overrides had already is not blamed on the field being edited, nor does it hide the field's own
    expect(fieldError('tiny', 'sft.lr', 0.1, { model: { dModel: 30 } })).toBeNull();
    expect(fieldError('tiny', 'sft.lr', 5, { model: { dModel: 30 } })).toBe('must be a number in [0, 1], got 5');
    expect(explainError('config.model.dModel: must be a multiple of nHead')).toEqual({
      field: null,
      text: 'config.model.dModel: must be a multiple of nHead',
    });
  });
});

/** The validator's message for `overrides` over tiny. */
function errOf(overrides: unknown): string {
  try {
    resolveConfig('tiny', overrides);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('valid');
}
