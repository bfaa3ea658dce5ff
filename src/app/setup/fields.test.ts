import { describe, expect, test } from 'vitest';
import { RL_PRESETS, resolveConfig } from '../../rl/config';
import { effective, fieldError, fieldOfError, FIELDS, getPath, parseField, withOverride } from './fields';

describe('settings form fields', () => {
  test('every field is a real config path with a value of its kind in every preset', () => {
    for (const preset of Object.keys(RL_PRESETS)) {
      const cfg = resolveConfig(preset);
      for (const f of FIELDS) {
        const v = getPath(cfg, f.path);
        const want = f.kind === 'bool' ? 'boolean' : f.kind === 'enum' ? 'string' : 'number';
        expect(typeof v, `${preset} ${f.path}`).toBe(want);
        if (f.kind === 'enum') expect(f.values).toContain(v);
        expect(fieldError(preset, f.path, v), `${preset} ${f.path}`).toBeNull();
      }
    }
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
});
