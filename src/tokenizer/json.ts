import { PRETOKENIZER_NAME } from './pretokenize';
import { errorText } from '../util/errors';

export const TOKENIZER_FORMAT = 'coderl-bpe';
export const TOKENIZER_VERSION = 1;
export const SUPPORTED_TOKENIZER_VERSIONS: readonly number[] = [1];

/** The serialised tokenizer: everything needed to rebuild it exactly. */
export interface TokenizerJSON {
  format: typeof TOKENIZER_FORMAT;
  version: number;
  /** name of the pre-tokenisation rules (pretokenize.ts); a different name means different chunks */
  pretokenizer: string;
  /** 256 + merges.length / 2 + specials.length, stored to catch truncated or edited files */
  vocabSize: number;
  specials: string[];
  /** flat pairs: merge i joins merges[2i] and merges[2i+1] into token 256 + i */
  merges: number[];
}

const KEYS = ['format', 'version', 'pretokenizer', 'vocabSize', 'specials', 'merges'];

function fail(what: string): never {
  throw new Error(`Tokenizer.fromJSON: ${what}`);
}

/**
 * Checks the shape of a tokenizer JSON (an object, or a string holding one) and returns its
 * merges and specials; the Tokenizer constructor then checks the merges themselves.
 */
export function parseTokenizerJSON(json: unknown): { merges: number[]; specials: string[] } {
  let obj = json;
  if (typeof json === 'string') {
    try {
      obj = JSON.parse(json);
    } catch (e) {
      fail(`not valid JSON: ${errorText(e)}`);
    }
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    fail(`expected an object, got ${obj === null ? 'null' : Array.isArray(obj) ? 'an array' : typeof obj}`);
  }
  const o = obj as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) fail(`unknown field "${key}"`);
  for (const key of KEYS) if (!(key in o)) fail(`missing field "${key}"`);
  if (o.format !== TOKENIZER_FORMAT) fail(`field "format" must be "${TOKENIZER_FORMAT}", got ${JSON.stringify(o.format)}`);
  if (typeof o.version !== 'number' || !SUPPORTED_TOKENIZER_VERSIONS.includes(o.version)) {
    fail(`unsupported version ${JSON.stringify(o.version)}; supported: ${SUPPORTED_TOKENIZER_VERSIONS.join(', ')}`);
  }
  if (o.pretokenizer !== PRETOKENIZER_NAME) {
    fail(`field "pretokenizer" is ${JSON.stringify(o.pretokenizer)}, but this build splits text with "${PRETOKENIZER_NAME}"`);
  }
  const { specials, merges, vocabSize } = o;
  if (!Array.isArray(specials) || !specials.every((s) => typeof s === 'string')) fail('field "specials" must be an array of strings');
  if (!Array.isArray(merges) || !merges.every((m) => Number.isInteger(m))) fail('field "merges" must be an array of integers');
  if (merges.length % 2 !== 0) fail(`field "merges" must hold pairs, but has odd length ${merges.length}`);
  const expected = 256 + merges.length / 2 + specials.length;
  if (vocabSize !== expected) {
    fail(
      `field "vocabSize" is ${JSON.stringify(vocabSize)}, but 256 bytes + ${merges.length / 2} merges + ${specials.length} specials = ${expected}`,
    );
  }
  return { merges: merges as number[], specials: specials as string[] };
}
