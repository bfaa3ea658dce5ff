/**
 * The reward: a weighted sum of components, each reported with its raw value, weight and
 * contribution so every reward decision can be explained. Bonuses add weight * raw; penalties
 * subtract weight * raw (all weights are >= 0). The RL pipeline appends the reward-model score
 * and the KL penalty as further components.
 */
import { findingSummary, type AnalysisResult } from '../analysis';
import type { Verdict } from '../sandbox/result';

export interface RewardConfig {
  /** bonus: fraction of tests passed (0..1) */
  testPass: number;
  /** bonus: 1 when every test passed */
  allPass: number;
  /** bonus: 1 when tree-sitter finds no ERROR or MISSING node in prompt + completion */
  astValid: number;
  /** penalty per weighted lint finding in the completion (error 1, warning 0.5, info 0.1) */
  lint: number;
  /** the lint penalty's raw value is capped here */
  lintCap: number;
  /** penalty per point of cyclomatic complexity above `complexityFree` */
  complexity: number;
  complexityFree: number;
  /** penalty per `lengthFree` tokens beyond `lengthFree` */
  length: number;
  lengthFree: number;
}

export const DEFAULT_REWARD: RewardConfig = {
  testPass: 1,
  allPass: 0.5,
  astValid: 0.1,
  lint: 0.02,
  lintCap: 10,
  complexity: 0.02,
  complexityFree: 10,
  length: 0.1,
  lengthFree: 256,
};

export class RewardConfigError extends Error {
  override readonly name = 'RewardConfigError';
}

/** Defaults overridden by `input`; unknown fields and negative or non-finite values are errors naming the field. */
export function validateRewardConfig(input: unknown, where = 'reward'): RewardConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new RewardConfigError(`${where}: expected an object`);
  const unknown = Object.keys(input).filter((k) => !(k in DEFAULT_REWARD));
  if (unknown.length)
    throw new RewardConfigError(
      `${where}: unknown field ${unknown.map((k) => `"${k}"`).join(', ')} (fields: ${Object.keys(DEFAULT_REWARD).join(', ')})`,
    );
  const cfg = { ...DEFAULT_REWARD, ...(input as Partial<RewardConfig>) };
  for (const [k, v] of Object.entries(cfg)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw new RewardConfigError(`${where}.${k}: must be a finite number >= 0, got ${JSON.stringify(v)}`);
  }
  for (const k of ['lintCap', 'lengthFree'] as const) {
    if (cfg[k] <= 0) throw new RewardConfigError(`${where}.${k}: must be > 0, got ${cfg[k]}`);
  }
  return cfg;
}

export interface RewardComponent {
  name: 'test_pass' | 'all_pass' | 'ast_valid' | 'lint' | 'complexity' | 'length' | (string & {});
  /** the measured value (null when not measured, e.g. lint for Python) */
  raw: number | null;
  weight: number;
  /** +1 for bonuses, -1 for penalties */
  sign: 1 | -1;
  /** sign * weight * raw (0 when raw is null) */
  contribution: number;
  detail: string;
}

export interface RewardBreakdown {
  total: number;
  components: RewardComponent[];
}

export interface ExecutionOutcome {
  verdict: Verdict;
  tests_passed: number;
  tests_total: number;
}

/** A rough token count for the length penalty, the same for every language. */
export function countTokens(code: string): number {
  return code.match(/[A-Za-z_$][\w$]*|\d+(?:\.\d+)?|\S/g)?.length ?? 0;
}

const SEVERITY_WEIGHT = { error: 1, warning: 0.5, info: 0.1 } as const;

/** The breakdown for one completion; `analysis` is null where static analysis does not apply (Python). */
export function computeReward(
  completion: string,
  exec: ExecutionOutcome,
  analysis: AnalysisResult | null,
  cfg: RewardConfig = DEFAULT_REWARD,
): RewardBreakdown {
  const parts: RewardComponent[] = [];
  const add = (name: RewardComponent['name'], sign: 1 | -1, weight: number, raw: number | null, detail: string): void => {
    parts.push({ name, raw, weight, sign, contribution: raw === null ? 0 : sign * weight * raw, detail });
  };
  const frac = exec.tests_total > 0 ? exec.tests_passed / exec.tests_total : 0;
  add('test_pass', 1, cfg.testPass, frac, `${exec.tests_passed}/${exec.tests_total} tests passed (verdict ${exec.verdict})`);
  add(
    'all_pass',
    1,
    cfg.allPass,
    exec.verdict === 'passed' ? 1 : 0,
    exec.verdict === 'passed' ? 'every test passed' : `verdict ${exec.verdict}`,
  );
  if (analysis) {
    add(
      'ast_valid',
      1,
      cfg.astValid,
      analysis.ast.valid ? 1 : 0,
      analysis.ast.valid ? 'no syntax errors' : `${analysis.ast.errors.length} syntax error(s): ${analysis.ast.errors[0]!.message}`,
    );
    let weighted = 0;
    for (const f of analysis.lint) weighted += SEVERITY_WEIGHT[f.severity];
    // what the penalty counts: ESLint's findings in the completion (syntax errors are ast_valid's)
    const what = `${findingSummary(analysis.lint)} from ESLint in the completion`;
    const w = Number(weighted.toFixed(3));
    add(
      'lint',
      -1,
      cfg.lint,
      Math.min(cfg.lintCap, weighted),
      !analysis.lint.length
        ? what
        : weighted >= cfg.lintCap
          ? `${what}, weighted ${w}: capped at ${cfg.lintCap}`
          : `${what}, weighted ${w} (cap ${cfg.lintCap})`,
    );
    const over = Math.max(0, analysis.metrics.maxCyclomatic - cfg.complexityFree);
    add(
      'complexity',
      -1,
      cfg.complexity,
      over,
      `max cyclomatic complexity ${analysis.metrics.maxCyclomatic} (free up to ${cfg.complexityFree})`,
    );
  } else {
    add('ast_valid', 1, cfg.astValid, null, 'not measured for this language');
    add('lint', -1, cfg.lint, null, 'not measured for this language');
    add('complexity', -1, cfg.complexity, null, 'not measured for this language');
  }
  const tokens = countTokens(completion);
  add('length', -1, cfg.length, Math.max(0, tokens - cfg.lengthFree) / cfg.lengthFree, `${tokens} tokens (free up to ${cfg.lengthFree})`);
  return { total: parts.reduce((a, p) => a + p.contribution, 0), components: parts };
}
