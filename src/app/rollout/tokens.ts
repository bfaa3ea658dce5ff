/**
 * Pure helpers for the rollout view (RolloutView.tsx): where each action token of a rollout lies
 * in its completion, per-token KL, the heatmap's colour buckets, a token's hover text, and the
 * editor line a test failure points to. Character offsets and 1-based lines only, never editor
 * types; the view turns offsets into positions with `model.getPositionAt`.
 *
 * Token texts come from `tok.decode([id])` one id at a time (ppo-loop.ts), the completion from
 * decoding all ids but a final EOS (sample.ts). So the token texts concatenate to the completion
 * except (a) a sampled EOS, which decodes to its special string `<|endoftext|>` and lies past the
 * end, and (b) a character whose UTF-8 bytes are split over tokens: each piece decodes to U+FFFD
 * alone. `alignTokens` handles both: (a) becomes a zero-width `extra` span at the end, (b) an
 * `approx` group of tokens sharing the range of the characters they make up together.
 */
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import type { HeatScale } from '../../store/rolloutSlice';

export type { HeatScale };

// ---------------------------------------------------------------------------------------------
// Alignment: token i -> [start, end) in the completion (plus `offset`, e.g. the prompt's length)

export interface TokenSpan {
  /** first code unit (UTF-16, what `slice` takes), `offset` added */
  start: number;
  /** one past the last code unit */
  end: number;
  /**
   * `exact`: the token's text is exactly completion[start, end).
   * `approx`: the token's text did not match here (split multi-byte character); every token of
   *   its group shares the group's range.
   * `extra`: past the end of the completion (the EOS token, or a special string): zero-width at the end.
   */
  kind: 'exact' | 'approx' | 'extra';
  /** index of the first token of this span's group (itself unless `approx`) */
  group: number;
}

export interface Alignment {
  spans: TokenSpan[];
  /** every token is `exact` or an `extra` at the end: the texts concatenate to the completion (plus the extras) */
  exact: boolean;
}

/** A special token's text, e.g. `<|endoftext|>`. */
const SPECIAL = /^<\|[^\s|]+\|>$/;
const REPLACEMENT = '\uFFFD';
/** how many tokens ahead a resynchronisation looks, and how many tokens it checks there */
const LOOKAHEAD = 32;
const CONFIRM = 3;

/** Maps each token text to its range in `completion`; see the module comment for the cases. */
export function alignTokens(tokens: readonly string[], completion: string, offset = 0): Alignment {
  const n = tokens.length;
  const body = bodyLength(tokens, completion);
  const spans: TokenSpan[] = new Array(n);
  let exact = true;
  let c = 0;
  let i = 0;
  while (i < body) {
    const t = tokens[i]!;
    if (completion.startsWith(t, c)) {
      spans[i] = { start: c + offset, end: c + t.length + offset, kind: 'exact', group: i };
      c += t.length;
      i++;
      continue;
    }
    exact = false;
    const { k, p } = resync(tokens, completion, i, c, body);
    for (let j = i; j < k; j++) spans[j] = { start: c + offset, end: p + offset, kind: 'approx', group: i };
    c = p;
    i = k;
  }
  for (let j = body; j < n; j++) spans[j] = { start: completion.length + offset, end: completion.length + offset, kind: 'extra', group: j };
  return { spans, exact: exact && c === completion.length };
}

/** Tokens before the trailing extras: a last token that is past the end (EOS) is not part of the body. */
function bodyLength(tokens: readonly string[], completion: string): number {
  const n = tokens.length;
  if (n === 0) return 0;
  const all = tokens.join('');
  if (all === completion) return n;
  const last = tokens[n - 1]!;
  if (all.length - last.length === completion.length && all.startsWith(completion)) return n - 1;
  return SPECIAL.test(last) ? n - 1 : n;
}

/**
 * After token `i` failed to match at `c`: the first later token `k` (a clean one, no U+FFFD) whose
 * text and the next few match consecutively at some `p >= c`, with `p` no further than the
 * skipped tokens' texts could reach. Tokens i..k-1 then cover [c, p). Without one, they cover the rest.
 */
function resync(tokens: readonly string[], completion: string, i: number, c: number, body: number): { k: number; p: number } {
  const t = tokens[i]!;
  let lo = c;
  while (lo - c < t.length && completion[lo] === t[lo - c]) lo++; // the literal prefix before the mismatch
  let reach = c;
  for (let k = i + 1; k < Math.min(body, i + 1 + LOOKAHEAD); k++) {
    reach += tokens[k - 1]!.length + 2;
    const a = tokens[k]!;
    if (a === '' || a.includes(REPLACEMENT)) continue;
    for (let p = completion.indexOf(a, lo); p !== -1 && p <= reach; p = completion.indexOf(a, p + 1)) {
      if (confirms(tokens, completion, k, p, body)) return { k, p };
    }
  }
  return { k: body, p: completion.length };
}

