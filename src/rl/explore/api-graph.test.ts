import { describe, expect, it } from 'vitest';
import {
  TYPE_NAMES,
  apiEdges,
  apiType,
  apiTypes,
  isTypeName,
  lookup,
  memberResult,
  membersOf,
  returnType,
  validateApiGraph,
  type ApiType,
} from './api-graph';

describe('API graph', () => {
  it('is sound: no dangling type references, duplicates, bad arities or cycles', () => {
    expect(validateApiGraph()).toEqual([]);
    expect(new Set(apiTypes().map((t) => t.name))).toEqual(new Set(TYPE_NAMES));
  });

  it('catches broken data', () => {
    const bad: ApiType[] = [
      ...apiTypes().filter((t) => t.name !== 'Set'),
      {
        name: 'Set',
        isStatic: false,
        open: false,
        inherits: 'Set',
        members: [
          { name: 'add', kind: 'method', minArgs: 1, maxArgs: 1, returns: 'Bag' as never },
          { name: 'add', kind: 'property', minArgs: 1, maxArgs: 0, returns: 'element' },
        ],
      },
    ];
    const problems = validateApiGraph(bad).join('\n');
    expect(problems).toMatch(/Set.add returns unknown type Bag/);
    expect(problems).toMatch(/Set.add appears twice/);
    expect(problems).toMatch(/a property takes no arguments/);
    expect(problems).toMatch(/'element' on a type without elements/);
    expect(problems).toMatch(/inheritance cycle through Set/);
  });

  it('covers the common ES2023 surface', () => {
    const has = (type: string, names: string) => names.split(' ').filter((n) => !lookup(type, n));
    expect(
      has(
        'string',
        'length slice substring indexOf includes split toUpperCase toLowerCase trim startsWith endsWith repeat replace replaceAll padStart padEnd charAt charCodeAt at concat',
      ),
    ).toEqual([]);
    expect(
      has(
        'array',
        'length map filter reduce forEach some every find findIndex indexOf includes join slice concat push pop shift unshift sort reverse flat flatMap fill at keys entries toSorted with',
      ),
    ).toEqual([]);
    expect(has('number', 'toFixed toString toPrecision')).toEqual([]);
    expect(has('Math', 'max min abs floor ceil round sqrt pow trunc sign PI random')).toEqual([]);
    expect(has('Map', 'get set has delete size keys values entries forEach clear')).toEqual([]);
    expect(has('Set', 'add has delete size')).toEqual([]);
    expect(has('Object', 'keys values entries assign freeze fromEntries')).toEqual([]);
    expect(has('JSON', 'parse stringify')).toEqual([]);
    expect(lookup('string', 'push')).toBeUndefined();
    expect(lookup('array', 'toUpperCase')).toBeUndefined();
    expect(lookup('string', 'isWellFormed')).toBeUndefined(); // ES2024, outside the stated surface
  });

  it('records kind, arity and return type, with inherited members', () => {
    expect(lookup('string', 'length')).toMatchObject({ kind: 'property', minArgs: 0, maxArgs: 0, returns: 'number' });
    expect(lookup('string', 'slice')).toMatchObject({ kind: 'method', minArgs: 0, maxArgs: 2, returns: 'string' });
    expect(lookup('array', 'push')).toMatchObject({ maxArgs: Infinity, returns: 'number' });
    expect(lookup('number', 'hasOwnProperty')).toMatchObject({ returns: 'boolean' }); // from Object.prototype
    expect(lookup('number', 'toString')!.maxArgs).toBe(1); // own override (radix) wins
    expect(new Set(membersOf('string').map((m) => m.name)).size).toBe(membersOf('string').length);
    expect(membersOf('Bag')).toEqual([]);
    expect(isTypeName('Map')).toBe(true);
    expect(apiType('object')!.open).toBe(true);
    expect(apiType('string')!.open).toBe(false);
  });

  it('chains through return types', () => {
    expect(returnType('string', 'split')).toBe('array');
    expect(returnType('array', 'join')).toBe('string');
    expect(returnType('array', 'filter')).toBe('array'); // same-as-receiver
    expect(returnType('array', 'find')).toBe('unknown'); // element: unknown without an element type
    expect(returnType('string', 'nope')).toBe('unknown');
    const words = memberResult({ type: 'string' }, 'split', true);
    expect(words).toEqual({ type: 'array', element: 'string' });
    expect(memberResult(words, 'filter', true)).toEqual({ type: 'array', element: 'string' });
    expect(memberResult(words, 'find', true)).toEqual({ type: 'string' });
    expect(memberResult(words, 'map', true)).toEqual({ type: 'array', element: 'unknown' });
    expect(memberResult(words, 'length', false)).toEqual({ type: 'number' });
    expect(memberResult(words, 'map', false)).toEqual({ type: 'function' }); // a method read, not called
    expect(memberResult(words, 'length', true)).toEqual({ type: 'unknown' }); // calling a property
    const edges = apiEdges();
    expect(edges).toContainEqual({ from: 'string', member: 'split', kind: 'method', to: 'array' });
    expect(edges.every((e) => isTypeName(e.to) || ['unknown', 'same-as-receiver', 'element'].includes(e.to))).toBe(true);
  });
});
