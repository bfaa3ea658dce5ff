/**
 * The prefix tree of a batch, and the float64 decoder's scoring forward over it (readRows): on
 * every fixture, with and without adapters and a value head, each read row's logits and value are
 * the very numbers of the full forward, computed from one node per distinct prefix; every other
 * row is 0. Then scoreActions on a policy that shares prefixes gives the numbers of one that does
 * not, sequence by sequence.
 */
import { describe, expect, test } from 'vitest';
import { HF_FIXTURE_NAMES, loadHfFixture } from '../testing/hf-fixtures';
import { Rng } from '../util/random';
import { completionBatch, type Sequence } from '../rl/data';
import { scoreActions } from '../rl/episodes';
import type { PolicyBackend } from './backend';
import { DecoderCpu } from './decoder-cpu';
import { initLoraAdapters, linearModules, loraModules, loraScaling } from './lora';
import { padPrompts } from './generate-common';
import { prefixTree } from './prefix-tree';

describe('prefixTree', () => {
  test('one node per distinct prefix, parents first; chains are ancestors then the node; rows after the last read row are -1', () => {
    // three rows: two share "5 6", the third repeats the first; T 4, row 1 reads nothing past t 2
    const tokens = [5, 6, 7, 0, 5, 6, 8, 9, 5, 6, 7, 0];
    const read = [0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0];
    const t = prefixTree(tokens, 3, 4, read);
    expect(t.size).toBe(4); // 5, 5 6, 5 6 7, 5 6 8
    expect([...t.tokens]).toEqual([5, 6, 7, 8]);
    expect([...t.positions]).toEqual([0, 1, 2, 2]);
    expect([...t.rowNode]).toEqual([0, 1, 2, -1, 0, 1, 3, -1, 0, 1, -1, -1]);
    const chain = (u: number) => [...t.chainNodes.subarray(t.chainStart[u]!, t.chainStart[u + 1]!)];
    expect([0, 1, 2, 3].map(chain)).toEqual([[0], [0, 1], [0, 1, 2], [0, 1, 3]]);
  });

  test('the same token after different prefixes is two nodes; a row with nothing read is no node', () => {
    const t = prefixTree([1, 2, 3, 2, 4, 4], 3, 2, [1, 1, 1, 1, 0, 0]);
    expect(t.size).toBe(4);
    expect([...t.rowNode]).toEqual([0, 1, 2, 3, -1, -1]);
    expect(() => prefixTree([1, 2], 1, 3, [1, 1, 1])).toThrow(/2 tokens for \(B, T\) = \(1, 3\)/);
    expect(() => prefixTree([1, 2, 3], 1, 3, [1])).toThrow(/1 read-row flags/);
  });
});

/** Groups of `G` sequences on each of `P` prompts: random prompt and completion lengths and ids. */
function groups(P: number, G: number, V: number, rng: Rng): Sequence[] {
  const id = () => 3 + Math.floor(rng.next() * (V - 3));
  const out: Sequence[] = [];
  for (let p = 0; p < P; p++) {
    const prompt = Array.from({ length: 3 + Math.floor(rng.next() * 6) }, id);
    for (let g = 0; g < G; g++) {
      // one sample repeats the one before it: a whole sequence shared
      const completion = g === 2 ? out.at(-1)!.ids.slice(prompt.length) : Array.from({ length: 1 + Math.floor(rng.next() * 5) }, id);
      out.push({ ids: [...prompt, ...completion], promptLength: prompt.length });
    }
  }
  return out;
}