/** Do tokens k.. (up to CONFIRM clean ones) match consecutively from p? */
function confirms(tokens: readonly string[], completion: string, k: number, p: number, body: number): boolean {
  for (let j = k, q = p, seen = 0; j < body && seen < CONFIRM; j++, seen++) {
    const t = tokens[j]!;
    if (t.includes(REPLACEMENT)) return true;
    if (!completion.startsWith(t, q)) return false;
    q += t.length;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Per-token values and the heatmap's buckets

/** The per-token arrays of a rollout record the view reads. */
export type TokenArrays = Pick<
  RolloutRecord,
  'tokens' | 'ids' | 'logprobs' | 'entropies' | 'ref_logprobs' | 'values' | 'advantages' | 'returns' | 'raw_advantages'
>;

export const HEAT_SCALES: readonly { id: HeatScale; label: string; help: string }[] = [
  { id: 'logprob', label: 'log-prob', help: 'log-probability of the sampled token under the sampling policy (0 best; red: unlikely)' },
  { id: 'advantage', label: 'advantage', help: "the token's (whitened) advantage: red below 0, green above" },
  { id: 'kl', label: 'KL', help: 'per-token KL estimate log-prob − reference log-prob: blue below 0, orange above' },
  { id: 'entropy', label: 'entropy', help: 'entropy of the policy at the token, nats (darker: less certain)' },
];

/** Number of colour buckets of every scale. */
export const HEAT_BUCKETS = 7;

/**
 * Bucket edges, ascending (HEAT_BUCKETS - 1 of them); a value's bucket is the number of edges it
 * reaches (value >= edge), so bucket 0 holds the lowest values. Diverging scales (advantage, KL)
 * are symmetric around 0, so bucket 3 holds values near 0 and ±v land symmetrically.
 */
const EDGES: Record<HeatScale, readonly number[]> = {
  logprob: [-5, -3, -2, -1, -0.5, -0.1],
  advantage: [-1.5, -0.75, -0.25, 0.25, 0.75, 1.5],
  kl: [-1, -0.3, -0.05, 0.05, 0.3, 1],
  entropy: [0.1, 0.3, 0.6, 1, 1.5, 2.5],
};
const DIVERGING: Record<HeatScale, boolean> = { logprob: false, advantage: true, kl: true, entropy: false };

/** The bucket (0..HEAT_BUCKETS-1) of `value` under `scale`; null for a missing or non-finite value. */
export function heatBucket(scale: HeatScale, value: number | null | undefined): number | null {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  const edges = EDGES[scale];
  if (DIVERGING[scale]) {
    const mid = (HEAT_BUCKETS - 1) / 2;
    const m = edges.slice(mid).filter((e) => Math.abs(value) >= e).length;
    return value < 0 ? mid - m : mid + m;
  }
  return edges.filter((e) => value >= e).length;
}

/** CSS class of a bucket (view.css): `heat-<scale>-<bucket>`, or `heat-none` without a value. */
export function heatClass(scale: HeatScale, bucket: number | null): string {
  return bucket === null ? 'heat-none' : `heat-${scale}-${bucket}`;
}

/** A label for each bucket's range, e.g. `< -5`, `-5 … -3`, `≥ -0.1` (diverging: `|v| < 0.05` in the middle). */
export function heatLegend(scale: HeatScale): string[] {
  const e = EDGES[scale];
  return Array.from({ length: HEAT_BUCKETS }, (_, b) => {
    if (DIVERGING[scale] && b === (HEAT_BUCKETS - 1) / 2) return `|v| < ${e[b]}`;
    if (b === 0) return `< ${e[0]}`;
    if (b === HEAT_BUCKETS - 1) return `≥ ${e[b - 1]}`;
    return `${e[b - 1]} … ${e[b]}`;
  });
}

const at = (xs: readonly number[] | undefined, i: number): number | null => {
  const v = xs?.[i];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
};

/** Per-token KL estimate: log-prob − reference log-prob (null where either is missing). */
export function tokenKl(r: Pick<TokenArrays, 'logprobs' | 'ref_logprobs'>, i: number): number | null {
  const lp = at(r.logprobs, i);
  const ref = at(r.ref_logprobs, i);
  return lp === null || ref === null ? null : lp - ref;
}

/** The value the heatmap colours token `i` by under `scale`. */
export function scaleValue(r: TokenArrays, scale: HeatScale, i: number): number | null {
  switch (scale) {
    case 'logprob':
      return at(r.logprobs, i);
    case 'advantage':
      return at(r.advantages, i);
    case 'kl':
      return tokenKl(r, i);
    case 'entropy':
      return at(r.entropies, i);
  }
}

/** Everything the hover shows for one token. */
export interface TokenInfo {
  index: number;
  text: string;
  id: number | null;
  logprob: number | null;
  /** exp(logprob) */
  prob: number | null;
  entropy: number | null;
  refLogprob: number | null;
  kl: number | null;
  value: number | null;
  advantage: number | null;
  rawAdvantage: number | null;
  return: number | null;
}

export function tokenInfo(r: TokenArrays, i: number): TokenInfo {
  const logprob = at(r.logprobs, i);
  return {
    index: i,
    text: r.tokens[i] ?? '',
    id: at(r.ids, i),
    logprob,
    prob: logprob === null ? null : Math.exp(logprob),
    entropy: at(r.entropies, i),
    refLogprob: at(r.ref_logprobs, i),
    kl: tokenKl(r, i),
    value: at(r.values, i),
    advantage: at(r.advantages, i),
    rawAdvantage: at(r.raw_advantages, i),
    return: at(r.returns, i),
  };
}

export const fmtNum = (x: number | null, digits = 4): string => (x === null ? '—' : x.toFixed(digits));

/** Markdown code span holding `s` (JSON-quoted so whitespace shows), fenced past any backticks in it. */
function codeSpan(s: string): string {
  const q = JSON.stringify(s);
  const run = Math.max(0, ...(q.match(/`+/g) ?? []).map((m) => m.length));
  const fence = '`'.repeat(run + 1);
  return `${fence} ${q} ${fence}`;
}

/** The hover for a token (Monaco renders it as markdown); `note` is added below the numbers. */
export function tokenHover(t: TokenInfo, note?: string): string {
  const rows: [string, string][] = [
    ['log-prob', `${fmtNum(t.logprob)} (p = ${fmtNum(t.prob)})`],
    ['entropy', fmtNum(t.entropy)],
    ['ref log-prob', fmtNum(t.refLogprob)],
    ['KL (log-prob − ref)', fmtNum(t.kl)],
    ['value', fmtNum(t.value)],
    [
      'advantage',
      `${fmtNum(t.advantage)}${t.rawAdvantage !== null && t.rawAdvantage !== t.advantage ? ` (before whitening ${fmtNum(t.rawAdvantage)})` : ''}`,
    ],
    ['return', fmtNum(t.return)],
  ];
  const head = `**token ${t.index}** ${codeSpan(t.text)}${t.id === null ? '' : ` · id ${t.id}`}`;
  return [head, ...rows.map(([k, v]) => `${k}: ${v}`), ...(note ? [`_${note}_`] : [])].join('  \n');
}

/** Mean of the finite values (null when none). */
export function mean(xs: readonly number[]): number | null {
  const ok = xs.filter(Number.isFinite);
  return ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : null;
}

// ---------------------------------------------------------------------------------------------
// Lines: the editor shows the program `prompt + completion`, so program lines are editor lines

/** Number of '\n' in `text`. */
export function newlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * The 1-based line of the function header in `prompt`: the last line declaring `entryPoint`
 * (`function name(` or `name =`), else the last non-blank line (suite prompts end with the header).
 */
export function headerLine(prompt: string, entryPoint?: string): number {
  const lines = prompt.split('\n');
  if (entryPoint) {
    const name = entryPoint.replace(/[$]/g, '\\$');
    const re = new RegExp(`(function\\s*\\*?\\s*${name}\\s*\\()|((const|let|var)\\s+${name}\\s*=)|(^\\s*${name}\\s*=)`);
    for (let i = lines.length - 1; i >= 0; i--) if (re.test(lines[i]!)) return i + 1;
  }
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.trim()) return i + 1;
  return 1;
}

/**
 * The editor line (1-based, in `prompt + completion`) a test result points to: its location in
 * the completion or the prompt when the sandbox knows it, else the function header. Line numbers
 * of the sandbox's program are the editor's: completion line L is program line newlines(prompt) + L.
 */
export function testLine(test: Pick<TestResult, 'location'>, prompt: string, entryPoint?: string): { line: number; known: boolean } {
  const loc = test.location;
  if (loc?.in === 'completion') return { line: newlines(prompt) + loc.line, known: true };
  if (loc?.in === 'prompt') return { line: loc.line, known: true };
  return { line: headerLine(prompt, entryPoint), known: false };
}
