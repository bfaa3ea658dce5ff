/**
 * The built-in task families, each a way of asking for a concept's function (concepts.ts):
 * - `spec`: code from a one-line spec ("// add 3 to x");
 * - `io`: program synthesis from input/output examples ("// 1 -> 4, 8 -> 11, 11 -> 14");
 * - `repair`: fix a given buggy body, told one input it gets wrong.
 * Every task is a suite task (src/tasks/types.ts): the prompt ends where the body begins, the
 * reference completion is the body and the closing brace, and the tests are `console.assert`
 * calls on inputs drawn from the task's own seeded stream (the examples shown plus hidden ones).
 */
import type { Task } from '../../tasks/types';
import { Rng } from '../../util/random';
import { ARG_NAME, literal, type ArgKind, type Concept, type Value } from './concepts';

export const FAMILIES = ['spec', 'io', 'repair'] as const;
export type Family = (typeof FAMILIES)[number];

export const FAMILY_DOC: Record<Family, string> = {
  spec: 'code from a one-line spec',
  io: 'program synthesis from input/output examples ("// 1 -> 4, 8 -> 11, 11 -> 14")',
  repair: 'fix a given buggy function, told an input it gets wrong',
};

export type Split = 'train' | 'val' | 'rl' | 'heldout';

export interface TaskMeta {
  /** a built-in Family, or a suite file's own (meta.family, else 'suite'; tasks/from-suite.ts) */
  family: string;
  split: Split;
  /** the concept key `${template}/${c}` */
  concept: string;
  [k: string]: unknown;
}

export interface GeneratedTask extends Task {
  meta: TaskMeta;
  /** always known to the generator; exported only for the splits that have solutions */
  reference: string;
  /**
   * What SFT imitates: the reference, or for a noisy demonstration (TaskSetOptions.noise) one of
   * the concept's plausible bugs, as scraped code would hold.
   */
  demonstration: string;
}

/** Tests per task (the io family shows the first EXAMPLES of them in the prompt). */
export const TESTS_PER_TASK = 5;
export const EXAMPLES = 3;

const LETTERS = 'abcdefghijklmnop';

/** FNV-1a of a string: stable per-task seeds. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function int(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng.next() * (hi - lo + 1));
}

function drawInput(rng: Rng, kind: ArgKind, c: number, i: number): Value {
  if (kind === 'number') return int(rng, 0, 24);
  if (kind === 'string') {
    const n = int(rng, 5, 7);
    let s = '';
    for (let k = 0; k < n; k++) s += LETTERS[int(rng, 0, LETTERS.length - 1)];
    return s;
  }
  const n = int(rng, 3, 5);
  const a = Array.from({ length: n }, () => int(rng, 0, 9));
  // membership concepts need both outcomes: every other input contains c, the rest do not
  if (i % 2 === 0 && !a.includes(c)) a[int(rng, 0, n - 1)] = c;
  if (i % 2 === 1) for (let k = 0; k < n; k++) if (a[k] === c) a[k] = (c + 1 + k) % 10 === c ? (c + 2) % 10 : (c + 1 + k) % 10;
  return a;
}

/** TESTS_PER_TASK distinct inputs for the concept, from the task's own stream. */
function drawInputs(rng: Rng, concept: Concept): Value[] {
  const seen = new Set<string>();
  const out: Value[] = [];
  for (let tries = 0; out.length < TESTS_PER_TASK && tries < 200; tries++) {
    const v = drawInput(rng, concept.template.arg, concept.c, out.length);
    const k = JSON.stringify(v);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(v);
  }
  return out;
}

function header(kind: ArgKind): string {
  return `function f(${ARG_NAME[kind]}) {\n`;
}

function testsFor(inputs: Value[], outputs: Value[]): string {
  return (
    inputs.map((x, i) => `console.assert(JSON.stringify(f(${literal(x)})) === ${JSON.stringify(JSON.stringify(outputs[i]))});`).join('\n') +
    '\n'
  );
}

/** Runs a body (a statement over the concept's argument) in-process: how the repair family finds a bug's wrong output. */
function runBody(body: string, kind: ArgKind, x: Value): Value | undefined {
  try {
    // generator-owned code only (template bodies and bugs), never a model's output
    const fn = new Function(ARG_NAME[kind], body) as (v: unknown) => unknown;
    const v = fn(structuredClone(x));
    return v === undefined ? undefined : (v as Value);
  } catch {
    return undefined;
  }
}

/**
 * The task asking for `concept` in `family`; deterministic in (seed, family, concept). `examples`
 * is how many input/output pairs an `io` prompt shows (fewer when the prompt must fit a context;
 * the tests are the same).
 */
export function makeTask(family: Family, concept: Concept, split: Split, seed: number, examples = EXAMPLES): GeneratedTask {
  const t = concept.template;
  const rng = new Rng(hashString(`${seed}/${family}/${concept.key}`));
  const inputs = drawInputs(rng, concept);
  const outputs = inputs.map((x) => t.run(concept.c, x as never));
  const body = t.body(concept.c);
  let comment: string;
  const meta: TaskMeta = { family, split, concept: concept.key };
  if (family === 'spec') {
    comment = `// ${t.spec(concept.c)}\n`;
  } else if (family === 'io') {
    comment = `// ${inputs
      .slice(0, examples)
      .map((x, i) => `${literal(x)} -> ${literal(outputs[i]!)}`)
      .join(', ')}\n`;
  } else {
    // a bug that gets one of the inputs wrong, and that input
    const candidates: { bug: string; i: number; got: Value | undefined }[] = [];
    for (const bug of t.bugs(concept.c)) {
      for (let i = 0; i < inputs.length; i++) {
        const got = runBody(bug, t.arg, inputs[i]!);
        if (JSON.stringify(got) !== JSON.stringify(outputs[i])) {
          candidates.push({ bug, i, got });
          break;
        }
      }
    }
    if (!candidates.length) throw new Error(`task family repair: no bug of ${concept.key} fails any input`);
    const pick = candidates[Math.floor(rng.next() * candidates.length)]!;
    const gotText = pick.got === undefined ? 'undefined' : literal(pick.got);
    comment = `// f(${literal(inputs[pick.i]!)}) should be ${literal(outputs[pick.i]!)}, not ${gotText}: fix\n// ${pick.bug}\n`;
    meta.bug = pick.bug;
  }
  return {
    task_id: `coderl/${family}/${concept.key}`,
    language: 'javascript',
    prompt: comment + header(t.arg),
    entry_point: 'f',
    tests: testsFor(inputs, outputs),
    reference: `  ${body}\n}\n`,
    demonstration: `  ${body}\n}\n`,
    meta,
  };
}