describe.each(HF_FIXTURE_NAMES)('the scoring forward over shared prefixes (%s)', (name) => {
  const fx = loadHfFixture(name);
  const V = fx.arch.vocabSize;
  const make = (lora: boolean, valueHead: boolean) => {
    const m = new DecoderCpu(fx.arch, fx.weights);
    if (lora) {
      const cfg = { rank: 2, alpha: 4, targets: [...new Set(linearModules(fx.arch).map((x) => x.path.split('.').at(-1)!))] };
      const modules = loraModules(fx.arch, cfg);
      const init = initLoraAdapters(modules, 2, new Rng(4));
      init.B.forEach((b) => b.forEach((_, i) => (b[i] = 0.02 * Math.cos(i))));
      m.setLora({ modules, rank: 2, scaling: loraScaling(cfg), ...init });
    }
    if (valueHead) m.addValueHead(3, 0.1);
    return m;
  };

  test.each([
    [false, false],
    [true, true],
  ])('adapters %s, value head %s: each read row is the full forward to the bit, every other row 0', (lora, valueHead) => {
    const m = make(lora, valueHead);
    const seqs = groups(3, 4, V, new Rng(11));
    const b = completionBatch(seqs, 0, fx.arch.maxPositions);
    const BT = b.B * b.T;
    // the logits of every other action row only: logitRows a subset of readRows
    const logitRows = Float32Array.from(b.mask, (x, i) => (x && i % 2 ? 1 : 0));
    const full = m.forward({ tokens: b.tokens, B: b.B, T: b.T });
    const tree = m.forward({ tokens: b.tokens, B: b.B, T: b.T, logitRows, readRows: b.mask });
    let nodes = 0;
    for (let n = 0; n < BT; n++) {
      const row = (x: Float64Array) => [...x.subarray(n * V, (n + 1) * V)];
      expect(row(tree.logits), `row ${n}`).toEqual(logitRows[n] ? row(full.logits) : new Array(V).fill(0));
      if (valueHead) expect(tree.values![n], `value of row ${n}`).toBe(b.mask[n] ? full.values![n] : 0);
      if (logitRows[n]) nodes++;
    }
    expect(nodes).toBeGreaterThan(0);
    expect(tree.values === undefined).toBe(!valueHead);
    // nothing is kept for a backward
    expect(() => m.backward(new Float64Array(BT * V))).toThrow(/training forward/);
    // fewer rows computed than the batch holds: the prompts once per group, no padding
    expect(prefixTree(b.tokens, b.B, b.T, b.mask).size).toBeLessThan(seqs.reduce((s, q) => s + q.ids.length, 0) * 0.8);
  });

  test('scoreActions: a policy that shares prefixes gives the numbers of one that computes every row, in the given order', async () => {
    const m = make(true, true);
    const backend = (shares: boolean): PolicyBackend =>
      ({
        kind: 'cpu',
        config: { nLayer: 1, dModel: fx.arch.dModel, nHead: 1, contextLength: fx.arch.maxPositions, vocabSize: V },
        sharesPrefixes: shares,
        forward: async (input: Parameters<PolicyBackend['forward']>[0]) => {
          // one that does not share computes every row (as the GPU does)
          const r = m.forward(shares ? input : { ...input, readRows: undefined });
          return { logits: Float32Array.from(r.logits), values: Float32Array.from(r.values!) };
        },
      }) as unknown as PolicyBackend;
    const rng = new Rng(5);
    const seqs = groups(4, 3, V, rng).sort(() => rng.next() - 0.5);
    const [a, b] = [
      await scoreActions(backend(false), seqs, 0, 1.25, { entropy: true, batch: 5 }),
      await scoreActions(backend(true), seqs, 0, 1.25, { entropy: true, batch: 5 }),
    ];
    expect(b.logp.map((x) => [...x])).toEqual(a.logp.map((x) => [...x]));
    expect(b.values.map((x) => [...x])).toEqual(a.values.map((x) => [...x]));
    expect(b.entropy.map((x) => [...x])).toEqual(a.entropy.map((x) => [...x]));
    expect(a.logp.map((x) => x.length)).toEqual(seqs.map((s) => s.ids.length - s.promptLength));
  });
});

describe.each(HF_FIXTURE_NAMES)('a prefill that repeats prompts (%s)', (name) => {
  const fx = loadHfFixture(name);
  const V = fx.arch.vocabSize;
  test('computes each distinct prompt once; every row, and the decode step after it, is that row prefilled alone, to the bit', () => {
    const m = new DecoderCpu(fx.arch, fx.weights);
    m.addValueHead(2, 0.1);
    const rng = new Rng(8);
    const id = () => 3 + Math.floor(rng.next() * (V - 3));
    const p1 = Array.from({ length: 6 }, id);
    const p2 = Array.from({ length: 4 }, id);
    const prompts = [p1, p1, p2, p1, p2];
    const P = 6;
    const Tmax = P + 2;
    const run = (ps: number[][], lastOnly: boolean) => {
      const { start, tokens, positions } = padPrompts(ps, P);
      const cache = m.createKvCache(ps.length, Tmax);
      const pre = m.forward({ tokens, positions, start, B: ps.length, T: P }, { cache, pos: 0 }, lastOnly);
      const next = ps.map((_, b) => 3 + ((b * 7) % (V - 3)));
      const step = m.forward(
        { tokens: next, positions: Uint32Array.from(start, (s) => P - s), start, B: ps.length, T: 1 },
        { cache, pos: P },
        true,
      );
      return { pre, step };
    };
    for (const lastOnly of [true, false]) {
      const all = run(prompts, lastOnly);
      const R = all.pre.lastOnly ? 1 : P;
      prompts.forEach((p, b) => {
        // alone, with the decode token row b gets in the batch
        const { start, tokens, positions } = padPrompts([p], P);
        const cache = m.createKvCache(1, Tmax);
        const pre = m.forward({ tokens, positions, start, B: 1, T: P }, { cache, pos: 0 }, lastOnly);
        const step = m.forward(
          { tokens: [3 + ((b * 7) % (V - 3))], positions: [P - start[0]!], start, B: 1, T: 1 },
          { cache, pos: P },
          true,
        );
        expect([...all.pre.logits.subarray(b * R * V, (b + 1) * R * V)], `row ${b} prefill`).toEqual([...pre.logits]);
        expect([...all.pre.values!.subarray(b * R, (b + 1) * R)]).toEqual([...pre.values!]);
        expect([...all.step.logits.subarray(b * V, (b + 1) * V)], `row ${b} decode`).toEqual([...step.logits]);
      });
    }
  });
});
