import { describe, expect, it } from 'vitest';
import { trainTokenizer, wtf8Encode, type Tokenizer } from '../../tokenizer';
import {
  alignTokens,
  HEAT_BUCKETS,
  HEAT_SCALES,
  heatBucket,
  heatClass,
  heatLegend,
  headerLine,
  mean,
  newlines,
  scaleValue,
  testLine,
  tokenHover,
  tokenInfo,
  tokenKl,
  type TokenArrays,
  type TokenSpan,
} from './tokens';

/** The texts of the spans, for readable expectations. */
const texts = (completion: string, spans: TokenSpan[], offset = 0): string[] =>
  spans.map((s) => completion.slice(s.start - offset, s.end - offset));

describe('alignTokens', () => {
  it('maps texts that concatenate to the completion exactly, with the prompt offset', () => {
    const { spans, exact } = alignTokens(['const', ' x', ' =', ' 1;'], 'const x = 1;', 10);
    expect(exact).toBe(true);
    expect(spans.map((s) => [s.start, s.end, s.kind])).toEqual([
      [10, 15, 'exact'],
      [15, 17, 'exact'],
      [17, 19, 'exact'],
      [19, 22, 'exact'],
    ]);
  });

  it('puts a sampled EOS past the end as a zero-width extra', () => {
    const { spans, exact } = alignTokens(['return', ' 1;', '<|endoftext|>'], 'return 1;');
    expect(exact).toBe(true);
    expect(spans[2]).toEqual({ start: 9, end: 9, kind: 'extra', group: 2 });
    const empty = alignTokens(['a', ''], 'a'); // an EOS that decodes to ''
    expect(empty.exact).toBe(true);
    expect(empty.spans[1]).toMatchObject({ start: 1, end: 1 });
  });

  it('groups the tokens of a split multi-byte character onto that character', () => {
    // '€' is E2 82 AC: a token ending in E2 decodes to 'ab\uFFFD', the next to '\uFFFD\uFFFD x'
    const completion = 'ab€ x = 1';
    const { spans, exact } = alignTokens(['ab\uFFFD', '\uFFFD\uFFFD x', ' =', ' 1'], completion);
    expect(exact).toBe(false);
    expect(spans.slice(0, 2).map((s) => [s.start, s.end, s.kind, s.group])).toEqual([
      [0, 5, 'approx', 0],
      [0, 5, 'approx', 0],
    ]);
    expect(texts(completion, spans.slice(2))).toEqual([' =', ' 1']);
  });

  it('does not resynchronise on a spurious earlier match of the next token', () => {
    const completion = 'a€a a';
    const { spans } = alignTokens(['a\uFFFD', '\uFFFD\uFFFD', 'a', ' a'], completion);
    expect(texts(completion, spans)).toEqual(['a€', 'a€', 'a', ' a']);
  });

  it('degrades without throwing when nothing matches', () => {
    const { spans, exact } = alignTokens(['xyz', 'q'], 'abc');
    expect(exact).toBe(false);
    expect(spans).toHaveLength(2);
    for (const s of spans) expect(s.end).toBeLessThanOrEqual(3);
    expect(alignTokens([], '').spans).toEqual([]);
    expect(alignTokens([], 'abc').exact).toBe(false);
  });

  it("aligns a real tokenizer's per-token decodes of code with non-ASCII text", () => {
    const corpus = ['function f(a) {\n  return a + 1;\n}\n', 'const s = "héllo €";\n', 'let x = 2;\n'];
    const tok: Tokenizer = trainTokenizer(corpus, { vocabSize: 300 });
    const completion = '  return "€ é 😀" + a;\n}\n';
    const encoded = Array.from(tok.encode(completion));
    const bytes = Array.from(wtf8Encode(completion)); // ids 0..255 are the bytes: every multi-byte character split
    for (const ids of [encoded, bytes].map((x) => [...x, tok.eosId])) {
      const tokens = ids.map((id) => tok.decode([id]));
      const { spans } = alignTokens(tokens, completion, 5);
      expect(spans).toHaveLength(ids.length);
      expect(spans[ids.length - 1]!.kind).toBe('extra');
      // the groups cover the completion in order, without gaps
      let c = 5;
      for (const s of spans.filter((x, i) => x.kind !== 'extra' && x.group === i)) {
        expect(s.start).toBe(c);
        c = s.end;
      }
      expect(c).toBe(5 + completion.length);
      for (const [i, s] of spans.entries()) if (s.kind === 'exact') expect(completion.slice(s.start - 5, s.end - 5)).toBe(tokens[i]);
      // each approx group is exactly one character's bytes
      for (const [i, s] of spans.entries())
        if (s.kind === 'approx' && s.group === i) expect(/^\S$/u.test(completion.slice(s.start - 5, s.end - 5))).toBe(true);
    }
  });
});

