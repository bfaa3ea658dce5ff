/**
 * The scratch scorer's built-in task: one JavaScript problem in the suite format (prompt +
 * completion is the program, each `console.assert(` call site in `tests` is one test), with a
 * reference completion that passes every test.
 */
import type { Task } from './types';

export const SCRATCH_TASK: Task = {
  task_id: 'scratch/isPalindrome',
  language: 'javascript',
  prompt: `/**
 * Returns true when \`text\` reads the same forwards and backwards, ignoring letter case and
 * every character that is not a letter or a digit.
 * >>> isPalindrome('A man, a plan, a canal: Panama')
 * true
 * >>> isPalindrome('race a car')
 * false
 */
const isPalindrome = (text) => {
`,
  entry_point: 'isPalindrome',
  tests: `const testIsPalindrome = () => {
  console.assert(isPalindrome('') === true);
  console.assert(isPalindrome('a') === true);
  console.assert(isPalindrome('A man, a plan, a canal: Panama') === true);
  console.assert(isPalindrome('race a car') === false);
  console.assert(isPalindrome('No lemon, no melon') === true);
  console.assert(isPalindrome('ab') === false);
};
testIsPalindrome();
`,
};

/** The reference completion: passes every test. */
export const SCRATCH_REFERENCE = `  const s = text.toLowerCase().replace(/[^a-z0-9]/g, '');
  return s === s.split('').reverse().join('');
};
`;

/** The same problem in Python, HumanEval style: each `assert` in `check(candidate)` is one test. */
export const SCRATCH_TASK_PY: Task = {
  task_id: 'scratch/is_palindrome',
  language: 'python',
  prompt: `def is_palindrome(text: str) -> bool:
    """Returns True when \`text\` reads the same forwards and backwards, ignoring letter case and
    every character that is not a letter or a digit.
    >>> is_palindrome('A man, a plan, a canal: Panama')
    True
    >>> is_palindrome('race a car')
    False
    """
`,
  entry_point: 'is_palindrome',
  tests: `def check(candidate):
    assert candidate('') == True
    assert candidate('a') == True
    assert candidate('A man, a plan, a canal: Panama') == True
    assert candidate('race a car') == False
    assert candidate('No lemon, no melon') == True
    assert candidate('ab') == False
`,
};

/** The Python reference completion: passes every test. */
export const SCRATCH_REFERENCE_PY = `    s = [c.lower() for c in text if c.isalnum()]
    return s == s[::-1]
`;

export type ScratchLanguage = 'javascript' | 'python';

/** The built-in tasks of the scratch scorer, by language, with their reference completions. */
export const SCRATCH_TASKS: Record<ScratchLanguage, { task: Task; reference: string; label: string }> = {
  javascript: { task: SCRATCH_TASK, reference: SCRATCH_REFERENCE, label: 'JavaScript' },
  python: { task: SCRATCH_TASK_PY, reference: SCRATCH_REFERENCE_PY, label: 'Python' },
};
