import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../model/config';
import { CpuModel } from '../../model/cpu';
import { cpuGenerate } from '../../model/cpu-generate';
import { initParams } from '../../model/init';
import { paramTable } from '../../model/params';
import { trainTokenizer, type Tokenizer } from '../../tokenizer';
import { apiGuideConstrain, apiGuideMetrics, createApiGuide } from './api-bias';
import { lookup } from './api-graph';

/** Small JavaScript programs: the tokenizer's training corpus (a few hundred lines once varied). */
const SNIPPETS = [
  `function wordCount(text) {\n  const words = text.trim().split(" ");\n  return words.filter((w) => w.length > 0).length;\n}`,
  `const reverse = (s) => s.split("").reverse().join("");`,
  `function total(xs) {\n  return xs.reduce((acc, x) => acc + x, 0);\n}`,
  `const evens = (xs) => xs.filter((x) => x % 2 === 0).map((x) => x * 2);`,
  `function stack() {\n  const items = [];\n  items.push(1);\n  items.push(2);\n  return items.pop();\n}`,
  `const first = (s) => s.slice(0, 1).toUpperCase() + s.slice(1).toLowerCase();`,
  `function pad(n, width) {\n  return String(n).padStart(width, "0");\n}`,
  `const isPal = (s) => s === s.split("").reverse().join("");`,
  `function maxOf(xs) {\n  return Math.max(...xs);\n}`,
  `const round2 = (x) => Math.round(x * 100) / 100;`,
  `function has(xs, v) {\n  return xs.includes(v) || xs.indexOf(v) >= 0;\n}`,
  `const keys = (o) => Object.keys(o).sort();`,
  `function counts(s) {\n  const m = new Map();\n  for (const ch of s) m.set(ch, (m.get(ch) ?? 0) + 1);\n  return m;\n}`,
  `const unique = (xs) => [...new Set(xs)];`,
  `function slug(s) {\n  return s.trim().toLowerCase().replaceAll(" ", "-");\n}`,
  `const str = JSON.stringify({ a: 1 });\nconst obj = JSON.parse(str);`,
  `function lengths(words) {\n  return words.map((w) => w.length);\n}`,
  `const starts = (s, p) => s.startsWith(p) && !s.endsWith(p);`,
  `function fixed(x) {\n  return x.toFixed(2);\n}`,
  `const sorted = (xs) => xs.slice().sort((a, b) => a - b);`,
  `function queue() {\n  const q = [3, 1, 2];\n  q.unshift(0);\n  q.shift();\n  return q.length;\n}`,
  `const flat = (xss) => xss.flat().concat([1]).at(-1);`,
  `function find(xs) {\n  return xs.find((x) => x > 2) ?? xs.findIndex((x) => x < 0);\n}`,
  `const every = (xs) => xs.every((x) => x > 0) && xs.some((x) => x > 9);`,
  `function chars(s) {\n  return s.charAt(0) + s.charCodeAt(1) + s.substring(2, 4);\n}`,
];

function corpus(): string[] {
  const docs: string[] = [];
  const names = ['s', 'text', 'line', 'word', 'xs', 'items', 'values', 'arr'];
  for (let i = 0; i < 12; i++) {
    for (const s of SNIPPETS) docs.push(s.replaceAll('xs', names[i % names.length]!));
    const n = names[i % names.length]!;
    docs.push(`const ${n}Len = ${n}.length;\nconst ${n}Part = ${n}.slice(1, 3);\n${n}.push(${i});\nconst ${n}Str = ${n}.toString();`);
  }
  return docs;
}

let cached: Tokenizer | null = null;
function tokenizer(): Tokenizer {
  cached ??= trainTokenizer(corpus(), { vocabSize: 800 });
  return cached;
}

/** The id of the token whose text is exactly `text` (the test relies on it being one token). */
function idOf(tok: Tokenizer, text: string): number {
  for (let id = 0; id < tok.vocabSize; id++) if (!tok.isSpecial(id) && tok.decode([id]) === text) return id;
  throw new Error(`no single token ${JSON.stringify(text)}`);
}

function allowed(mask: Uint32Array, W: number, b: number, id: number): boolean {
  return ((mask[b * W + (id >>> 5)]! >>> (id & 31)) & 1) === 1;
}

