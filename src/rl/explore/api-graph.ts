/**
 * A knowledge graph of JavaScript built-ins (ES2023), as plain data: type -> members, each member
 * with its kind (method or property), arity and return type. Return types are graph edges
 * (`string -split-> array<string>`), so member chains can be followed: `s.split(",").map(f).join(" ")`
 * is string -> array -> array -> string.
 *
 * Types are coarse on purpose: no generics beyond an array's element type, no unions (a nullable
 * result is flagged, not typed), and `object` is *open* (any key may exist), so a guide must not
 * restrict member names after an object. Static namespaces (`Math`, `JSON`, `Object`, ...) are
 * types of their own. Members inherited from Object.prototype come through `inherits`.
 */

/** Every type the graph knows. Instance types are lower-case; static namespaces keep their global name. */
export const TYPE_NAMES = [
  'number',
  'string',
  'boolean',
  'array',
  'object',
  'function',
  'Map',
  'Set',
  'RegExp',
  'iterator',
  'undefined',
  'Math',
  'JSON',
  'Number',
  'String',
  'Array',
  'Object',
] as const;

/** A type of the graph (one of TYPE_NAMES). */
export type TypeName = (typeof TYPE_NAMES)[number];

/** A return type: a type, `unknown`, the receiver's own type, or the receiver's element type (arrays). */
export type ReturnRef = TypeName | 'unknown' | 'same-as-receiver' | 'element';

/** A method is called (`s.trim()`); a property is read (`s.length`). */
export type MemberKind = 'method' | 'property';

/** One member of a type: an edge from the type to its return type. */
export interface ApiMember {
  /** the member's name, an identifier */
  name: string;
  kind: MemberKind;
  /** fewest arguments a call needs (0 for properties) */
  minArgs: number;
  /** most arguments a call uses (Infinity when variadic; 0 for properties) */
  maxArgs: number;
  returns: ReturnRef;
  /** element type of the returned array, when `returns` is an array (default: unknown, or the receiver's for 'same-as-receiver') */
  element?: ReturnRef;
  /** the result may be null or undefined (`find`, `match`, `pop`, `Map.get`) */
  nullable?: boolean;
}

/** One node of the graph: a type and its own members. */
export interface ApiType {
  name: TypeName;
  /** static namespace (`Math.max`), not an instance type */
  isStatic: boolean;
  /** any property name may exist (plain objects): members here are not the whole story */
  open: boolean;
  /** members of this type are looked up here next (own members win) */
  inherits?: TypeName;
  members: readonly ApiMember[];
}

/** A value's type as receiver inference tracks it: a type and, for arrays, the element type. */
export interface ValueType {
  type: TypeName | 'unknown';
  element?: TypeName | 'unknown';
}

/** The value type of anything inference cannot type. */
export const UNKNOWN: ValueType = Object.freeze({ type: 'unknown' });

type Extra = Pick<ApiMember, 'element' | 'nullable'>;
const method = (name: string, minArgs: number, maxArgs: number, returns: ReturnRef, extra: Extra = {}): ApiMember => ({
  name,
  kind: 'method',
  minArgs,
  maxArgs,
  returns,
  ...extra,
});
const prop = (name: string, returns: ReturnRef, extra: Extra = {}): ApiMember => ({
  name,
  kind: 'property',
  minArgs: 0,
  maxArgs: 0,
  returns,
  ...extra,
});
const ANY = Infinity;

/** Object.prototype, inherited by every instance type. */
const OBJECT_PROTO: ApiMember[] = [
  method('hasOwnProperty', 1, 1, 'boolean'),
  method('isPrototypeOf', 1, 1, 'boolean'),
  method('propertyIsEnumerable', 1, 1, 'boolean'),
  method('toString', 0, 0, 'string'),
  method('toLocaleString', 0, 2, 'string'),
  method('valueOf', 0, 0, 'unknown'),
];

