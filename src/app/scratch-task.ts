/**
 * The scratch scorer's built-in task: one JavaScript problem in the suite format (prompt +
 * completion is the program, each `console.assert(` call site in `tests` is one test), with a
 * reference completion that passes every test.
 */
import type { Task } from '../tasks/types';

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