describe('API guide', () => {
  it('trains a tokenizer with whole-word member tokens', () => {
    const tok = tokenizer();
    console.log(`tokenizer: ${corpus().join('\n').split('\n').length} lines of JS, V = ${tok.vocabSize}`);
    for (const w of ['length', 'slice', 'push', 'map', 'split', ' length', ')', '(']) expect(idOf(tok, w)).toBeGreaterThan(0);
  });

  it('biases string members after "abc". and not array-only ones', () => {
    const tok = tokenizer();
    const guide = createApiGuide(tok, { mode: 'bias', strength: 4 });
    const V = tok.vocabSize;
    const out = guide(['const n = "abc".', 'const n = "abc".sl', 'x = [1, 2].', 'y = foo.'])!;
    expect(out.rows).toEqual([0, 1, 2]);
    const bias = (b: number, text: string) => out.bias![b * V + idOf(tok, text)];
    expect(bias(0, 'length')).toBe(4);
    expect(bias(0, 'slice')).toBe(4);
    expect(bias(0, 'split')).toBe(4);
    expect(bias(0, 's')).toBe(4); // a prefix of slice/split/startsWith...
    expect(bias(0, 'push')).toBe(0);
    expect(bias(0, 'map')).toBe(0);
    expect(bias(0, ' length')).toBe(0); // a space after the dot is legal JS but not a member name start
    expect(bias(0, '(')).toBe(0);
    expect(bias(1, 'i')).toBe(4); // "sl" + "i" starts slice
    expect(bias(1, 'length')).toBe(0);
    expect(bias(2, 'push')).toBe(4);
    expect(bias(2, 'map')).toBe(4);
    expect(bias(2, 'length')).toBe(4);
    for (let id = 0; id < V; id++) expect(out.bias![3 * V + id]).toBe(0); // unknown receiver: neutral row
  });

  it('after a complete name allows what ends it, and EOS', () => {
    const tok = tokenizer();
    const guide = createApiGuide(tok, { mode: 'mask', strength: 0 });
    const ids = guide.allowedTokens({ type: 'string' }, 'length')!;
    const texts = new Set(Array.from(ids, (id) => (tok.isSpecial(id) ? `<special ${id}>` : tok.decode([id]))));
    expect(texts.has(')')).toBe(true);
    expect(texts.has(' length')).toBe(true); // ends the identifier; what follows is not the guide's business
    expect(texts.has(`<special ${tok.eosId}>`)).toBe(true);
    expect(texts.has('s')).toBe(false); // "lengths" is no member
    expect(guide.allowedTokens({ type: 'string' }, 'len')!.includes(idOf(tok, '('))).toBe(false);
    expect(guide.allowedTokens({ type: 'string' }, 'foo')).toBeNull();
    expect(guide.allowedTokens({ type: 'object' }, '')).toBeNull(); // open type: any key may exist
    expect(guide.allowedTokens({ type: 'unknown' }, '')).toBeNull();
    // every allowed token is consistent with some real member name
    for (const id of guide.allowedTokens({ type: 'array' }, 'f')!) {
      if (tok.isSpecial(id)) continue;
      const lead = /^[\w$]*/.exec(tok.decode([id]))![0];
      expect(
        ['filter', 'find', 'findIndex', 'findLast', 'findLastIndex', 'flat', 'flatMap', 'forEach', 'fill'].some((n) =>
          n.startsWith('f' + lead),
        ),
      ).toBe(true);
      if (tok.decode([id]) !== lead) expect(lookup('array', 'f' + lead)).toBeDefined();
    }
  });

  it('masks only guided rows and never bans a whole row', () => {
    const tok = tokenizer();
    const guide = createApiGuide(tok, { mode: 'mask', strength: 1 });
    const V = tok.vocabSize;
    const W = Math.ceil(V / 32);
    const texts = [
      '"abc".',
      '"abc".len',
      '"abc".length',
      '[1, 2].',
      '[1].pu',
      'Math.',
      'Math.PI',
      'JSON.st',
      'new Map().',
      'foo.',
      '"abc".zz',
      'const o = {};\no.',
      '3.',
      'x = 1',
      '"abc".split(",").forEach(f).',
      '/** @param {number} n */\nconst f = (n) => n.to',
    ];
    const out = guide(texts)!;
    expect(out.bias).toBeUndefined();
    const mask = out.allowMask!;
    expect(mask.length).toBe(texts.length * W);
    for (let b = 0; b < texts.length; b++) {
      let n = 0;
      for (let id = 0; id < V; id++) n += allowed(mask, W, b, id) ? 1 : 0;
      expect(n, texts[b]).toBeGreaterThan(0);
      if (!out.rows.includes(b)) expect(n, texts[b]).toBe(V); // unguided: everything allowed
    }
    expect(out.rows).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 15]);
    expect(allowed(mask, W, 3, idOf(tok, 'push'))).toBe(true);
    expect(allowed(mask, W, 0, idOf(tok, 'push'))).toBe(false);
    expect(allowed(mask, W, 0, idOf(tok, 'length'))).toBe(true);
    expect(guide.stats).toMatchObject({
      calls: 1,
      guidedSteps: 1,
      rowsSeen: 16,
      guidedRows: 10,
      maskedRows: 10,
      unknownReceiver: 2,
      noFit: 2,
    });
    expect(apiGuideMetrics(guide.stats)['explore/api_masked_rows']).toBe(10);
    guide.resetStats();
    expect(guide.stats.calls).toBe(0);
    expect(guide(['foo.', 'x = 1'])).toBeNull(); // nothing to guide: no constraint at all
  });

  it('rejects bad options', () => {
    const tok = tokenizer();
    expect(() => createApiGuide(tok, { mode: 'soft' as never, strength: 1 })).toThrow(/mode/);
    expect(() => createApiGuide(tok, { mode: 'bias', strength: NaN })).toThrow(/strength/);
    expect(() => createApiGuide(tok, { mode: 'bias', strength: 1, extra: 1 } as never)).toThrow(/unknown option "extra"/);
  });

  it('the constrain hook, fed token by token, matches the guide on whole texts', () => {
    const tok = tokenizer();
    const prompts = ['function f(s) {\n  const t = "ab";\n  return t', 'const xs = [1, 2];\nxs', 'foo'];
    const completions = ['.slice(1).toUpperCase().length;\n}', '.map((x) => x * 2).filter(Boolean).push(3);', '.bar.baz();'];
    const guide = createApiGuide(tok, { mode: 'bias', strength: 2 });
    const reference = createApiGuide(tok, { mode: 'bias', strength: 2 });
    const hook = apiGuideConstrain(tok, prompts, guide);
    const ids = completions.map((c) => Array.from(tok.encode(c)));
    const steps = Math.max(...ids.map((x) => x.length));
    let guided = 0;
    for (let s = 0; s <= steps; s++) {
      const generated = ids.map((x) => x.slice(0, s));
      const got = hook(s, generated);
      const want = reference(prompts.map((p, b) => p + tok.decode(generated[b]!)));
      expect(got?.bias ?? null, `step ${s}`).toEqual(want?.bias ?? null);
      if (got) guided++;
    }
    expect(guided).toBeGreaterThan(5);
    expect(guide.stats.guidedSteps).toBe(guided);
    expect(() => hook(0, [[]])).toThrow(/1 sequences, but 3 prompt texts/);
  });

  it('drives cpuGenerate: a masked first step only samples allowed tokens', () => {
    const tok = tokenizer();
    const cfg: ModelConfig = { nLayer: 1, dModel: 16, nHead: 2, contextLength: 48, vocabSize: tok.vocabSize };
    const model = new CpuModel(cfg, initParams(paramTable(cfg), 5));
    const prompts = ['const s = "hello";\nconst n = s.', 'const a = [3];\na.'];
    const guide = createApiGuide(tok, { mode: 'mask', strength: 0 });
    const res = cpuGenerate(
      model,
      prompts.map((p) => Array.from(tok.encode(p))),
      {
        maxNewTokens: 3,
        temperature: 1,
        seed: 9,
        constrain: apiGuideConstrain(tok, prompts, guide),
      },
    );
    expect(guide.allowedTokens({ type: 'string' }, '')!.includes(res.tokens[0]![0]!)).toBe(true);
    expect(guide.allowedTokens({ type: 'array', element: 'number' }, '')!.includes(res.tokens[1]![0]!)).toBe(true);
    expect(guide.stats.maskedRows).toBeGreaterThanOrEqual(2);
  });

  it('is fast: 16 sequences x 40 steps', () => {
    const tok = tokenizer();
    const prompt = `${SNIPPETS.join('\n\n')}\n\n/** @param {string} text */\nfunction g(text) {\n  const words = text`;
    const completion =
      '.trim().split(" ");\n  const n = words.length;\n  return words.map((w) => w.toUpperCase().slice(0, n)).join("-").padEnd(9);\n}\n';
    const ids = Array.from(tok.encode(completion));
    expect(ids.length).toBeGreaterThanOrEqual(40);
    const B = 16;
    const prompts = Array.from({ length: B }, (_, b) => (b % 2 === 0 ? prompt : prompt.replace('text`', 'text ')));
    for (const mode of ['bias', 'mask'] as const) {
      const runs: number[] = [];
      for (let rep = 0; rep < 5; rep++) {
        const guide = createApiGuide(tok, { mode, strength: 3 });
        const hook = apiGuideConstrain(tok, prompts, guide);
        const t0 = performance.now();
        for (let s = 0; s < 40; s++)
          hook(
            s,
            prompts.map((_, b) => ids.slice(0, Math.max(0, s - (b % 4)))),
          );
        runs.push(performance.now() - t0);
        expect(guide.stats.guidedRows).toBeGreaterThan(100);
        if (rep === 0)
          console.log(
            `api guide (${mode}): guided ${guide.stats.guidedRows} of ${guide.stats.rowsSeen} rows; prompt ${prompt.length} chars, V = ${tok.vocabSize}`,
          );
      }
      // the first run includes JIT warm-up; later runs are the steady state of a training loop
      console.log(
        `api guide (${mode}): ${B} sequences x 40 steps: first run ${runs[0]!.toFixed(1)} ms, best of the next 4 ${Math.min(...runs.slice(1)).toFixed(1)} ms`,
      );
    }
  });
});