describe('heat buckets', () => {
  it('orders sequential scales from the lowest value (bucket 0) up', () => {
    expect(heatBucket('logprob', -10)).toBe(0);
    expect(heatBucket('logprob', -5)).toBe(1);
    expect(heatBucket('logprob', -0.05)).toBe(HEAT_BUCKETS - 1);
    expect(heatBucket('logprob', 0)).toBe(HEAT_BUCKETS - 1);
    expect(heatBucket('entropy', 0)).toBe(0);
    expect(heatBucket('entropy', 3)).toBe(HEAT_BUCKETS - 1);
  });

  it('centres diverging scales on 0, symmetrically', () => {
    for (const scale of ['advantage', 'kl'] as const) {
      expect(heatBucket(scale, 0)).toBe(3);
      for (const v of [0.01, 0.05, 0.25, 0.5, 1, 2, 100]) expect(heatBucket(scale, -v)! + heatBucket(scale, v)!).toBe(HEAT_BUCKETS - 1);
    }
    expect(heatBucket('advantage', -2)).toBe(0);
    expect(heatBucket('advantage', 2)).toBe(6);
  });

  it('is monotone and in range for every scale', () => {
    for (const { id } of HEAT_SCALES) {
      let last = -1;
      for (let v = -8; v <= 8; v += 0.01) {
        const b = heatBucket(id, v)!;
        expect(b).toBeGreaterThanOrEqual(last);
        expect(b).toBeLessThan(HEAT_BUCKETS);
        last = b;
      }
      expect(heatLegend(id)).toHaveLength(HEAT_BUCKETS);
    }
  });

  it('has no bucket for a missing value, and class names starting with heat-', () => {
    expect(heatBucket('kl', null)).toBeNull();
    expect(heatBucket('kl', NaN)).toBeNull();
    expect(heatBucket('kl', undefined)).toBeNull();
    expect(heatClass('kl', null)).toBe('heat-none');
    expect(heatClass('advantage', 0)).toBe('heat-advantage-0');
    expect(heatLegend('advantage')[3]).toBe('|v| < 0.25');
    expect(heatLegend('logprob')[0]).toBe('< -5');
  });
});

const record: TokenArrays = {
  tokens: ['return', ' `x`', '<|endoftext|>'],
  ids: [300, 301, 302],
  logprobs: [-0.5, -2, -0.1],
  entropies: [1, 2, 0.5],
  ref_logprobs: [-0.7, -1.5],
  values: [0.1, 0.2, 0.3],
  advantages: [1, -1, 0.5],
  returns: [0.4, 0.5, 0.6],
  raw_advantages: [2, -2, 1],
};

describe('token values and hover', () => {
  it('computes KL = log-prob − reference log-prob, null where one is missing', () => {
    expect(tokenKl(record, 0)).toBeCloseTo(0.2, 12);
    expect(tokenKl(record, 1)).toBeCloseTo(-0.5, 12);
    expect(tokenKl(record, 2)).toBeNull();
    expect(scaleValue(record, 'kl', 1)).toBeCloseTo(-0.5, 12);
    expect(scaleValue(record, 'logprob', 1)).toBe(-2);
    expect(scaleValue(record, 'entropy', 1)).toBe(2);
    expect(scaleValue(record, 'advantage', 1)).toBe(-1);
  });

  it('collects every number of a token', () => {
    const t = tokenInfo(record, 1);
    expect(t).toMatchObject({
      index: 1,
      text: ' `x`',
      id: 301,
      logprob: -2,
      entropy: 2,
      refLogprob: -1.5,
      value: 0.2,
      advantage: -1,
      rawAdvantage: -2,
      return: 0.5,
    });
    expect(t.prob).toBeCloseTo(Math.exp(-2), 12);
    expect(tokenInfo(record, 7)).toMatchObject({ text: '', id: null, logprob: null, prob: null });
  });

  it('renders the hover as markdown with the text in a safe code span', () => {
    const md = tokenHover(tokenInfo(record, 1), 'edited since');
    expect(md).toContain('**token 1** `` " `x`" `` · id 301');
    expect(md).toContain('log-prob: -2.0000 (p = 0.1353)');
    expect(md).toContain('KL (log-prob − ref): -0.5000');
    expect(md).toContain('advantage: -1.0000 (before whitening -2.0000)');
    expect(md).toContain('return: 0.5000');
    expect(md).toContain('_edited since_');
    expect(tokenHover(tokenInfo(record, 2))).toContain('ref log-prob: —');
  });

  it('averages finite values only', () => {
    expect(mean([1, 2, NaN, 3])).toBe(2);
    expect(mean([])).toBeNull();
  });
});

describe('lines', () => {
  const prompt = '/** doc */\nfunction add(a, b) {\n';

  it('finds the function header by entry point, else the last non-blank line', () => {
    expect(headerLine(prompt, 'add')).toBe(2);
    expect(headerLine('// x\nconst $f = (a) => {\n', '$f')).toBe(2);
    expect(headerLine('// a\n// b\n\n')).toBe(2);
    expect(headerLine('')).toBe(1);
  });

  it('maps test locations to editor lines of prompt + completion', () => {
    expect(newlines(prompt)).toBe(2);
    expect(testLine({ location: { in: 'completion', line: 1 } }, prompt)).toEqual({ line: 3, known: true });
    expect(testLine({ location: { in: 'prompt', line: 1 } }, prompt)).toEqual({ line: 1, known: true });
    expect(testLine({ location: { in: 'tests', line: 4 } }, prompt, 'add')).toEqual({ line: 2, known: false });
    expect(testLine({}, prompt, 'add')).toEqual({ line: 2, known: false });
  });
});
