/**
 * The built-in tokenizer's training corpus: the tokenizer of the built-in "New model"
 * (src/lab/saved-models.ts newModelCheckpoint) is trained on it.
 */
import type { Tokenizer } from './tokenizer';
import { trainTokenizer } from './train';

/** The built-in tokenizer corpus: small, everyday JavaScript, so BPE learns code-shaped merges. */
export const CODE_CORPUS: string[] = [
  `function add(a, b) {
  return a + b;
}

function sum(numbers) {
  let total = 0;
  for (let i = 0; i < numbers.length; i++) {
    total += numbers[i];
  }
  return total;
}

const isEven = (n) => n % 2 === 0;
const squares = (xs) => xs.map((x) => x * x);
const evens = (xs) => xs.filter((x) => isEven(x));
`,
  `function reverseString(s) {
  return s.split('').reverse().join('');
}

function countVowels(text) {
  let count = 0;
  for (const ch of text.toLowerCase()) {
    if ('aeiou'.includes(ch)) count += 1;
  }
  return count;
}

function isPalindrome(s) {
  const clean = s.toLowerCase().replace(/[^a-z0-9]/g, '');
  return clean === reverseString(clean);
}
`,
  `function maxElement(arr) {
  if (arr.length === 0) return undefined;
  let max = arr[0];
  for (let i = 1; i < arr.length; i++) {
    if (arr[i] > max) max = arr[i];
  }
  return max;
}

function fibonacci(n) {
  if (n < 2) return n;
  let a = 0;
  let b = 1;
  for (let i = 2; i <= n; i++) {
    const next = a + b;
    a = b;
    b = next;
  }
  return b;
}
`,
  `function groupBy(items, key) {
  const groups = {};
  for (const item of items) {
    const value = item[key];
    if (!groups[value]) groups[value] = [];
    groups[value].push(item);
  }
  return groups;
}

function unique(values) {
  return [...new Set(values)];
}

function flatten(arrays) {
  return arrays.reduce((acc, array) => acc.concat(array), []);
}
`,
  `function factorial(n) {
  if (n <= 1) return 1;
  return n * factorial(n - 1);
}

function isPrime(n) {
  if (n < 2) return false;
  for (let i = 2; i * i <= n; i++) {
    if (n % i === 0) return false;
  }
  return true;
}

function primesBelow(limit) {
  const result = [];
  for (let n = 2; n < limit; n++) {
    if (isPrime(n)) result.push(n);
  }
  return result;
}
`,
];

/** A tokenizer trained on CODE_CORPUS with at most `maxVocab` tokens (fewer when the corpus runs out of merges). */
export function corpusTokenizer(maxVocab: number): Tokenizer {
  return trainTokenizer(CODE_CORPUS, { vocabSize: maxVocab });
}
