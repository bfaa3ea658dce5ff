/**
 * Imports point down only (STYLE.md: app -> store -> rl/lab -> model -> kernels -> gpu; nothing
 * below the UI imports from src/app). Every non-test .ts/.tsx file under src/ and bench/ is read,
 * its import specifiers taken by TypeScript's own pre-processor (static `import ... from`,
 * side-effect `import '...'`, `export ... from`, dynamic `import('...')` with a string literal;
 * comments and strings are not imports), each relative one resolved to its layer (the top-level
 * folder of src/; bench/ and shaders/ are layers of their own; a file directly in src/ is `main`),
 * and every import whose layer is not its own or below it fails.
 *
 * Exempt: test files (*.test.ts, *.test.tsx), which may import anything to set up what they
 * check; and src/testing/ (helpers for those tests), which may import anything below the store.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The layers, top down. `over`: the layers it is built on directly; a layer may import those and,
 * through them, everything they may import (the closure), and nothing else. Derived from the
 * imports the code has, with the few upward ones moved down.
 */
const LAYERS: Record<string, { over: string[]; why: string }> = {
  main: { over: ['app'], why: 'src/main.tsx: mounts the React app in the page' },
  app: { over: ['store', 'perf'], why: 'the React UI (panels, charts, Monaco); the only code that renders' },
  cli: { over: ['bench', 'serve', 'export', 'rl'], why: 'the coderl commands (Node); a sibling of the app, neither imports the other' },
  serve: { over: ['rl'], why: '`coderl serve`: the scorer as an HTTP service (our API, OpenRLHF, Sandbox Fusion), Node only' },
  export: { over: ['rl'], why: '`coderl export`: a run as a folder for a cluster RL trainer (veRL, TRL, OpenRLHF)' },
  bench: {
    over: ['perf', 'reward', 'serve'],
    why: 'the Node-only drivers of `coderl bench` (runtime, score, browser race, serve under load); the CLI level',
  },
  perf: { over: ['onnx'], why: 'the benchmarks the Benchmarks panel and `coderl bench` share: engine vs TF.js, the ONNX race' },
  store: { over: ['lab'], why: 'the zustand store: slices of state and actions the UI reads through selectors' },
  lab: { over: ['rl'], why: 'what the store and the panels compute without the DOM: checkpoints, rollout comparison, what-if' },
  rl: { over: ['policy', 'reward'], why: 'the RL pipeline: tasks, SFT, reward model, PPO/GRPO, exploration, run store, workers' },
  policy: {
    over: ['onnx', 'hf'],
    why: 'the Policy interface the RL stages use (tokenizer, describe, generate, forward, train steps, checkpoints) and its factories: the lab GPT, a frozen ONNX model, an imported Hugging Face model',
  },
  onnx: { over: ['model', 'tokenizer'], why: 'ONNX export, import and parity of our models' },
  hf: { over: ['model', 'tokenizer'], why: 'Hugging Face model folders: load (config, safetensors, tokenizer) and export' },
  model: { over: ['kernels', 'container'], why: 'config, parameter table, CPU and GPU models, trainers, generation, backends' },
  kernels: { over: ['gpu', 'shaders'], why: 'one WGSL kernel each: wrapper, float64 reference, the self-check' },
  gpu: { over: ['util'], why: 'the WebGPU runtime: adapter, recorder, kernel specs, buffer pool, providers' },
  shaders: { over: [], why: 'WGSL only, imported as strings by the kernels' },
  reward: { over: ['analysis', 'sandbox'], why: 'the reward: execution results and static analysis combined into components' },
  analysis: { over: ['tasks'], why: 'ESLint, tree-sitter, metrics and their cache' },
  sandbox: { over: ['tasks'], why: 'the QuickJS/Pyodide sandbox, its workers and pool, scoring a suite' },
  tokenizer: { over: ['tasks', 'util'], why: 'byte-level BPE and its built-in training corpus' },
  container: {
    over: ['storage'],
    why: 'the binary tensor container of checkpoints (format, header, CRC-32, compatibility) and its storage',
  },
  tasks: { over: ['util'], why: 'task types, suites, completions, built-in suites and tasks' },
  storage: { over: ['util'], why: 'named files in the browser: OPFS, else IndexedDB, with atomic writes and serialised appends' },
  util: { over: [], why: 'array comparison, seeded random numbers, the text of a thrown value' },
  testing: { over: [], why: 'helpers of the tests (GPU runtime, finite differences); only tests import it' },
};

