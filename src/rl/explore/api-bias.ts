/**
 * API-guided exploration: after `receiver.` (or partway through a member name after the dot),
 * push the policy toward member names the API graph says the inferred receiver has.
 *
 * A token is *consistent* with the partial name p typed so far when p + (the token's leading
 * identifier characters) is a prefix of some member name and the token stops there, or when it
 * completes a member name exactly and then continues with a non-identifier character (`length)`,
 * ` (`, `;`). Once the name is complete, every token that ends the identifier is consistent, and
 * so are special tokens (EOS). Rows are constrained only when the receiver's type is known and
 * closed (not `object`), p is a prefix of one of its members, and at least one token fits; every
 * other row is left alone — the mask never bans a whole row.
 *
 * Shape legend: B sequences, V vocabulary, W = ceil(V / 32) mask words per row.
 */
import type { GenerateOptions } from '../../model/generate-common';
import type { TextTokenizer, TokenStreamDecoder } from '../../tokenizer/types';
import { apiType, membersOf, type ValueType } from './api-graph';
import { JsLexer, isIdentChar } from './js-lexer';
import { memberContext, memberSite, type MemberContext } from './receiver';

/** How the guide acts on the logits; validated (unknown keys and bad values are errors). */
export interface ApiGuideOptions {
  /** 'bias': add `strength` to consistent tokens' logits; 'mask': allow only consistent tokens */
  mode: 'bias' | 'mask';
  /** logit bonus in 'bias' mode, finite and >= 0 (unused by 'mask': all allowed tokens are treated alike) */
  strength: number;
}

/** Counters for the metrics; reset with `resetStats()`. */
export interface ApiGuideStats {
  /** times the guide was asked (one per decode step) */
  calls: number;
  /** calls in which at least one row was constrained */
  guidedSteps: number;
  /** rows looked at (calls x B) */
  rowsSeen: number;
  /** rows positioned right after `receiver.` or inside the member name */
  memberSites: number;
  /** rows constrained (bias or mask) */
  guidedRows: number;
  /** rows given an allow-mask (mode 'mask') */
  maskedRows: number;
  /** member sites left alone: receiver unknown or open (plain objects) */
  unknownReceiver: number;
  /** member sites left alone: the name typed so far fits no member, or no token fits */
  noFit: number;
}

/** One step's constraint: the rows of `rows` are constrained, the others are neutral (bias 0, all allowed). */
export interface ApiGuideStep {
  bias?: Float32Array<ArrayBuffer>; // (B, V)
  allowMask?: Uint32Array<ArrayBuffer>; // (B, W)
  rows: number[];
}

/** A guide: call it with the text (prompt + generated) of each sequence. */
export interface ApiGuide {
  (texts: readonly string[]): ApiGuideStep | null;
  /** The same from member contexts the caller computed (null: the row is not at a member site). */
  fromContexts(contexts: readonly (MemberContext | null)[]): ApiGuideStep | null;
  /** Consistent token ids after `<type value>.<partial>`, or null when the row would not be constrained. */
  allowedTokens(receiver: ValueType, partial: string): Int32Array | null;
  readonly options: Readonly<ApiGuideOptions>;
  readonly vocabSize: number;
  readonly stats: ApiGuideStats;
  resetStats(): void;
}

const OPTION_KEYS = new Set(['mode', 'strength']);

function validateOptions(opts: ApiGuideOptions): ApiGuideOptions {
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) throw new Error(`createApiGuide: unknown option "${key}" (known: ${[...OPTION_KEYS].join(', ')})`);
  }
  if (opts.mode !== 'bias' && opts.mode !== 'mask')
    throw new Error(`createApiGuide: mode must be 'bias' or 'mask', got ${JSON.stringify(opts.mode)}`);
  if (!(Number.isFinite(opts.strength) && opts.strength >= 0))
    throw new RangeError(`createApiGuide: strength must be finite and >= 0, got ${opts.strength}`);
  return { mode: opts.mode, strength: opts.strength };
}

/** Per token: its leading identifier characters and whether more follows them. Built once per tokenizer. */
interface TokenTable {
  lead: string[];
  /** 1: the token continues past its identifier part (`length)`, ` x`, `(`) */
  rest: Uint8Array; // (V,)
  special: Uint8Array; // (V,)
}

