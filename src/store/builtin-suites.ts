/**
 * The built-in suites (tasks/builtin-suites.ts) in the browser: each file of data/benchmarks/
 * is a Vite asset of the app (a `?url` import, hashed into dist/assets/ at build), fetched from
 * the app's own origin when a panel chooses it; nothing comes from elsewhere. The Experiment
 * panel's task source and the Evaluate panel's suite both read them here.
 */
import { BUILTIN_SUITES, type BuiltinSuite } from '../tasks/builtin-suites';

/** data/benchmarks/<file> -> its URL in the built app (every suite file, whatever the list names) */
const URLS = import.meta.glob<string>(['../../data/benchmarks/*.jsonl.gz', '../../data/benchmarks/*.jsonl'], {
  query: '?url',
  import: 'default',
  eager: true,
});

/** The URL the app serves a built-in suite's file at. */
export function builtinSuiteUrl(s: BuiltinSuite): string {
  const url = URLS[`../../data/benchmarks/${s.file}`];
  if (!url) throw new Error(`the built-in suite ${s.name} has no file data/benchmarks/${s.file} in this build`);
  return url;
}

/** Every listed suite has its file in the build (a unit test checks it). */
export function missingBuiltinFiles(): string[] {
  return BUILTIN_SUITES.filter((s) => !URLS[`../../data/benchmarks/${s.file}`]).map((s) => s.file);
}

/** a finished fetch per suite: choosing a suite again reads it from memory */
const fetched = new Map<string, Promise<Uint8Array>>();

/** A built-in suite file's bytes (gzipped, or already inflated where the server sent it so), fetched once. */
export function fetchBuiltinSuite(s: BuiltinSuite): Promise<Uint8Array> {
  let p = fetched.get(s.name);
  if (!p) {
    p = (async () => {
      const url = builtinSuiteUrl(s);
      const res = await fetch(url);
      if (!res.ok) throw new Error(`${s.title}: fetching ${url} gave HTTP ${res.status}`);
      return new Uint8Array(await res.arrayBuffer());
    })();
    fetched.set(s.name, p);
    p.catch(() => fetched.delete(s.name)); // a failed fetch is tried again next time
  }
  return p;
}