/** src/testing/ may import anything below this layer (what it may import). */
const TESTING_BELOW = 'store';

/** Every layer `layer` may import: the closure of `over` (throws on an unknown name or a cycle). */
function reach(layer: string, path: string[] = []): Set<string> {
  if (path.includes(layer)) throw new Error(`layer cycle: ${[...path, layer].join(' -> ')}`);
  const row = LAYERS[layer];
  if (!row) throw new Error(`no layer "${layer}" in LAYERS${path.length ? ` (under ${path.at(-1)})` : ''}`);
  const out = new Set<string>();
  for (const o of row.over) {
    out.add(o);
    for (const x of reach(o, [...path, layer])) out.add(x);
  }
  return out;
}

/** The layer a repository path (relative, '/'-separated) lies in. */
function layerOf(path: string, srcFolders: ReadonlySet<string>): string {
  const [top, sub] = path.split('/');
  if (top !== 'src') return top!;
  return srcFolders.has(sub!) ? sub! : 'main';
}

/** The import specifiers of a TypeScript source, with their 1-based lines. */
function importsOf(text: string): { spec: string; line: number }[] {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return importedFiles.map((f) => ({ spec: f.fileName, line: text.slice(0, f.pos).split('\n').length }));
}

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name)) out.push(p);
  }
  return out;
}

const toRepo = (p: string): string => relative(ROOT, p).split(sep).join('/');
const srcFolders = new Set(readdirSync(join(ROOT, 'src')).filter((n) => statSync(join(ROOT, 'src', n)).isDirectory()));

/** `file:line: imports 'spec' (a -> b)` for every import pointing up or sideways. */
function upwardImports(): { violations: string[]; checked: number } {
  const violations: string[] = [];
  let checked = 0;
  for (const file of [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'bench'))]) {
    const from = layerOf(toRepo(file), srcFolders);
    const allowed = reach(from === 'testing' ? TESTING_BELOW : from);
    for (const { spec, line } of importsOf(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) continue; // a package
      checked++;
      const to = layerOf(toRepo(resolve(dirname(file), spec)), srcFolders);
      if (to !== from && !allowed.has(to)) violations.push(`${toRepo(file)}:${line}: imports '${spec}' (${from} -> ${to})`);
    }
  }
  return { violations, checked };
}

describe('layering', () => {
  test('the layer table: every folder of src/ has a row, every name it uses is a row, no cycle', () => {
    const missing = [...srcFolders, 'bench', 'main'].filter((f) => !(f in LAYERS));
    expect(missing, 'folders with no row in LAYERS').toEqual([]);
    for (const layer of Object.keys(LAYERS)) expect(() => reach(layer)).not.toThrow();
    // the house chain itself
    const chain = ['app', 'store', 'rl', 'model', 'kernels', 'gpu'];
    chain.slice(1).forEach((l, i) => expect(reach(chain[i]!).has(l), `${chain[i]} -> ${l}`).toBe(true));
    // what must stay out of reach
    for (const [from, to] of [
      ['app', 'bench'],
      ['store', 'bench'],
      ['store', 'app'],
      ['rl', 'store'],
      ['policy', 'rl'],
      ['kernels', 'model'],
      ['gpu', 'kernels'],
      ['cli', 'app'],
    ]) {
      expect(reach(from!).has(to!), `${from} -> ${to}`).toBe(false);
    }
  });

  test('the import reader sees static, export-from, type-only, multi-line, side-effect and dynamic imports, not comments', () => {
    const text = [
      "import a from './a';",
      'import type {\n  X,\n  Y,\n} from "../b";',
      "export * from './c';",
      "export { z } from './d';",
      "const m = await import('./e');",
      "import './f.css';",
      "// import g from './g';",
      "/** see import('./h') */",
    ].join('\n');
    expect(importsOf(text)).toEqual([
      { spec: './a', line: 1 },
      { spec: '../b', line: 5 },
      { spec: './c', line: 6 },
      { spec: './d', line: 7 },
      { spec: './e', line: 8 },
      { spec: './f.css', line: 9 },
    ]);
  });

  test('no import points up', () => {
    const { violations, checked } = upwardImports();
    expect(checked).toBeGreaterThan(500);
    expect(violations).toEqual([]);
  });
});