function tokenTable(tokenizer: TextTokenizer): TokenTable {
  const V = tokenizer.vocabSize;
  const lead: string[] = new Array<string>(V);
  const rest = new Uint8Array(V);
  const special = new Uint8Array(V);
  for (let id = 0; id < V; id++) {
    if (tokenizer.isSpecial(id)) {
      special[id] = 1;
      lead[id] = '';
      continue;
    }
    const text = tokenizer.decode([id]); // a token ending inside a UTF-8 sequence decodes to U+FFFD: never a member name
    let n = 0;
    while (n < text.length && isIdentChar(text.charCodeAt(n))) n++;
    lead[id] = text.slice(0, n);
    rest[id] = n < text.length ? 1 : 0;
  }
  return { lead, rest, special };
}

const EMPTY_STATS = (): ApiGuideStats => ({
  calls: 0,
  guidedSteps: 0,
  rowsSeen: 0,
  memberSites: 0,
  guidedRows: 0,
  maskedRows: 0,
  unknownReceiver: 0,
  noFit: 0,
});

/** Creates an API guide for `tokenizer`'s vocabulary (precomputes every token's text once). */
export function createApiGuide(tokenizer: TextTokenizer, opts: ApiGuideOptions): ApiGuide {
  const options = Object.freeze(validateOptions(opts));
  const V = tokenizer.vocabSize;
  const W = Math.ceil(V / 32);
  const table = tokenTable(tokenizer);
  /** `${type}\0${partial}` -> consistent ids and the row to copy (bias (V,) or mask (W,)) */
  const cache = new Map<string, { ids: Int32Array; row: Float32Array | Uint32Array }>();
  const allAllowed = new Uint32Array(W).fill(0xffffffff); // (W,)
  if (V % 32 !== 0) allAllowed[W - 1] = (2 ** (V % 32) - 1) >>> 0;
  let stats = EMPTY_STATS();

  function entry(receiver: ValueType, partial: string) {
    const type = receiver.type;
    if (type === 'unknown' || apiType(type)?.open !== false) return null;
    const key = `${type}\0${partial}`;
    const hit = cache.get(key);
    if (hit) return hit;
    const names = membersOf(type)
      .map((m) => m.name)
      .filter((n) => n.startsWith(partial));
    if (names.length === 0) return null;
    const ids = consistentIds(table, names, partial);
    if (ids.length === 0) return null;
    const row = options.mode === 'bias' ? new Float32Array(V) : new Uint32Array(W);
    for (const id of ids) {
      if (row instanceof Float32Array) row[id] = options.strength;
      else row[id >>> 5]! |= 1 << (id & 31);
    }
    const e = { ids, row };
    cache.set(key, e);
    return e;
  }

  function fromContexts(contexts: readonly (MemberContext | null)[]): ApiGuideStep | null {
    const B = contexts.length;
    stats.calls++;
    stats.rowsSeen += B;
    const picked: [number, Float32Array | Uint32Array][] = [];
    contexts.forEach((ctx, b) => {
      if (!ctx) return;
      stats.memberSites++;
      const type = ctx.receiver.type;
      if (type === 'unknown' || apiType(type)?.open !== false) {
        stats.unknownReceiver++;
        return;
      }
      const e = entry(ctx.receiver, ctx.partial);
      if (!e) stats.noFit++;
      else picked.push([b, e.row]);
    });
    if (picked.length === 0) return null;
    stats.guidedSteps++;
    stats.guidedRows += picked.length;
    const rows = picked.map(([b]) => b);
    if (options.mode === 'bias') {
      const bias = new Float32Array(B * V); // (B, V), 0 outside guided rows
      for (const [b, row] of picked) bias.set(row, b * V);
      return { bias, rows };
    }
    const allowMask = new Uint32Array(B * W); // (B, W)
    for (let b = 0; b < B; b++) allowMask.set(allAllowed, b * W);
    for (const [b, row] of picked) allowMask.set(row, b * W);
    stats.maskedRows += picked.length;
    return { allowMask, rows };
  }

  const guide = ((texts: readonly string[]) => fromContexts(texts.map((text) => memberContext(text)))) as ApiGuide;
  Object.defineProperties(guide, {
    fromContexts: { value: fromContexts },
    allowedTokens: { value: (receiver: ValueType, partial: string) => entry(receiver, partial)?.ids ?? null },
    options: { value: options },
    vocabSize: { value: V },
    stats: { get: () => stats },
    resetStats: { value: () => void (stats = EMPTY_STATS()) },
  });
  return guide;
}

