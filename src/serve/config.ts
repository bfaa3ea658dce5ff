/**
 * `coderl serve`'s settings: one typed object, documented field by field (the CLI's flags fill
 * it, tests build it with overrides), and the errors every endpoint answers with.
 */
import { DEFAULT_REWARD, type RewardConfig } from '../reward/reward';
import { DEFAULT_LIMITS, type RunLimits } from '../sandbox/result';

export interface ServeConfig {
  /** address to listen on; any address beyond loopback needs `token` */
  host: string;
  /** port; 0 picks a free one */
  port: number;
  /** bearer token every request but /healthz and /readyz must carry; undefined: no auth (loopback only) */
  token: string | undefined;
  /** sandbox workers that run completions against tests (/v1/score, /get_reward) */
  workers: number;
  /** sandbox workers that run plain programs (/run_code); 0: /run_code answers 503 */
  programWorkers: number;
  /**
   * the suite /get_reward looks task ids up in when the request names none (?suite=), and
   * /v1/score's when a request gives none of suite, suite_hash and tasks: a built-in name, a
   * suite file (read and pinned at start, named by this path) or an uploaded suite's hash
   */
  defaultSuite: string | undefined;
  /** reward weights when a request gives none (and always for /get_reward) */
  reward: RewardConfig;
  /** limits of one scored program (the same as `coderl score --timeout`) */
  limits: RunLimits;
  /**
   * programs waiting for a worker, per pool, past which a request is refused (429; 504 on
   * /run_code); also the most completions one request may hold. OpenRLHF 0.9.1+ asks once per
   * sample, a whole rollout at once, and retries a refusal only 5 times 1 s apart (then the
   * sample has no reward): keep it at least rollout_batch_size x n_samples_per_prompt
   */
  queueLimit: number;
  /** largest request body, bytes (413 past it) */
  maxBodyBytes: number;
  /** wall-clock limit of one request, ms (504 past it); /run_code's is also capped by its own timeouts */
  requestTimeoutMs: number;
  /** /run_code: the most run_timeout honoured, ms */
  maxRunTimeoutMs: number;
  /** /run_code: the most memory_limit_MB honoured (also the limit when it is absent or -1), MiB */
  maxMemoryMb: number;
  /** /run_code: most characters of stdout and stderr together */
  programOutputChars: number;
  /** uploaded suites kept in memory (least recently used dropped first) */
  suiteCacheSize: number;
  /** /get_reward: text stripped from the end of a response (the EOS tokens a trainer decodes with skip_special_tokens=False) */
  eosMarkers: string[];
  /** how long draining waits for requests in flight before it closes anyway, ms */
  drainTimeoutMs: number;
}

export const DEFAULT_EOS_MARKERS: readonly string[] = [
  '<|endoftext|>',
  '<|im_end|>',
  '<|eot_id|>',
  '<|end_of_text|>',
  '<|end|>',
  '</s>',
  '<eos>',
  '<｜end▁of▁sentence｜>',
];

export const DEFAULT_SERVE: ServeConfig = {
  host: '127.0.0.1',
  port: 8000,
  token: undefined,
  workers: 1,
  programWorkers: 1,
  defaultSuite: undefined,
  reward: DEFAULT_REWARD,
  limits: DEFAULT_LIMITS,
  queueLimit: 4096,
  maxBodyBytes: 16 << 20,
  requestTimeoutMs: 120_000,
  maxRunTimeoutMs: 30_000,
  maxMemoryMb: 256,
  programOutputChars: 1 << 20,
  suiteCacheSize: 32,
  eosMarkers: [...DEFAULT_EOS_MARKERS],
  drainTimeoutMs: 150_000,
};

/** An answer other than 200: status, JSON {error, field}, extra headers. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly field: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** 400 naming the field: `completions[3].task_id: not in suite humaneval-python`. */
export function fieldError(field: string, what: string, status = 400): HttpError {
  return new HttpError(status, `${field}: ${what}`, field);
}

/** True for addresses only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}
