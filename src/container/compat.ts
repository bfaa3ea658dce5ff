import type { DecodedCheckpoint } from './format';
import { CheckpointError, isPlainObject } from './header';

export interface CompatExpectation {
  /**
   * the whole config the caller will build a model from; compared field by field (nested objects
   * by path), so fields missing on either side are reported
   */
  config?: Record<string, unknown>;
  /** tensor name -> the shape the model needs */
  tensors?: Record<string, number[]>;
}

export interface Compatibility {
  ok: boolean;
  /** one line per mismatch, each naming the config field or tensor */
  problems: string[];
}

/**
 * Compares a decoded checkpoint with what a model expects and lists every difference: config
 * fields missing, extra or different; tensors missing, extra or of another shape.
 */
export function checkCompatible(decoded: Pick<DecodedCheckpoint, 'config' | 'tensors'>, expected: CompatExpectation): Compatibility {
  const problems: string[] = [];
  if (expected.config) compareObjects(decoded.config, expected.config, 'config', problems);
  if (expected.tensors) compareTensors(decoded.tensors, expected.tensors, problems);
  return { ok: problems.length === 0, problems };
}

/** checkCompatible, throwing a CheckpointError that lists every problem when there is one. */
export function assertCompatible(decoded: Pick<DecodedCheckpoint, 'config' | 'tensors'>, expected: CompatExpectation): void {
  const { ok, problems } = checkCompatible(decoded, expected);
  if (!ok) throw new CheckpointError(`checkpoint does not fit the model (${problems.length} problems):\n  ${problems.join('\n  ')}`);
}

const show = (v: unknown) => (v === undefined ? 'undefined' : JSON.stringify(v));

function compareObjects(got: Record<string, unknown>, want: Record<string, unknown>, path: string, problems: string[]): void {
  const keys = [...new Set([...Object.keys(want), ...Object.keys(got)])].sort();
  for (const key of keys) {
    const where = `${path}.${key}`;
    const inGot = Object.hasOwn(got, key);
    const inWant = Object.hasOwn(want, key);
    if (!inGot) problems.push(`${where}: missing from the checkpoint (expected ${show(want[key])})`);
    else if (!inWant) problems.push(`${where}: in the checkpoint (${show(got[key])}) but not in the expected config`);
    else if (isPlainObject(got[key]) && isPlainObject(want[key])) {
      compareObjects(got[key] as Record<string, unknown>, want[key] as Record<string, unknown>, where, problems);
    } else if (show(got[key]) !== show(want[key])) {
      problems.push(`${where}: checkpoint has ${show(got[key])}, expected ${show(want[key])}`);
    }
  }
}

function compareTensors(got: Record<string, { shape: number[] }>, want: Record<string, number[]>, problems: string[]): void {
  for (const [name, shape] of Object.entries(want)) {
    const t = Object.hasOwn(got, name) ? got[name] : undefined;
    if (t === undefined) problems.push(`tensor "${name}": missing from the checkpoint (expected shape [${shape.join(', ')}])`);
    else if (t.shape.join(',') !== shape.join(',') || t.shape.length !== shape.length) {
      problems.push(`tensor "${name}": checkpoint has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`);
    }
  }
  for (const name of Object.keys(got)) {
    if (!Object.hasOwn(want, name)) problems.push(`tensor "${name}": in the checkpoint but not expected by the model`);
  }
}
