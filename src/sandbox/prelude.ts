/**
 * The harness prelude: JavaScript that runs inside each fresh QuickJS context before any
 * untrusted code, as `(PRELUDE)(hostLog, hostTamper, outputChars)`. It
 *
 * 0. replaces Math.random with a seeded generator (the same numbers in every fresh context, so
 *    a program's verdict does not depend on chance),
 * 1. captures every function it will need as locals (so later global `let` shadowing or
 *    prototype changes cannot reach the harness),
 * 2. installs a frozen `console` whose methods format in the VM and hand one string to the
 *    host's `hostLog` (output is counted and cut host-side),
 * 3. replaces the reflective mutators (Object.defineProperty/defineProperties/setPrototypeOf/
 *    assign, Reflect.defineProperty/set/deleteProperty/setPrototypeOf, __proto__, __defineGetter__
 *    ...) with versions that report `tampering` when the target is a locked built-in,
 * 4. walks every object reachable from the global object's built-ins and from the hidden
 *    intrinsics (iterator, generator, async and typed-array prototypes, iterator helpers), turns
 *    every writable data property into a getter/setter pair whose setter reports tampering when
 *    called on a locked object (and, for any other receiver, defines an own property, as an
 *    assignment would: the "override mistake" fix, so `obj.toString = ...` keeps working), and
 *    freezes the object,
 * 5. makes the global object's built-in bindings (JSON, Math, Array, console, ...) accessors whose
 *    setter reports tampering (`JSON = ...`, `var Array = ...`),
 * 6. returns a frozen harness {names, values, describe}: the built-in bindings as they were (the
 *    host passes them as parameters to the test code, so a program-level `let JSON = fake`
 *    cannot reach the tests) and a defensive error formatter.
 * Everything the prelude creates is frozen; hostLog/hostTamper are only ever closed over.
 */
