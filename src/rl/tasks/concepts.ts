/**
 * The concepts the built-in task families are made of: a small function of one argument (a
 * number `x`, a string `s` or an array `a`) with one integer constant, described in words, as
 * a reference body, as a JavaScript implementation (to compute expected outputs) and with
 * plausible bugs (for the repair family).
 *
 * A concept is (template, constant). Splits are drawn over concepts, so a held-out function is
 * never the solution of any train or RL task, in any family.
 */

export type ArgKind = 'number' | 'string' | 'array';
export type Value = number | string | boolean | number[] | null;

export interface Template {
  /** stable id, part of task ids */
  id: string;
  arg: ArgKind;
  /** constants this template is instantiated with */
  constants: readonly number[];
  /** the one-line spec ("add 3 to x") */
  spec: (c: number) => string;
  /** the function body's one statement ("return x + 3;") */
  body: (c: number) => string;
  /** what the reference computes */
  run: (c: number, arg: never) => Value;
  /** wrong bodies a programmer could plausibly write instead (repair family) */
  bugs: (c: number) => string[];
}

/** 1..19: many constants per template, so SFT cannot memorise template -> constant and must learn to copy it */
const DIGITS = Array.from({ length: 19 }, (_, i) => i + 1);
const FROM2 = DIGITS.slice(1);
const SMALL = [1, 2, 3, 4] as const;
/** array elements are 0..9 */
const FROM1TO8 = [1, 2, 3, 4, 5, 6, 7, 8] as const;

const num = (t: Omit<Template, 'arg' | 'run'> & { run: (c: number, x: number) => Value }): Template => ({
  ...t,
  arg: 'number',
  run: t.run as Template['run'],
});
const str = (t: Omit<Template, 'arg' | 'run'> & { run: (c: number, s: string) => Value }): Template => ({
  ...t,
  arg: 'string',
  run: t.run as Template['run'],
});
const arr = (t: Omit<Template, 'arg' | 'run'> & { run: (c: number, a: number[]) => Value }): Template => ({
  ...t,
  arg: 'array',
  run: t.run as Template['run'],
});

