/**
 * The curated ESLint rule set: a code-quality gate for short, self-contained generated programs
 * (a function plus, at most, its helpers and tests). Three tiers, in the spirit of SonarQube's
 * "bug / code smell / info" and ESLint's `recommended`:
 *  - error: the program is wrong or unsafe whatever the intent (undefined names, unreachable or
 *    self-contradicting code, eval). A reward gate can treat one error as a failure.
 *  - warning: almost always a defect or a readability cost (loose equality, shadowing, too complex).
 *  - info: style that costs little (var, let that could be const); shown, weighted lightly.
 * Thresholds follow the brief (complexity 10, depth 4) and common defaults elsewhere.
 */
import type { Linter } from 'eslint/universal';
import type { Severity } from './findings';

type Rule = [Severity, ...unknown[]];

export const RULES: Record<string, Rule> = {
  // --- errors: wrong whatever the intent ---
  'no-undef': ['error'], // a name that is not declared: a ReferenceError waiting to happen
  'no-redeclare': ['error'], // var/function declared twice in one scope
  'no-const-assign': ['error'],
  'no-func-assign': ['error'],
  'no-class-assign': ['error'],
  'no-ex-assign': ['error'],
  'no-global-assign': ['error'], // e.g. `Math = ...`
  'no-shadow-restricted-names': ['error'], // `undefined`, `NaN` as names
  'no-dupe-keys': ['error'],
  'no-dupe-args': ['error'],
  'no-dupe-else-if': ['error'],
  'no-duplicate-case': ['error'],
  'no-self-compare': ['error'], // `x === x`: always true (or a NaN test in disguise)
  'no-self-assign': ['error'],
  'no-unsafe-finally': ['error'], // return/throw in finally swallows the try's outcome
  'no-unsafe-negation': ['error'], // `!a in b`
  'no-unsafe-optional-chaining': ['error'],
  'no-constant-binary-expression': ['error'], // `a + b ?? c`, `x === []`
  'no-compare-neg-zero': ['error'],
  'use-isnan': ['error'],
  'valid-typeof': ['error'],
  'no-obj-calls': ['error'], // `Math()`
  'no-new-native-nonconstructor': ['error'], // `new Symbol()`
  'no-sparse-arrays': ['error'],
  'no-loss-of-precision': ['error'],
  'no-empty-character-class': ['error'],
  'no-invalid-regexp': ['error'],
  'no-misleading-character-class': ['error'],
  'no-unexpected-multiline': ['error'], // ASI traps
  'no-unreachable': ['error'], // code after return/throw/break
  'no-unreachable-loop': ['error'], // a loop whose body always exits on the first pass
  'for-direction': ['error'], // `for (i = 0; i < n; i--)`
  'getter-return': ['error'],
  'no-setter-return': ['error'],
  'no-async-promise-executor': ['error'],
  'require-yield': ['error'],
  'no-delete-var': ['error'],
  'no-octal': ['error'],
  'no-with': ['error'],
  'no-caller': ['error'],
  'no-eval': ['error'], // dynamic code: unsafe and unanalysable
  'no-implied-eval': ['error'], // setTimeout("code")
  'no-new-func': ['error'], // new Function("code")
  // --- warnings: defects or clear readability costs ---
  'no-unused-vars': ['warning', { vars: 'local', args: 'after-used', caughtErrors: 'none' }],
  eqeqeq: ['warning', 'always', { null: 'ignore' }], // `==` coerces; `x == null` is idiomatic
  'no-constant-condition': ['warning'], // `while (true)` stays allowed (the default)
  'no-fallthrough': ['warning'],
  'no-cond-assign': ['warning'], // `if (x = y)`
  'no-shadow': ['warning', { hoist: 'functions' }],
  'no-empty': ['warning', { allowEmptyCatch: true }],
  'no-empty-pattern': ['warning'],
  'no-unmodified-loop-condition': ['warning'], // likely an infinite loop
  'no-unused-expressions': ['warning', { allowShortCircuit: true, allowTernary: true }],
  'no-useless-assignment': ['warning'], // a value written and never read
  'no-unassigned-vars': ['warning'], // `let x;` read but never written
  'array-callback-return': ['warning'], // `.map(x => { x + 1 })`
  'consistent-return': ['warning'], // returns a value on some paths only
  'no-case-declarations': ['warning'],
  'no-loop-func': ['warning'],
  'no-return-assign': ['warning'],
  'no-sequences': ['warning'],
  'no-throw-literal': ['warning'],
  'no-template-curly-in-string': ['warning'], // "${x}" in a plain string: a forgotten backtick
  'no-new-wrappers': ['warning'],
  'no-extend-native': ['warning'],
  'no-promise-executor-return': ['warning'],
  'no-unused-labels': ['warning'],
  'no-irregular-whitespace': ['warning'],
  complexity: ['warning', { max: 10 }], // cyclomatic complexity per function
  'max-depth': ['warning', { max: 4 }],
  'max-params': ['warning', { max: 5 }],
  'max-nested-callbacks': ['warning', { max: 3 }],
  // --- info: style ---
  'no-var': ['info'],
  'prefer-const': ['info'],
  'no-useless-return': ['info'],
  'no-useless-escape': ['info'],
  'no-extra-boolean-cast': ['info'],
  'no-lonely-if': ['info'],
  'no-unneeded-ternary': ['info'],
  'no-useless-concat': ['info'],
  'no-array-constructor': ['info'],
  'no-object-constructor': ['info'],
};

/** Rules whose finding is about a whole function though ESLint reports it on the function's head. */
export const FUNCTION_SCOPED_RULES = new Set(['complexity', 'consistent-return', 'max-nested-callbacks']);

/**
 * Globals: ES2022's built-ins come with `ecmaVersion: 2022` (Math, Promise, Map, globalThis...);
 * the only host global allowed is `console`. No browser (`window`) or Node (`require`) names.
 */
export const GLOBALS: Record<string, 'readonly'> = { console: 'readonly' };

/** Our severity for a rule id (ESLint only knows warn/error; info rules run as warn). */
export function severityOf(ruleId: string): Severity {
  return RULES[ruleId]?.[0] ?? 'warning';
}

/** The flat config the linter runs with. */
export function eslintConfig(): Linter.Config {
  const rules: Linter.RulesRecord = {};
  for (const [id, [severity, ...options]] of Object.entries(RULES)) {
    rules[id] = [severity === 'error' ? 'error' : 'warn', ...options];
  }
  return {
    languageOptions: { ecmaVersion: 2022, sourceType: 'script', globals: GLOBALS },
    // Inline `/* eslint-disable */` or `/* global x */` comments are ignored: a policy must not
    // be able to switch its own gate off.
    linterOptions: { noInlineConfig: true, reportUnusedDisableDirectives: 'off' },
    rules,
  };
}