export const PRELUDE = String.raw`(function (hostLog, hostTamper, outputChars) {
  'use strict';
  const G = globalThis;
  const O = Object, R = Reflect, S = String, TE = TypeError, J = JSON;
  const freeze = O.freeze, getProto = O.getPrototypeOf, gopd = O.getOwnPropertyDescriptor, gopds = O.getOwnPropertyDescriptors, seal = O.seal;
  const ownKeys = R.ownKeys, apply = R.apply, rDefine = R.defineProperty;
  const stringify = J.stringify, strSlice = S.prototype.slice;
  const locked = new WeakSet(), names = new WeakMap();
  const wsHas = WeakSet.prototype.has, wsAdd = WeakSet.prototype.add;
  const wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set, wmHas = WeakMap.prototype.has;
  const isLocked = (o) => apply(wsHas, locked, [o]);
  const nameOf = (o) => {
    const link = apply(wmGet, names, [o]);
    if (!link) return 'a built-in object';
    if (link[0] === null) return link[1];
    return nameOf(link[0]) + (link[1] === '[[Prototype]]' ? '.[[Prototype]]' : '.' + keyName(link[1]));
  };
  const isObj = (v) => (typeof v === 'object' && v !== null) || typeof v === 'function';
  const keyName = (k) => (typeof k === 'symbol' ? '[' + S(k) + ']' : S(k));

  // 0. a seeded Math.random (mulberry32, one fixed seed per fresh context): a program draws the
  // same numbers on every run, so its verdict is reproducible (tests that draw random inputs,
  // HumanEval-X JavaScript/32 for one, would otherwise pass or fail by chance)
  {
    const imul = Math.imul;
    let seed = 0x2545f491;
    const random = function random() {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    rDefine(G.Math, 'random', { value: random, writable: true, enumerable: false, configurable: true });
  }

  const globalNames = [];
  for (const k of ownKeys(G)) {
    if (typeof k !== 'string' || k === 'undefined' || k === 'NaN' || k === 'Infinity') continue;
    globalNames[globalNames.length] = k;
  }
  const isGlobalName = (k) => { for (let i = 0; i < globalNames.length; i++) if (globalNames[i] === k) return true; return false; };

  const tamper = (what) => {
    hostTamper(S(what));
    throw new TE('sandbox: ' + what + ' is not allowed');
  };
  const guard = (what, target, key) => {
    if (isLocked(target)) tamper(what + ' on ' + nameOf(target) + (key === undefined ? '' : '.' + keyName(key)));
    if (target === G && (key === undefined || isGlobalName(key))) tamper(what + ' on the global object' + (key === undefined ? '' : '.' + keyName(key)));
  };

  // 2. console
  const show = (v) => {
    try {
      if (typeof v === 'string') return v;
      if (typeof v === 'function') return '[Function]';
      if (isObj(v)) { const s = apply(stringify, J, [v]); return typeof s === 'string' ? s : S(v); }
      return S(v);
    } catch (e) { return '[unprintable]'; }
  };
  const emit = (args, from) => {
    let s = '';
    for (let i = from; i < args.length; i++) {
      s += (i > from ? ' ' : '') + show(args[i]);
      if (s.length > outputChars) break;
    }
    if (s.length > outputChars) s = apply(strSlice, s, [0, outputChars + 1]);
    hostLog(s + '\n');
  };
  const consoleObj = {
    log(...a) { emit(a, 0); }, info(...a) { emit(a, 0); }, debug(...a) { emit(a, 0); },
    warn(...a) { emit(a, 0); }, error(...a) { emit(a, 0); }, trace(...a) { emit(a, 0); },
    dir(...a) { emit(a, 0); }, table(...a) { emit(a, 0); },
    time() {}, timeEnd() {}, timeLog() {}, group() {}, groupEnd() {}, count() {}, countReset() {},
    assert(c, ...a) { if (!c) emit(a.length ? ['Assertion failed:', ...a] : ['Assertion failed'], 0); },
  };
  rDefine(G, 'console', { value: consoleObj, writable: true, enumerable: false, configurable: true });
  if (!isGlobalName('console')) globalNames[globalNames.length] = 'console';

  // 3. reflective mutators that report tampering on locked built-ins
  const orig = {
    dp: O.defineProperty, dps: O.defineProperties, spo: O.setPrototypeOf, assign: O.assign,
    rdp: R.defineProperty, rset: R.set, rdel: R.deleteProperty, rspo: R.setPrototypeOf,
    protoSet: gopd(O.prototype, '__proto__').set, dg: O.prototype.__defineGetter__, ds: O.prototype.__defineSetter__,
  };
  O.defineProperty = { defineProperty(o, k, d) { guard('Object.defineProperty', o, k); return apply(orig.dp, O, [o, k, d]); } }.defineProperty;
  O.defineProperties = { defineProperties(o, d) { guard('Object.defineProperties', o); return apply(orig.dps, O, [o, d]); } }.defineProperties;
  O.setPrototypeOf = { setPrototypeOf(o, p) { guard('Object.setPrototypeOf', o); return apply(orig.spo, O, [o, p]); } }.setPrototypeOf;
  O.assign = { assign(o, ...src) { guard('Object.assign', o); return apply(orig.assign, O, [o, ...src]); } }.assign;
  R.defineProperty = { defineProperty(o, k, d) { guard('Reflect.defineProperty', o, k); return apply(orig.rdp, R, [o, k, d]); } }.defineProperty;
  R.set = { set(o, k, v, ...r) { guard('Reflect.set', o, k); return apply(orig.rset, R, [o, k, v, ...r]); } }.set;
  R.deleteProperty = { deleteProperty(o, k) { guard('Reflect.deleteProperty', o, k); return apply(orig.rdel, R, [o, k]); } }.deleteProperty;
  R.setPrototypeOf = { setPrototypeOf(o, p) { guard('Reflect.setPrototypeOf', o); return apply(orig.rspo, R, [o, p]); } }.setPrototypeOf;
  const protoDesc = gopd(O.prototype, '__proto__');
  const protoSetter = gopd({ set proto(p) { guard('setting __proto__', this); apply(orig.protoSet, this, [p]); } }, 'proto').set;
  rDefine(O.prototype, '__proto__', { get: protoDesc.get, set: protoSetter, enumerable: false, configurable: true });
  O.prototype.__defineGetter__ = { __defineGetter__(k, f) { guard('__defineGetter__', this, k); return apply(orig.dg, this, [k, f]); } }.__defineGetter__;
  O.prototype.__defineSetter__ = { __defineSetter__(k, f) { guard('__defineSetter__', this, k); return apply(orig.ds, this, [k, f]); } }.__defineSetter__;

  // 4. collect the built-ins: everything reachable from the global bindings and hidden intrinsics
  const hidden = [
    ['%ArrayIteratorPrototype%', () => getProto([][Symbol.iterator]())],
    ['%MapIteratorPrototype%', () => getProto(new Map()[Symbol.iterator]())],
    ['%SetIteratorPrototype%', () => getProto(new Set()[Symbol.iterator]())],
    ['%StringIteratorPrototype%', () => getProto(''[Symbol.iterator]())],
    ['%RegExpStringIteratorPrototype%', () => getProto(/a/[Symbol.matchAll](''))],
    ['%GeneratorFunction%', () => getProto(function* () {}).constructor],
    ['%AsyncFunction%', () => getProto(async function () {}).constructor],
    ['%AsyncGeneratorFunction%', () => getProto(async function* () {}).constructor],
    ['%TypedArray%', () => getProto(Int8Array)],
    ['%IteratorHelperPrototype%', () => getProto([].values().map((x) => x))],
    ['%WrapForValidIteratorPrototype%', () => getProto(Iterator.from({ next() { return { done: true }; } }))],
  ];
  // names are kept as (parent, key) links and spelled out only when tampering is reported
  const queue = [];
  const visit = (v, parent, key) => {
    if (!isObj(v) || v === G || apply(wmHas, names, [v])) return;
    apply(wmSet, names, [v, [parent, key]]);
    queue[queue.length] = v;
  };
  visit(consoleObj, null, 'console');
  for (let i = 0; i < globalNames.length; i++) visit(G[globalNames[i]], null, globalNames[i]);
  for (let i = 0; i < hidden.length; i++) { try { visit(hidden[i][1](), null, hidden[i][0]); } catch (e) {} }
  visit(getProto(G), null, 'Object.prototype');

  // 4b. lock each: writable data properties become tamper-reporting accessors (one
  // defineProperties call per object), then freeze; children are visited from the descriptors
  const getter = (value) => () => value;
  const setter = (o, k) => function (v) {
    if (isLocked(this)) tamper('assignment to ' + nameOf(o) + '.' + keyName(k));
    if (isObj(this)) apply(orig.rdp, R, [this, k, { value: v, writable: true, enumerable: true, configurable: true }]);
  };
  for (let qi = 0; qi < queue.length; qi++) {
    const o = queue[qi];
    apply(wsAdd, locked, [o]);
    visit(getProto(o), o, '[[Prototype]]');
    const ds = gopds(o), keys = ownKeys(ds), batch = O.create(null);
    let any = false, stale = false;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i], d = ds[k];
      if (!('value' in d)) { visit(d.get, o, k); visit(d.set, o, k); continue; }
      visit(d.value, o, k);
      if (d.writable && d.configurable) {
        batch[k] = { get: getter(d.value), set: setter(o, k), enumerable: d.enumerable, configurable: false };
        any = true;
      } else if (d.writable) stale = true;
    }
    if (any) apply(orig.dps, O, [o, batch]);
    if (stale) freeze(o); else seal(o);
  }

  // 5. the global bindings of built-ins: accessors whose setter reports tampering
  const values = [];
  for (let i = 0; i < globalNames.length; i++) {
    const k = globalNames[i], d = gopd(G, k);
    const value = 'value' in d ? d.value : G[k];
    values[i] = value;
    if (!d.configurable) continue;
    const get = { get [k]() { return value; } };
    const set = { set [k](v) { tamper('assignment to the global ' + k); } };
    // configurable, so that a program may still declare its own top-level 'const escape = ...'
    // (a lexical shadow that never reaches the tests, which get these values as parameters)
    apply(orig.rdp, R, [G, k, { get: gopd(get, k).get, set: gopd(set, k).set, enumerable: d.enumerable, configurable: true }]);
  }

  // 6. the harness: built-in bindings for the test wrapper, and a defensive error formatter
  const field = (e, k) => { try { const v = e[k]; return typeof v === 'string' ? apply(strSlice, v, [0, 2000]) : ''; } catch (x) { return ''; } };
  const describe = (e) => {
    try {
      if (!isObj(e)) return 'Uncaught ' + (typeof e === 'string' ? apply(stringify, J, [apply(strSlice, e, [0, 2000])]) : S(e)) + '\u0001';
      const name = field(e, 'name'), message = field(e, 'message');
      const head = name || message ? (name ? name + ': ' : '') + message : 'Uncaught ' + (typeof e === 'function' ? 'function' : 'object');
      return head + '\u0001' + field(e, 'stack');
    } catch (x) { return 'Uncaught exception (could not be described)\u0001'; }
  };
  return freeze({ names: freeze(globalNames), values: freeze(values), describe: freeze(describe) });
})`;
