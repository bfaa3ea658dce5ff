/**
 * A static look at a JavaScript completion for the tampering the runtime cannot see: in sloppy
 * mode, adding a property to a frozen built-in (`Object.prototype.toJSON = f`) or deleting one
 * (`delete Array.prototype.join`) fails silently, so the prelude's setters never run. Such a
 * line changes nothing at run time (the built-ins are frozen), but it is still an attempt, and
 * the verdict should say so. Only code is scanned (comments, strings and regexes are skipped);
 * aliased forms (`const P = Object.prototype; P.x = f`) are not found here and stay harmless.
 */
import { codeMask } from './js-tests';

const BUILTINS = [
  'Object',
  'Array',
  'String',
  'Number',
  'Boolean',
  'Function',
  'Symbol',
  'BigInt',
  'JSON',
  'Math',
  'Reflect',
  'Promise',
  'Map',
  'Set',
  'WeakMap',
  'WeakSet',
  'RegExp',
  'Date',
  'Error',
  'TypeError',
  'RangeError',
  'console',
  'Iterator',
  'Proxy',
  'ArrayBuffer',
  '[A-Z][a-z0-9]*Array',
].join('|');

const MEMBER = String.raw`(?:\s*\.\s*prototype)?(?:\s*\.\s*[A-Za-z_$][\w$]*|\s*\[[^\]\n]*\])`;
const ASSIGN = new RegExp(String.raw`(?<![\w$.])(?:${BUILTINS})${MEMBER}\s*(?:=(?![=>])|[-+*/%|&^]=|\|\|=|&&=|\?\?=)`, 'g');
const DELETE = new RegExp(String.raw`\bdelete\s+(?:${BUILTINS})${MEMBER}`, 'g');

export interface StaticTampering {
  /** 1-based line in the scanned text */
  line: number;
  text: string;
}

export function scanTampering(code: string): StaticTampering | undefined {
  const mask = codeMask(code);
  let visible = '';
  for (let i = 0; i < code.length; i++) visible += mask[i] || code[i] === '\n' ? code[i] : ' ';
  for (const re of [ASSIGN, DELETE]) {
    re.lastIndex = 0;
    const m = re.exec(visible);
    if (m) {
      const line = visible.slice(0, m.index).split('\n').length;
      return { line, text: m[0].replace(/\s+/g, ' ').trim() };
    }
  }
  return undefined;
}