const STRING: ApiMember[] = [
  prop('length', 'number'),
  method('at', 1, 1, 'string', { nullable: true }),
  method('charAt', 0, 1, 'string'),
  method('charCodeAt', 0, 1, 'number'),
  method('codePointAt', 0, 1, 'number', { nullable: true }),
  method('concat', 0, ANY, 'string'),
  method('endsWith', 1, 2, 'boolean'),
  method('includes', 1, 2, 'boolean'),
  method('indexOf', 1, 2, 'number'),
  method('lastIndexOf', 1, 2, 'number'),
  method('localeCompare', 1, 3, 'number'),
  method('match', 1, 1, 'array', { element: 'string', nullable: true }),
  method('matchAll', 1, 1, 'iterator'),
  method('normalize', 0, 1, 'string'),
  method('padEnd', 1, 2, 'string'),
  method('padStart', 1, 2, 'string'),
  method('repeat', 1, 1, 'string'),
  method('replace', 2, 2, 'string'),
  method('replaceAll', 2, 2, 'string'),
  method('search', 1, 1, 'number'),
  method('slice', 0, 2, 'string'),
  method('split', 0, 2, 'array', { element: 'string' }),
  method('startsWith', 1, 2, 'boolean'),
  method('substring', 1, 2, 'string'),
  method('substr', 1, 2, 'string'),
  method('toLowerCase', 0, 0, 'string'),
  method('toUpperCase', 0, 0, 'string'),
  method('toLocaleLowerCase', 0, 1, 'string'),
  method('toLocaleUpperCase', 0, 1, 'string'),
  method('toString', 0, 0, 'string'),
  method('trim', 0, 0, 'string'),
  method('trimStart', 0, 0, 'string'),
  method('trimEnd', 0, 0, 'string'),
  method('valueOf', 0, 0, 'string'),
];

const ARRAY: ApiMember[] = [
  prop('length', 'number'),
  method('at', 1, 1, 'element', { nullable: true }),
  method('concat', 0, ANY, 'same-as-receiver'),
  method('copyWithin', 1, 3, 'same-as-receiver'),
  method('entries', 0, 0, 'iterator'),
  method('every', 1, 2, 'boolean'),
  method('fill', 1, 3, 'same-as-receiver'),
  method('filter', 1, 2, 'same-as-receiver'),
  method('find', 1, 2, 'element', { nullable: true }),
  method('findIndex', 1, 2, 'number'),
  method('findLast', 1, 2, 'element', { nullable: true }),
  method('findLastIndex', 1, 2, 'number'),
  method('flat', 0, 1, 'array'),
  method('flatMap', 1, 2, 'array'),
  method('forEach', 1, 2, 'undefined'),
  method('includes', 1, 2, 'boolean'),
  method('indexOf', 1, 2, 'number'),
  method('join', 0, 1, 'string'),
  method('keys', 0, 0, 'iterator'),
  method('lastIndexOf', 1, 2, 'number'),
  method('map', 1, 2, 'array'),
  method('pop', 0, 0, 'element', { nullable: true }),
  method('push', 0, ANY, 'number'),
  method('reduce', 1, 2, 'unknown'),
  method('reduceRight', 1, 2, 'unknown'),
  method('reverse', 0, 0, 'same-as-receiver'),
  method('shift', 0, 0, 'element', { nullable: true }),
  method('slice', 0, 2, 'same-as-receiver'),
  method('some', 1, 2, 'boolean'),
  method('sort', 0, 1, 'same-as-receiver'),
  method('splice', 0, ANY, 'same-as-receiver'),
  method('toReversed', 0, 0, 'same-as-receiver'),
  method('toSorted', 0, 1, 'same-as-receiver'),
  method('toSpliced', 0, ANY, 'same-as-receiver'),
  method('with', 2, 2, 'same-as-receiver'),
  method('toString', 0, 0, 'string'),
  method('unshift', 0, ANY, 'number'),
  method('values', 0, 0, 'iterator'),
];

const NUMBER: ApiMember[] = [
  method('toExponential', 0, 1, 'string'),
  method('toFixed', 0, 1, 'string'),
  method('toPrecision', 0, 1, 'string'),
  method('toString', 0, 1, 'string'),
  method('toLocaleString', 0, 2, 'string'),
  method('valueOf', 0, 0, 'number'),
];

const COLLECTION_COMMON: ApiMember[] = [
  prop('size', 'number'),
  method('has', 1, 1, 'boolean'),
  method('delete', 1, 1, 'boolean'),
  method('clear', 0, 0, 'undefined'),
  method('forEach', 1, 2, 'undefined'),
  method('keys', 0, 0, 'iterator'),
  method('values', 0, 0, 'iterator'),
  method('entries', 0, 0, 'iterator'),
];

