/**
 * Every request body `coderl serve` reads, checked in one place: unknown JSON in, a typed
 * request out, or an HttpError naming the field and what is wrong with it
 * (`completions[3].task_id: must be a string, got a number`). Our own API (/v1/*) refuses
 * unknown fields; the two foreign protocols (/get_reward, /run_code) accept the fields their
 * clients send and ignore others, since those clients add fields over time.
 */
import { RewardConfigError, validateRewardConfig, type RewardConfig } from '../reward/reward';
import { parseSuite } from '../tasks/suite';
import type { Completion, Language, Task } from '../tasks/types';
import { fieldError, HttpError } from './config';

type Json = Record<string, unknown>;

const kind = (v: unknown): string =>
  v === undefined ? 'nothing' : v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

function object(v: unknown, field: string): Json {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fieldError(field, `must be an object, got ${kind(v)}`);
  return v as Json;
}

function string(v: unknown, field: string): string {
  if (typeof v !== 'string') throw fieldError(field, `must be a string, got ${kind(v)}`);
  return v;
}

function array(v: unknown, field: string, opts: { min?: number; max?: number } = {}): unknown[] {
  if (!Array.isArray(v)) throw fieldError(field, `must be an array, got ${kind(v)}`);
  if (opts.min !== undefined && v.length < opts.min) throw fieldError(field, `must hold at least ${opts.min} item(s), got ${v.length}`);
  if (opts.max !== undefined && v.length > opts.max) throw fieldError(field, `must hold at most ${opts.max} items, got ${v.length}`);
  return v;
}

function number(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw fieldError(field, `must be a finite number, got ${kind(v)}`);
  return v;
}

function onlyFields(o: Json, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o))
    if (!allowed.includes(k)) throw fieldError(where ? `${where}.${k}` : k, `unknown field (fields: ${allowed.join(', ')})`);
}

/** A JSON body as text -> a value; bad JSON is 400 on `body`. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  const text = new TextDecoder().decode(bytes);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, `body: not valid JSON (${(e as Error).message})`, 'body');
  }
}

/** One task in any shape a suite file holds (native, HumanEval, HumanEval-X), checked by the suite loader. */
export function taskFrom(v: unknown, field: string): Task {
  object(v, field);
  const { items, issues } = parseSuite(JSON.stringify(v), field);
  if (issues.length || !items[0]) throw fieldError(field, issues.map((i) => i.message).join('; ') || 'not a task');
  return items[0];
}

/** Which suite a /v1/score request scores against; `default` (none of the three fields): the server's --suite. */
export type SuiteRef =
  { kind: 'name'; name: string } | { kind: 'hash'; hash: string } | { kind: 'inline'; tasks: Task[] } | { kind: 'default' };

export interface ScoreRequest {
  suite: SuiteRef;
  completions: Completion[];
  /** undefined: the server's weights */
  reward: RewardConfig | undefined;
}

const SHA256 = /^[0-9a-f]{64}$/;

function suiteRef(o: Json): SuiteRef {
  const given = (['suite', 'suite_hash', 'tasks'] as const).filter((k) => o[k] !== undefined);
  if (!given.length) return { kind: 'default' };
  if (given.length > 1) throw fieldError(given[1]!, `give exactly one of suite, suite_hash and tasks (got ${given.join(', ')})`);
  if (o.suite !== undefined) return { kind: 'name', name: string(o.suite, 'suite') };
  if (o.suite_hash !== undefined) {
    const hash = string(o.suite_hash, 'suite_hash').toLowerCase();
    if (!SHA256.test(hash)) throw fieldError('suite_hash', 'must be the 64 hex digits of a SHA-256 that POST /v1/suites returned');
    return { kind: 'hash', hash };
  }
  const tasks = array(o.tasks, 'tasks', { min: 1 }).map((t, i) => taskFrom(t, `tasks[${i}]`));
  const seen = new Set<string>();
  tasks.forEach((t, i) => {
    if (seen.has(t.task_id)) throw fieldError(`tasks[${i}].task_id`, `duplicate task_id '${t.task_id}'`);
    seen.add(t.task_id);
  });
  return { kind: 'inline', tasks };
}

export function rewardFrom(v: unknown, field: string): RewardConfig {
  try {
    return validateRewardConfig(v, field);
  } catch (e) {
    if (!(e instanceof RewardConfigError)) throw e;
    const at = /^([\w.[\]]+):/.exec(e.message)?.[1] ?? field;
    throw new HttpError(400, e.message, at);
  }
}