/** Token ids consistent with `partial` given the member `names` that start with it (see the file comment). */
function consistentIds(table: TokenTable, names: string[], partial: string): Int32Array {
  const complete = new Set(names);
  const prefixes = new Set<string>();
  for (const n of names) for (let k = partial.length + 1; k <= n.length; k++) prefixes.add(n.slice(0, k));
  const nameDone = complete.has(partial);
  const out: number[] = [];
  for (let id = 0; id < table.lead.length; id++) {
    if (table.special[id]) {
      if (nameDone) out.push(id);
      continue;
    }
    const lead = table.lead[id]!;
    const full = partial + lead;
    if (table.rest[id] ? complete.has(full) : lead !== '' && prefixes.has(full)) out.push(id);
  }
  return Int32Array.from(out);
}

type Constrain = NonNullable<GenerateOptions['constrain']>;

/** One sequence's incremental state: a lexer fed as tokens arrive, and the receiver of the last dot seen. */
interface SequenceState {
  lexer: JsLexer;
  decoder: TokenStreamDecoder;
  consumed: number;
  /** receiver cache: the dot's offset and its context */
  dot: number;
  receiver: ValueType | null;
}

/**
 * A `GenerateOptions['constrain']` hook that runs `guide` for sequences whose prompts are
 * `promptTexts` (one per sequence, in order). Each step decodes only the new ids per sequence
 * (stream decoders) and lexes only the new text (each prompt is lexed once, shared between the
 * sequences that start from it); a receiver is inferred once per dot, not once per step.
 */
export function apiGuideConstrain(tokenizer: TextTokenizer, promptTexts: readonly string[], guide: ApiGuide): Constrain {
  if (guide.vocabSize !== tokenizer.vocabSize)
    throw new Error(`apiGuideConstrain: guide built for V = ${guide.vocabSize}, tokenizer has ${tokenizer.vocabSize}`);
  const promptLexers = new Map<string, JsLexer>();
  const states: (SequenceState | undefined)[] = [];
  const fresh = (b: number): SequenceState => {
    const text = promptTexts[b]!;
    let base = promptLexers.get(text);
    if (!base) {
      base = new JsLexer();
      base.append(text);
      promptLexers.set(text, base);
    }
    return { lexer: base.clone(), decoder: tokenizer.createDecoder(), consumed: 0, dot: -1, receiver: null };
  };
  return (_step, generated) => {
    if (generated.length !== promptTexts.length) {
      throw new Error(`apiGuideConstrain: ${generated.length} sequences, but ${promptTexts.length} prompt texts`);
    }
    const contexts = generated.map((ids, b): MemberContext | null => {
      let s = states[b];
      if (!s || ids.length < s.consumed) s = states[b] = fresh(b); // a new generation reusing the hook
      let added = '';
      for (let i = s.consumed; i < ids.length; i++) {
        const id = ids[i]!;
        if (Number.isInteger(id) && id >= 0 && id < tokenizer.vocabSize) added += s.decoder.push(id);
      }
      s.consumed = ids.length;
      if (added !== '') s.lexer.append(added);
      return contextOf(s);
    });
    const out = guide.fromContexts(contexts);
    if (!out) return null;
    return out.bias ? { bias: out.bias } : { allowMask: out.allowMask! };
  };
}

function contextOf(s: SequenceState): MemberContext | null {
  const site = memberSite(s.lexer);
  if (!site) return null;
  if (site.dot !== s.dot) {
    s.dot = site.dot;
    s.receiver = memberContext(s.lexer)?.receiver ?? null;
  }
  return s.receiver && { receiver: s.receiver, partial: site.partial, dot: site.dot, optional: site.optional };
}

/** The guide's counters as namespaced metrics (`explore/api_*`), with the guided fraction of rows. */
export function apiGuideMetrics(stats: ApiGuideStats): Record<string, number> {
  return {
    'explore/api_guided_steps': stats.guidedSteps,
    'explore/api_guided_rows': stats.guidedRows,
    'explore/api_masked_rows': stats.maskedRows,
    'explore/api_member_sites': stats.memberSites,
    'explore/api_unknown_receiver': stats.unknownReceiver,
    'explore/api_no_fit': stats.noFit,
    'explore/api_guided_row_frac': stats.rowsSeen === 0 ? 0 : stats.guidedRows / stats.rowsSeen,
  };
}
