/**
 * OpenRLHF's remote reward protocol, POST /get_reward, as its client sends it and reads it
 * (OpenRLHF/OpenRLHF v0.11.0 = 3c3be6234e0c, openrlhf/utils/agent.py, SingleTurnAgentExecutor):
 *
 *   query = hf_tokenizer.decode(output["observation_tokens"], skip_special_tokens=False)
 *   payload = {"query": queries_list[...], "prompts": prompts_list[...], "labels": labels_list[...]}
 *   ... session.post(url, json=data) ... response.raise_for_status() ... return await response.json()
 *   score_value = rewards_info.get("scores") ... reward=rewards_info.get("rewards"), extra_logs=rewards_info.get("extra_logs") or {}
 *
 * one sample per request (since 0.9.1), no Authorization header (a token rides in the URL:
 * user:T@host or ?token=T), 180 s total timeout, any error retried 5 times 1 s apart, then the
 * sample is left without a reward. With several servers (comma-separated) it shards each
 * request's queries across them, so with one query the others get empty lists: those are
 * answered with empty lists. Up to 0.9.0 (v0.9.0 = 06ab51e75c0e, openrlhf/utils/remote_rm_utils.py,
 * request_api_wrapper) the same body went batched through requests.post, with the same retries,
 * and experience_maker.py torch.cat-ed `rewards`, `scores` and each of the first answer's
 * `extra_logs` keys across all answers. Its server (openrlhf/cli/serve_rm.py) answers
 * {"rewards": [...], "scores": [...], "extra_logs": {"dummy_scores": [...]}}: one number per
 * query in each list, which both read; so does this one, with the same extra_logs keys in every
 * answer (an empty one too), as the concatenation needs.
 *
 * Splitting. `query` is prompt and response decoded together, so the response is what follows
 * the prompt: after its first occurrence in the query, else after the longest suffix of the
 * prompt the query starts with (the client cuts a long prompt from the left:
 * prompt_token_ids[-max_prompt_length:]). The EOS tokens the decode kept are stripped from the
 * end. The completion is that response, run as `coderl score` runs it: task.prompt + completion.
 * `rewards` are the reward's totals; `scores` are 1 for a passed program and 0 otherwise (the
 * 0..1 value OpenRLHF's dynamic filtering reads); `extra_logs` has each reward component's
 * contribution (`rewards/<name>`) and `pass`.
 */
import type { ScoreRecord } from '../sandbox/score';
import type { Task } from '../tasks/types';
import { fieldError } from './config';
import type { LoadedSuite } from './suites';
import { taskFrom } from './validate';

/** Length of the longest prefix of `text` that is a suffix of `prompt` (KMP over text + sentinel + prompt). */
export function suffixOverlap(prompt: string, text: string): number {
  const s = `${text.slice(0, prompt.length)}\u0000${prompt}`;
  const pi = new Int32Array(s.length);
  for (let i = 1; i < s.length; i++) {
    let k = pi[i - 1]!;
    while (k > 0 && s[i] !== s[k]) k = pi[k - 1]!;
    if (s[i] === s[k]) k++;
    pi[i] = k;
  }
  return pi[s.length - 1] ?? 0;
}

/** The response in `query` after `prompt`, EOS markers stripped from its end; undefined when the query does not hold the prompt. */
export function responseOf(query: string, prompt: string, eosMarkers: readonly string[]): string | undefined {
  let rest: string | undefined;
  const at = prompt ? query.indexOf(prompt) : 0;
  if (at >= 0) rest = query.slice(at + prompt.length);
  else {
    const k = suffixOverlap(prompt, query);
    if (k >= Math.min(prompt.length, 16)) rest = query.slice(k);
  }
  if (rest === undefined) return undefined;
  let out: string = rest;
  for (let cut = true; cut;) {
    cut = false;
    const trimmed: string = out.trimEnd();
    for (const m of eosMarkers)
      if (m && trimmed.endsWith(m)) {
        out = trimmed.slice(0, -m.length);
        cut = true;
        break;
      }
  }
  return out;
}

/** A label: a task object, a task as JSON text, or a task id of `suite`. */
export function resolveLabel(label: string | Record<string, unknown>, field: string, suite: LoadedSuite | undefined): Task {
  if (typeof label !== 'string') return taskFrom(label, field);
  if (label.trimStart().startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(label);
    } catch (e) {
      throw fieldError(field, `looks like a task as JSON but does not parse (${(e as Error).message})`);
    }
    return taskFrom(parsed, field);
  }
  if (!suite)
    throw fieldError(
      field,
      `'${label}' is a task id, but no suite is loaded to look it up in (add ?suite=NAME or start the server with --suite)`,
    );
  const task = suite.byId.get(label);
  if (!task) throw fieldError(field, `'${label}' is not a task of suite ${suite.label}`);
  return task;
}

export interface RewardResponse {
  rewards: number[];
  scores: number[];
  extra_logs: Record<string, number[]>;
}

/** computeReward's components (reward/reward.ts), each always present: extra_logs has the same keys in every answer. */
export const REWARD_COMPONENTS = ['test_pass', 'all_pass', 'ast_valid', 'lint', 'complexity', 'length'] as const;

export function rewardResponse(records: readonly ScoreRecord[]): RewardResponse {
  const extra: Record<string, number[]> = { pass: records.map((r) => (r.passed ? 1 : 0)) };
  for (const c of REWARD_COMPONENTS) extra[`rewards/${c}`] = new Array<number>(records.length).fill(0);
  for (const [i, r] of records.entries())
    for (const c of r.reward?.components ?? [])
      (extra[`rewards/${c.name}`] ??= new Array<number>(records.length).fill(0))[i] = c.contribution;
  return {
    rewards: records.map((r) => r.reward?.total ?? 0),
    scores: records.map((r) => (r.passed ? 1 : 0)),
    extra_logs: extra,
  };
}