/** POST /v1/score */
export function parseScoreRequest(body: unknown, maxCompletions: number): ScoreRequest {
  const o = object(body, 'body');
  onlyFields(o, ['suite', 'suite_hash', 'tasks', 'completions', 'reward'], '');
  const suite = suiteRef(o);
  const completions = array(o.completions, 'completions', { min: 1, max: maxCompletions }).map((c, i): Completion => {
    const at = `completions[${i}]`;
    const co = object(c, at);
    onlyFields(co, ['task_id', 'completion'], at);
    return { task_id: string(co.task_id, `${at}.task_id`), completion: string(co.completion, `${at}.completion`) };
  });
  return { suite, completions, reward: o.reward === undefined ? undefined : rewardFrom(o.reward, 'reward') };
}

/** Every completion names a task of the suite (`label` names the suite in the message). */
export function checkCompletions(completions: readonly Completion[], tasks: readonly Task[], label: string): void {
  const ids = new Set(tasks.map((t) => t.task_id));
  completions.forEach((c, i) => {
    if (!ids.has(c.task_id)) throw fieldError(`completions[${i}].task_id`, `'${c.task_id}' is not in suite ${label}`);
  });
}

/** POST /get_reward (OpenRLHF): three lists of the same length; a label is a task id, a task as JSON text, or a task object. */
export interface RewardRequest {
  query: string[];
  prompts: string[];
  labels: (string | Json)[];
}

export function parseRewardRequest(body: unknown, maxItems: number): RewardRequest {
  const o = object(body, 'body');
  // no minimum: OpenRLHF shards each request's queries across its --reward.remote_url servers, so with one query the others get none
  const query = array(o.query, 'query', { max: maxItems }).map((q, i) => string(q, `query[${i}]`));
  const prompts = array(o.prompts, 'prompts').map((p, i) => string(p, `prompts[${i}]`));
  const labels = array(o.labels, 'labels').map((l, i) => (typeof l === 'string' ? l : object(l, `labels[${i}]`)));
  for (const [name, list] of [
    ['prompts', prompts],
    ['labels', labels],
  ] as const)
    if (list.length !== query.length) throw fieldError(name, `must hold one item per query (${query.length}), got ${list.length}`);
  return { query, prompts, labels };
}

/** POST /run_code (Sandbox Fusion), the fields veRL sends. Times in seconds as sent. */
export interface RunCodeRequest {
  code: string;
  language: Language;
  stdin: string;
  runTimeoutS: number;
  compileTimeoutS: number;
  /** -1 (or absent): the server's limit */
  memoryLimitMb: number;
}

/** Sandbox Fusion's languages (sandbox/runners/types.py Language); we run two of them. */
const SANDBOX_FUSION_LANGUAGES = new Set(
  'python cpp nodejs go go_test java php csharp bash typescript sql rust cuda lua R perl D_ut ruby scala julia pytest junit kotlin_script jest verilog python_gpu lean swift racket'.split(
    ' ',
  ),
);
const OURS: Record<string, Language> = { python: 'python', nodejs: 'javascript', javascript: 'javascript' };

export function parseRunCodeRequest(body: unknown): RunCodeRequest {
  const o = object(body, 'body');
  const code = string(o.code, 'code');
  const lang = string(o.language, 'language');
  const language = OURS[lang];
  if (!language) {
    const known = SANDBOX_FUSION_LANGUAGES.has(lang) ? 'a Sandbox Fusion language that coderl serve does not run' : 'not a known language';
    throw fieldError('language', `'${lang}' is ${known}; coderl serve runs python and nodejs (javascript)`);
  }
  const stdin = o.stdin === undefined || o.stdin === null ? '' : string(o.stdin, 'stdin');
  const seconds = (k: string, dflt: number): number => {
    const v = o[k] === undefined ? dflt : number(o[k], k);
    if (v <= 0) throw fieldError(k, `must be > 0 seconds, got ${v}`);
    return v;
  };
  const memoryLimitMb = o.memory_limit_MB === undefined ? -1 : number(o.memory_limit_MB, 'memory_limit_MB');
  if (o.files !== undefined && Object.keys(object(o.files, 'files')).length > 0)
    throw fieldError('files', 'uploading files is not supported (send {} or leave it out)');
  if (o.fetch_files !== undefined && array(o.fetch_files, 'fetch_files').length > 0)
    throw fieldError('fetch_files', 'fetching files is not supported (send [] or leave it out)');
  return { code, language, stdin, runTimeoutS: seconds('run_timeout', 10), compileTimeoutS: seconds('compile_timeout', 10), memoryLimitMb };
}