const MATH: ApiMember[] = [
  ...['E', 'LN10', 'LN2', 'LOG10E', 'LOG2E', 'PI', 'SQRT1_2', 'SQRT2'].map((n) => prop(n, 'number')),
  ...[
    'abs',
    'acos',
    'acosh',
    'asin',
    'asinh',
    'atan',
    'atanh',
    'cbrt',
    'ceil',
    'clz32',
    'cos',
    'cosh',
    'exp',
    'expm1',
    'floor',
    'fround',
    'log',
    'log10',
    'log1p',
    'log2',
    'round',
    'sign',
    'sin',
    'sinh',
    'sqrt',
    'tan',
    'tanh',
    'trunc',
  ].map((n) => method(n, 1, 1, 'number')),
  method('atan2', 2, 2, 'number'),
  method('hypot', 0, ANY, 'number'),
  method('imul', 2, 2, 'number'),
  method('max', 0, ANY, 'number'),
  method('min', 0, ANY, 'number'),
  method('pow', 2, 2, 'number'),
  method('random', 0, 0, 'number'),
];

const NUMBER_STATIC: ApiMember[] = [
  ...['EPSILON', 'MAX_SAFE_INTEGER', 'MIN_SAFE_INTEGER', 'MAX_VALUE', 'MIN_VALUE', 'NaN', 'NEGATIVE_INFINITY', 'POSITIVE_INFINITY'].map(
    (n) => prop(n, 'number'),
  ),
  method('isFinite', 1, 1, 'boolean'),
  method('isInteger', 1, 1, 'boolean'),
  method('isNaN', 1, 1, 'boolean'),
  method('isSafeInteger', 1, 1, 'boolean'),
  method('parseFloat', 1, 1, 'number'),
  method('parseInt', 1, 2, 'number'),
  prop('prototype', 'number'),
];

const OBJECT_STATIC: ApiMember[] = [
  method('assign', 1, ANY, 'object'),
  method('create', 1, 2, 'object'),
  method('defineProperty', 3, 3, 'object'),
  method('defineProperties', 2, 2, 'object'),
  method('entries', 1, 1, 'array', { element: 'array' }),
  method('freeze', 1, 1, 'unknown'),
  method('fromEntries', 1, 1, 'object'),
  method('getOwnPropertyDescriptor', 2, 2, 'object', { nullable: true }),
  method('getOwnPropertyDescriptors', 1, 1, 'object'),
  method('getOwnPropertyNames', 1, 1, 'array', { element: 'string' }),
  method('getOwnPropertySymbols', 1, 1, 'array'),
  method('getPrototypeOf', 1, 1, 'object', { nullable: true }),
  method('hasOwn', 2, 2, 'boolean'),
  method('is', 2, 2, 'boolean'),
  method('isExtensible', 1, 1, 'boolean'),
  method('isFrozen', 1, 1, 'boolean'),
  method('isSealed', 1, 1, 'boolean'),
  method('keys', 1, 1, 'array', { element: 'string' }),
  method('preventExtensions', 1, 1, 'unknown'),
  method('seal', 1, 1, 'unknown'),
  method('setPrototypeOf', 2, 2, 'unknown'),
  method('values', 1, 1, 'array'),
  prop('prototype', 'object'),
];

