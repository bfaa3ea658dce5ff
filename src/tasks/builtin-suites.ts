/**
 * The benchmark suites that ship with the lab (data/benchmarks/ in the repository), chosen by
 * name: `coderl score|train|eval|onnx eval --suite humaneval-x-js`, `coderl suites`, and the
 * app's Experiment and Evaluate panels. Browser-safe (no Node imports): the CLI finds the files
 * with tasks/benchmarks.ts, the app imports them as assets (store/builtin-suites.ts).
 *
 * Adding a suite is one entry here plus its file in data/benchmarks/ (JSONL or .jsonl.gz in any
 * shape tasks/suite.ts loads), with its source and licence in data/benchmarks/README.md.
 */
import type { Language } from './types';

export interface BuiltinSuite {
  /** what `--suite` takes, e.g. humaneval-x-js */
  name: string;
  /** what the UI calls it, e.g. "HumanEval-X JavaScript" */
  title: string;
  language: Language;
  /** the file in data/benchmarks/ */
  file: string;
  /** tasks in the file (shown before it is read; a unit test checks it against the file) */
  tasks: number;
  /** where the file comes from, and its licence */
  source: string;
  /** one line on what it is */
  description: string;
}

export const BUILTIN_SUITES: readonly BuiltinSuite[] = [
  {
    name: 'humaneval-x-js',
    title: 'HumanEval-X JavaScript',
    language: 'javascript',
    file: 'humaneval-x-js.jsonl.gz',
    tasks: 164,
    source: 'HumanEval-X (THUDM/CodeGeeX), JavaScript; Apache-2.0',
    description:
      'the 164 HumanEval problems ported to JavaScript, console.assert tests; canonical solutions of /112 and /155 are wrong, /162 needs js-md5',
  },
  {
    name: 'humaneval-python',
    title: 'HumanEval Python',
    language: 'python',
    file: 'humaneval-python.jsonl.gz',
    tasks: 164,
    source: 'HumanEval (openai/human-eval); MIT',
    description: 'the original 164 hand-written Python problems (Chen et al. 2021), check(candidate) with asserts',
  },
];

/** The built-in suite of this name, or undefined. */
export function builtinSuite(name: string): BuiltinSuite | undefined {
  return BUILTIN_SUITES.find((s) => s.name === name);
}

/** e.g. "HumanEval-X JavaScript (164 tasks)": how the app offers a suite. */
export function builtinSuiteLabel(s: BuiltinSuite): string {
  return `${s.title} (${s.tasks} tasks)`;
}