/** Every template. Order is part of the task set's identity: append, never reorder. */
export const TEMPLATES: readonly Template[] = [
  num({
    id: 'add',
    constants: DIGITS,
    spec: (c) => `add ${c} to x`,
    body: (c) => `return x + ${c};`,
    run: (c, x) => x + c,
    bugs: (c) => [`return x - ${c};`, `return x + ${c + 1};`, `return x * ${c};`],
  }),
  num({
    id: 'sub',
    constants: DIGITS,
    spec: (c) => `subtract ${c} from x`,
    body: (c) => `return x - ${c};`,
    run: (c, x) => x - c,
    bugs: (c) => [`return x + ${c};`, `return ${c} - x;`, `return x - ${c + 1};`],
  }),
  num({
    id: 'mul',
    constants: FROM2,
    spec: (c) => `multiply x by ${c}`,
    body: (c) => `return x * ${c};`,
    run: (c, x) => x * c,
    bugs: (c) => [`return x + ${c};`, `return x * ${c + 1};`, `return x / ${c};`],
  }),
  num({
    id: 'mod',
    constants: FROM2,
    spec: (c) => `the remainder of x divided by ${c}`,
    body: (c) => `return x % ${c};`,
    run: (c, x) => x % c,
    bugs: (c) => [`return x / ${c};`, `return ${c} % x;`, `return x % ${c + 1};`],
  }),
  num({
    id: 'gt',
    constants: DIGITS,
    spec: (c) => `whether x is greater than ${c}`,
    body: (c) => `return x > ${c};`,
    run: (c, x) => x > c,
    bugs: (c) => [`return x < ${c};`, `return x >= ${c};`, `return x > ${c + 1};`],
  }),
  num({
    id: 'lt',
    constants: DIGITS,
    spec: (c) => `whether x is less than ${c}`,
    body: (c) => `return x < ${c};`,
    run: (c, x) => x < c,
    bugs: (c) => [`return x > ${c};`, `return x <= ${c};`, `return x < ${c + 1};`],
  }),
  num({
    id: 'max',
    constants: DIGITS,
    spec: (c) => `the larger of x and ${c}`,
    body: (c) => `return Math.max(x, ${c});`,
    run: (c, x) => Math.max(x, c),
    bugs: (c) => [`return Math.min(x, ${c});`, `return Math.max(x, ${c + 1});`],
  }),
  num({
    id: 'min',
    constants: DIGITS,
    spec: (c) => `the smaller of x and ${c}`,
    body: (c) => `return Math.min(x, ${c});`,
    run: (c, x) => Math.min(x, c),
    bugs: (c) => [`return Math.max(x, ${c});`, `return Math.min(x, ${c + 1});`],
  }),
  num({
    id: 'div',
    constants: FROM2,
    spec: (c) => `x divided by ${c}, rounded down`,
    body: (c) => `return Math.floor(x / ${c});`,
    run: (c, x) => Math.floor(x / c),
    bugs: (c) => [`return Math.ceil(x / ${c});`, `return x / ${c};`, `return Math.floor(x * ${c});`],
  }),
  str({
    id: 'repeat',
    constants: SMALL,
    spec: (c) => `s repeated ${c} times`,
    body: (c) => `return s.repeat(${c});`,
    run: (c, s) => s.repeat(c),
    bugs: (c) => [`return s.repeat(${c + 1});`, `return s + ${c};`],
  }),
  str({
    id: 'head',
    constants: SMALL,
    spec: (c) => `the first ${c} characters of s`,
    body: (c) => `return s.slice(0, ${c});`,
    run: (c, s) => s.slice(0, c),
    bugs: (c) => [`return s.slice(${c});`, `return s.slice(0, ${c + 1});`, `return s.slice(1, ${c});`],
  }),
  str({
    id: 'tail',
    constants: SMALL,
    spec: (c) => `s without its first ${c} characters`,
    body: (c) => `return s.slice(${c});`,
    run: (c, s) => s.slice(c),
    bugs: (c) => [`return s.slice(0, ${c});`, `return s.slice(${c + 1});`],
  }),
  str({
    id: 'char',
    constants: [0, 1, 2, 3],
    spec: (c) => `the character of s at index ${c}`,
    body: (c) => `return s[${c}];`,
    run: (c, s) => s[c] ?? null,
    bugs: (c) => [`return s[${c + 1}];`, `return s.slice(${c});`],
  }),
  str({
    id: 'append',
    constants: DIGITS,
    spec: (c) => `s followed by the number ${c}`,
    body: (c) => `return s + ${c};`,
    run: (c, s) => s + c,
    bugs: (c) => [`return ${c} + s;`, `return s + ${c + 1};`],
  }),
  arr({
    id: 'mapmul',
    constants: FROM2,
    spec: (c) => `each element of a times ${c}`,
    body: (c) => `return a.map((v) => v * ${c});`,
    run: (c, a) => a.map((v) => v * c),
    bugs: (c) => [`return a.map((v) => v + ${c});`, `return a.filter((v) => v * ${c});`],
  }),
  arr({
    id: 'mapadd',
    constants: DIGITS,
    spec: (c) => `each element of a plus ${c}`,
    body: (c) => `return a.map((v) => v + ${c});`,
    run: (c, a) => a.map((v) => v + c),
    bugs: (c) => [`return a.map((v) => v - ${c});`, `return a.map((v) => v * ${c});`],
  }),
  arr({
    id: 'above',
    constants: FROM1TO8,
    spec: (c) => `the elements of a greater than ${c}`,
    body: (c) => `return a.filter((v) => v > ${c});`,
    run: (c, a) => a.filter((v) => v > c),
    bugs: (c) => [`return a.filter((v) => v < ${c});`, `return a.map((v) => v > ${c});`],
  }),
  arr({
    id: 'count',
    constants: FROM1TO8,
    spec: (c) => `how many elements of a are greater than ${c}`,
    body: (c) => `return a.filter((v) => v > ${c}).length;`,
    run: (c, a) => a.filter((v) => v > c).length,
    bugs: (c) => [`return a.filter((v) => v < ${c}).length;`, `return a.filter((v) => v > ${c});`],
  }),
  arr({
    id: 'has',
    constants: [0, ...FROM1TO8, 9],
    spec: (c) => `whether a contains ${c}`,
    body: (c) => `return a.includes(${c});`,
    run: (c, a) => a.includes(c),
    bugs: (c) => [`return a.indexOf(${c});`, `return a.includes(${c + 1});`],
  }),
  arr({
    id: 'take',
    constants: SMALL,
    spec: (c) => `the first ${c} elements of a`,
    body: (c) => `return a.slice(0, ${c});`,
    run: (c, a) => a.slice(0, c),
    bugs: (c) => [`return a.slice(${c});`, `return a.slice(0, ${c + 1});`],
  }),
  arr({
    id: 'index',
    constants: [0, ...FROM1TO8, 9],
    spec: (c) => `the position of ${c} in a`,
    body: (c) => `return a.indexOf(${c});`,
    run: (c, a) => a.indexOf(c),
    bugs: (c) => [`return a.includes(${c});`, `return a[${c}];`],
  }),
];

/** The integer literals of a body, in order. */
function literals(body: string): number[] {
  return [...body.matchAll(/\b\d+\b/g)].map((m) => Number(m[0]));
}

/**
 * The concept's bugs that keep its constant: a wrong operation or method (`x - 3` for `x + 3`),
 * not an off-by-one constant (`x + 4`). What `noiseBugs: 'operator'` draws noisy
 * demonstrations from, so the noise is a mistake about the template, the same for every
 * constant, rather than about copying the constant.
 */
export function operatorBugs(concept: { template: Template; c: number }): string[] {
  const { template: t, c } = concept;
  const inBody = new Set(literals(t.body(c)));
  return t.bugs(c).filter((b) => !literals(b).some((n) => n === c + 1 && !inBody.has(n)));
}

export const ARG_NAME: Record<ArgKind, string> = { number: 'x', string: 's', array: 'a' };

export interface Concept {
  template: Template;
  c: number;
  /** `${template.id}/${c}` */
  key: string;
}

export function allConcepts(): Concept[] {
  return TEMPLATES.flatMap((t) => t.constants.map((c) => ({ template: t, c, key: `${t.id}/${c}` })));
}

/** JavaScript source of a value (the same text JSON gives; numbers and booleans as they are). */
export function literal(v: Value): string {
  return v === null ? 'undefined' : JSON.stringify(v);
}
