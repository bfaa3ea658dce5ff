import { describe, expect, test } from 'vitest';
import type { OnnxModelEntry } from '../../store/evalSlice';
import type { HfReferenceModel } from './reference';
import { importedReference } from '../../rl/reference';
import { referenceChoice, referenceFor, SFT_REFERENCE, STORED_REFERENCE, storedReference } from './reference';

const sha = (c: string) => c.repeat(64);
const model = (name: string, s: string): OnnxModelEntry => ({
  name,
  bytes: new Uint8Array(1),
  tokenizerText: '{}',
  contextLength: 96,
  vocabSize: 320,
  ref: { name, sha256: sha(s) },
});
const A = model('a.onnx', 'a');
const B = model('b.onnx', 'b');

describe('the KL reference choice', () => {
  test('the SFT policy when the config names none, with every imported model offered', () => {
    const c = referenceChoice(undefined, [A, B]);
    expect(c.options.map((o) => [o.value, o.label])).toEqual([
      [SFT_REFERENCE, 'SFT policy (default)'],
      ['onnx:a.onnx', 'ONNX: a.onnx'],
      ['onnx:b.onnx', 'ONNX: b.onnx'],
    ]);
    expect(c.value).toBe(SFT_REFERENCE);
    expect(referenceChoice(undefined, []).options).toHaveLength(1);
  });

  test('an imported model the config names is selected by name and SHA-256, and described', () => {
    const c = referenceChoice(B.ref, [A, B]);
    expect(c.value).toBe('onnx:b.onnx');
    expect(c.detail).toMatch(/^b\.onnx \(SHA-256 bbbbbbbbbbbb…\): vocabulary 320, context 96\. It runs in onnxruntime-web \(wasm\)/);
    expect(importedReference(B.ref, [A, B])).toBe(B);
    // the same name with other bytes (a later import of another file) is not that model
    expect(importedReference({ name: 'b.onnx', sha256: sha('c') }, [A, B])).toBeNull();
  });

  test('a named model this page has not imported is offered as it is, and kept when chosen', () => {
    const named = { name: 'gone.onnx', sha256: sha('d') };
    const c = referenceChoice(named, [A]);
    expect(c.value).toBe(STORED_REFERENCE);
    expect(c.options.at(-1)).toEqual({ value: STORED_REFERENCE, label: 'ONNX: gone.onnx (not imported)' });
    expect(c.detail).toMatch(
      /^gone\.onnx \(SHA-256 dddddddddddd…\) is not imported in this page: a run that kept it in its run directory resumes with it/,
    );
    expect(referenceFor(STORED_REFERENCE, [A], named)).toBe(named);
  });

  test("a choice becomes config.rl.reference: none for the SFT policy, the model's record otherwise", () => {
    expect(referenceFor(SFT_REFERENCE, [A, B], A.ref)).toBeUndefined();
    expect(referenceFor('onnx:a.onnx', [A, B], undefined)).toEqual({ name: 'a.onnx', sha256: sha('a') });
    expect(() => referenceFor('onnx:zzz.onnx', [A], undefined)).toThrow(/no imported model is offered as "onnx:zzz\.onnx"/);
  });

  test('a stored config is read as it is: missing fields or a malformed reference mean the SFT policy', () => {
    expect(storedReference({ seed: 1, cfg: { preset: 'tiny', rl: { reference: { name: 'a.onnx', sha256: sha('a') } } } })).toEqual({
      name: 'a.onnx',
      sha256: sha('a'),
    });
    for (const config of [
      null,
      {},
      { cfg: { preset: 'tiny' } },
      { cfg: { rl: {} } },
      { cfg: { rl: { reference: 'a.onnx' } } },
      { cfg: { rl: { reference: { name: 1, sha256: 'x' } } } },
    ]) {
      expect(storedReference(config), JSON.stringify(config)).toBeNull();
    }
  });

  test('a stored Hugging Face model is offered, chosen by its record, and named as a folder when it is not stored here', () => {
    const hf = (id: string, name: string, s: string): HfReferenceModel =>
      ({
        id,
        complete: true,
        bytes: 10,
        ref: { name: `${name}/`, sha256: sha(s) },
        manifest: {
          name,
          summary: { description: 'GPT2LMHeadModel: 1 layers (26.1k parameters, F32)', ref: { name: `${name}/`, sha256: sha(s) } },
        },
      }) as unknown as HfReferenceModel;
    const H = hf('sft-hf', 'sft-hf', 'e');
    const H2 = hf('sft-hf-2', 'sft-hf', 'f');
    const c = referenceChoice(H.ref, [A], [H, H2]);
    expect(c.options.map((o) => [o.value, o.label])).toEqual([
      [SFT_REFERENCE, 'SFT policy (default)'],
      ['onnx:a.onnx', 'ONNX: a.onnx'],
      ['hf:sft-hf', 'Hugging Face: sft-hf'],
      ['hf:sft-hf-2', 'Hugging Face: sft-hf (sft-hf-2)'],
    ]);
    expect(c.value).toBe('hf:sft-hf');
    expect(c.detail).toMatch(/^sft-hf\/ \(SHA-256 eeeeeeeeeeee…\): GPT2LMHeadModel: 1 layers .*must use the run's tokenizer/);
    expect(referenceChoice(H2.ref, [A], [H, H2]).value).toBe('hf:sft-hf-2');
    expect(referenceFor('hf:sft-hf-2', [A], undefined, [H, H2])).toEqual(H2.ref);
    const gone = referenceChoice({ name: 'old/', sha256: sha('9') }, [A], [H]);
    expect(gone.value).toBe(STORED_REFERENCE);
    expect(gone.options.at(-1)?.label).toBe('Hugging Face: old/ (not imported)');
    expect(gone.detail).toMatch(/a new run needs it imported in the Hugging Face models panel\.$/);
  });
});