const TYPES: readonly ApiType[] = [
  { name: 'object', isStatic: false, open: true, members: OBJECT_PROTO },
  { name: 'string', isStatic: false, open: false, inherits: 'object', members: STRING },
  { name: 'array', isStatic: false, open: false, inherits: 'object', members: ARRAY },
  { name: 'number', isStatic: false, open: false, inherits: 'object', members: NUMBER },
  {
    name: 'boolean',
    isStatic: false,
    open: false,
    inherits: 'object',
    members: [method('toString', 0, 0, 'string'), method('valueOf', 0, 0, 'boolean')],
  },
  {
    name: 'function',
    isStatic: false,
    open: false,
    inherits: 'object',
    members: [
      method('apply', 1, 2, 'unknown'),
      method('bind', 1, ANY, 'function'),
      method('call', 1, ANY, 'unknown'),
      prop('length', 'number'),
      prop('name', 'string'),
      method('toString', 0, 0, 'string'),
    ],
  },
  {
    name: 'Map',
    isStatic: false,
    open: false,
    inherits: 'object',
    members: [...COLLECTION_COMMON, method('get', 1, 1, 'unknown', { nullable: true }), method('set', 2, 2, 'same-as-receiver')],
  },
  {
    name: 'Set',
    isStatic: false,
    open: false,
    inherits: 'object',
    members: [...COLLECTION_COMMON, method('add', 1, 1, 'same-as-receiver')],
  },
  {
    name: 'RegExp',
    isStatic: false,
    open: false,
    inherits: 'object',
    members: [
      method('exec', 1, 1, 'array', { element: 'string', nullable: true }),
      method('test', 1, 1, 'boolean'),
      prop('source', 'string'),
      prop('flags', 'string'),
      prop('lastIndex', 'number'),
      ...['global', 'ignoreCase', 'multiline', 'sticky', 'unicode', 'dotAll', 'hasIndices'].map((n) => prop(n, 'boolean')),
    ],
  },
  { name: 'iterator', isStatic: false, open: false, inherits: 'object', members: [method('next', 0, 1, 'object')] },
  { name: 'undefined', isStatic: false, open: false, members: [] },
  { name: 'Math', isStatic: true, open: false, members: MATH },
  {
    name: 'JSON',
    isStatic: true,
    open: false,
    members: [method('parse', 1, 2, 'unknown'), method('stringify', 1, 3, 'string', { nullable: true })],
  },
  { name: 'Number', isStatic: true, open: false, members: NUMBER_STATIC },
  {
    name: 'String',
    isStatic: true,
    open: false,
    members: [
      method('fromCharCode', 0, ANY, 'string'),
      method('fromCodePoint', 0, ANY, 'string'),
      method('raw', 1, ANY, 'string'),
      prop('prototype', 'string'),
    ],
  },
  {
    name: 'Array',
    isStatic: true,
    open: false,
    members: [method('from', 1, 3, 'array'), method('isArray', 1, 1, 'boolean'), method('of', 0, ANY, 'array'), prop('prototype', 'array')],
  },
  { name: 'Object', isStatic: true, open: false, members: OBJECT_STATIC },
];

const BY_NAME = new Map<string, ApiType>(TYPES.map((t) => [t.name, t]));
const MEMBERS = new Map<TypeName, readonly ApiMember[]>();
const MEMBER_INDEX = new Map<TypeName, ReadonlyMap<string, ApiMember>>();

/** True when `name` is one of TYPE_NAMES. */
export function isTypeName(name: string): name is TypeName {
  return BY_NAME.has(name);
}

/** The type's record, or undefined for a name the graph does not know. */
export function apiType(type: string): ApiType | undefined {
  return BY_NAME.get(type);
}

/** All types of the graph, in declaration order. */
export function apiTypes(): readonly ApiType[] {
  return TYPES;
}

/** Members of `type`, own first, then inherited ones it does not override. Empty for unknown types. */
export function membersOf(type: string): readonly ApiMember[] {
  if (!isTypeName(type)) return [];
  let list = MEMBERS.get(type);
  if (list === undefined) {
    const seen = new Map<string, ApiMember>();
    for (
      let t: ApiType | undefined = BY_NAME.get(type), hops = 0;
      t && hops < TYPES.length;
      t = t.inherits && BY_NAME.get(t.inherits), hops++
    ) {
      for (const m of t.members) if (!seen.has(m.name)) seen.set(m.name, m);
    }
    list = Object.freeze([...seen.values()]);
    MEMBERS.set(type, list);
    MEMBER_INDEX.set(type, seen);
  }
  return list;
}

/** The member `name` of `type` (own or inherited), or undefined. */
export function lookup(type: string, name: string): ApiMember | undefined {
  if (!isTypeName(type)) return undefined;
  membersOf(type);
  return MEMBER_INDEX.get(type)!.get(name);
}

/** The type `type.member` (or `type.member(...)`) evaluates to, with `same-as-receiver` resolved; `element` is unknown here. */
export function returnType(type: string, member: string): TypeName | 'unknown' {
  const m = lookup(type, member);
  if (!m || !isTypeName(type)) return 'unknown';
  return resolve(m.returns, { type });
}

/**
 * The value of `recv.name` (`called` false) or `recv.name(...)` (`called` true). A method read
 * without a call is a `function`; calling a property gives unknown; an unknown member gives unknown.
 */
export function memberResult(recv: ValueType, name: string, called: boolean): ValueType {
  if (recv.type === 'unknown') return UNKNOWN;
  const m = lookup(recv.type, name);
  if (!m) return UNKNOWN;
  if (m.kind === 'method' && !called) return { type: 'function' };
  if (m.kind === 'property' && called) return UNKNOWN;
  const type = resolve(m.returns, recv);
  if (type !== 'array') return { type };
  if (m.element !== undefined) return { type, element: resolve(m.element, recv) };
  if (m.returns === 'same-as-receiver') return { type, element: recv.element ?? 'unknown' };
  return { type, element: 'unknown' };
}

function resolve(ref: ReturnRef, recv: ValueType): TypeName | 'unknown' {
  if (ref === 'same-as-receiver') return recv.type;
  if (ref === 'element') return recv.element ?? 'unknown';
  return ref;
}

/** One edge of the graph: `from` -`member`-> `to` (unresolved: may be same-as-receiver or element). */
export interface ApiEdge {
  from: TypeName;
  member: string;
  kind: MemberKind;
  to: ReturnRef;
}

/** Every own member of every type as an edge (inherited members appear once, on the type that declares them). */
export function apiEdges(): ApiEdge[] {
  return TYPES.flatMap((t) => t.members.map((m) => ({ from: t.name, member: m.name, kind: m.kind, to: m.returns })));
}

const SPECIAL_REFS = new Set<string>(['unknown', 'same-as-receiver', 'element']);
const IDENT = /^[A-Za-z_$][\w$]*$/;

/**
 * Problems with the graph's data (empty when sound): dangling type references, duplicate types or
 * members, bad arities, member names that are not identifiers, inheritance cycles, and
 * `element` used on a type that has no elements.
 */
export function validateApiGraph(types: readonly ApiType[] = TYPES): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  for (const t of types) {
    if (names.has(t.name)) problems.push(`type ${t.name} appears twice`);
    names.add(t.name);
  }
  for (const n of TYPE_NAMES) if (!names.has(n)) problems.push(`type ${n} is listed in TYPE_NAMES but has no record`);
  const isRef = (r: string) => names.has(r) || SPECIAL_REFS.has(r);
  for (const t of types) {
    if (t.inherits !== undefined && !names.has(t.inherits)) problems.push(`${t.name} inherits unknown type ${t.inherits}`);
    const seen = new Set<string>();
    for (const m of t.members) {
      const at = `${t.name}.${m.name}`;
      if (seen.has(m.name)) problems.push(`${at} appears twice`);
      seen.add(m.name);
      if (!IDENT.test(m.name)) problems.push(`${at}: not an identifier`);
      if (!isRef(m.returns)) problems.push(`${at} returns unknown type ${m.returns}`);
      if (m.element !== undefined && !isRef(m.element)) problems.push(`${at} has unknown element type ${m.element}`);
      if ((m.returns === 'element' || m.element === 'element') && t.name !== 'array')
        problems.push(`${at} uses 'element' on a type without elements`);
      if (m.kind === 'property' && (m.minArgs !== 0 || m.maxArgs !== 0)) problems.push(`${at}: a property takes no arguments`);
      if (!(Number.isInteger(m.minArgs) && m.minArgs >= 0 && m.maxArgs >= m.minArgs))
        problems.push(`${at}: bad arity ${m.minArgs}..${m.maxArgs}`);
    }
  }
  for (const t of types) {
    const chain = new Set<string>();
    for (let c: ApiType | undefined = t; c; c = c.inherits === undefined ? undefined : types.find((x) => x.name === c!.inherits)) {
      if (chain.has(c.name)) {
        problems.push(`inheritance cycle through ${t.name}`);
        break;
      }
      chain.add(c.name);
    }
  }
  return problems;
}
