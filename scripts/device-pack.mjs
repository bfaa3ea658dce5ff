#!/usr/bin/env node
// Packs what a GPU machine without Node.js needs to run our benchmarks into the ignored folder
// .devrun/, which a device call names in `carry` (README, "Reproducing on a real GPU"):
//   cli.mjs.xz            the CLI, bundled by bin/coderl.mjs's bundleCli with every npm package
//                         inside (TF.js too); run with CODERL_BUNDLE=<unpacked>/cli.mjs
//   bench-extra.mjs.xz    the engine bench with a chosen model preset (the CLI has no --preset
//                         flag), and `format FILE` to print an engine JSON result as the table
//   dawn.node.xz          the `webgpu` package's Dawn binding; unpacked to dist/linux-x64/ next
//                         to the bundles, where the bundled webgpu/index.js looks for it
//   node.xz               this machine's node binary (x86-64, glibc)
//   gl/libvulkan1_*.deb   the Vulkan loader (the device README's `.gl` recipe)
//   lib/libvulkan.so.1    the same loader, unpacked, for a machine without dpkg
//   compat/libstdc++.so.6.xz   this machine's libstdc++, used only if dawn.node cannot load there
//   MANIFEST.txt          versions, git commit, sha256 of every unpacked file
// scripts/device-bench.sh unpacks and runs it all. Usage: node scripts/device-pack.mjs
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pack = join(root, '.devrun');
const LIMIT_MIB = 60;
/** the Vulkan loader and the glvnd libraries the NVIDIA ICD (libGLX_nvidia.so.0) needs: the device README's `.gl` set */
const GL_PACKAGES = ['libvulkan1', 'libegl1', 'libglvnd0', 'libopengl0', 'libgl1', 'libglx0', 'libgles2'];

// The engine bench with a chosen model preset, bundled from src/perf/engine.ts as it is (no bench
// code changed): `bench-extra.mjs preset=medium B=16 T=256 steps=2 ...` prints the table on
// stderr and one JSON object on stdout; `bench-extra.mjs format FILE` prints an engine JSON
// result (from `coderl bench engine --json`) as the CLI's table. The bench repeats one batch and
// requires the last step's loss within 1 of ln V; larger presets memorise that batch quickly,
// so keep warmup + steps - 1 updates few there.
const BENCH_EXTRA = `
import { readFileSync } from 'node:fs';
import { installTfjsNodeResolver, providerGpu } from './bench/tfjs-node';
import { nodeProvider } from './src/gpu/node';
import { GpuRuntime } from './src/gpu/runtime';
import { MODEL_PRESETS } from './src/model/config';
import { benchEngine, ENGINE_BENCH_DEFAULTS, formatEngineBench, type EngineBenchOptions } from './src/perf/engine';
import { loadTfjs } from './src/perf/tfjs';

const USAGE = 'usage: bench-extra.mjs [preset=tiny|small|medium] [B=16] [T=128] [warmup=1] [steps=5] [genB=8] [prompt=32] [new=64] [genReps=3] [sizes=N,N] [reps=5]\\n' +
  '       bench-extra.mjs format ENGINE.json';

async function run(args: string[]): Promise<number> {
  if (args[0] === '--help' || args[0] === '-h') { console.log(USAGE); return 0; }
  if (args[0] === 'format') { console.log(formatEngineBench(JSON.parse(readFileSync(args[1]!, 'utf8')))); return 0; }
  const kv: Record<string, string> = {};
  for (const a of args) {
    const i = a.indexOf('=');
    if (i < 1) { console.error(USAGE); return 2; }
    kv[a.slice(0, i)] = a.slice(i + 1);
  }
  const num = (k: string, d: number): number => {
    const n = kv[k] === undefined ? d : Number(kv[k]);
    if (!Number.isInteger(n) || n < 1) throw new Error(k + ' must be a positive integer, got ' + kv[k]);
    return n;
  };
  const preset = (kv.preset ?? 'small') as keyof typeof MODEL_PRESETS;
  if (!(preset in MODEL_PRESETS)) throw new Error('unknown preset ' + preset + '; presets: ' + Object.keys(MODEL_PRESETS).join(', '));
  const o: EngineBenchOptions = {
    ...ENGINE_BENCH_DEFAULTS,
    sizes: kv.sizes ? kv.sizes.split(',').map((s) => Number(s)) : [],
    reps: num('reps', ENGINE_BENCH_DEFAULTS.reps),
    train: { preset, B: num('B', 16), T: num('T', 128), warmup: num('warmup', 1), steps: num('steps', 5) },
    generate: { B: num('genB', 8), promptLen: num('prompt', 32), newTokens: num('new', 64), reps: num('genReps', 3) },
  };
  const t0 = performance.now();
  const say = (m: string): void => console.error('bench-extra ' + preset + ': ' + m + ' (' + ((performance.now() - t0) / 1000).toFixed(1) + ' s)');
  const provider = await nodeProvider();
  const rt = await GpuRuntime.create(provider);
  try {
    for (const note of provider.notes) say('note: ' + note);
    say('loading TF.js (webgpu backend)');
    installTfjsNodeResolver();
    const tf = await loadTfjs(providerGpu(provider));
    const r = await benchEngine(rt, tf, o, say);
    say('done');
    console.error(formatEngineBench(r));
    console.log(JSON.stringify({ options: o, ...r }));
    return 0;
  } finally {
    rt.dispose();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => { console.error('bench-extra: ' + (e?.stack ?? e)); process.exit(1); },
);
`;

const say = (m) => console.log(`device-pack: ${m}`);
const die = (m) => {
  console.error(`device-pack: ${m}`);
  process.exit(1);
};
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

if (process.platform !== 'linux' || process.arch !== 'x64')
  die(`needs linux x64 (the GPU machine is x86-64); this is ${process.platform} ${process.arch}`);
if (spawnSync('xz', ['--version']).status !== 0) die('needs xz (apt-get install xz-utils)');

/** xz-compresses src to dst; skipped when dst was made from the same src (same size and mtime). */
function xz(src, dst) {
  const st = statSync(src);
  const stamp = `${realpathSync(src)} ${st.size} ${st.mtimeMs}`;
  if (existsSync(dst) && existsSync(`${dst}.src`) && readFileSync(`${dst}.src`, 'utf8') === stamp) {
    say(`${relative(root, dst)} up to date`);
    return;
  }
  const t0 = Date.now();
  execFileSync('sh', ['-c', 'xz -T0 -6 -c "$1" > "$2.tmp" && mv "$2.tmp" "$2"', 'sh', src, dst], { stdio: 'inherit' });
  writeFileSync(`${dst}.src`, stamp);
  say(`${relative(root, dst)}: ${mib(st.size)} -> ${mib(statSync(dst).size)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

mkdirSync(pack, { recursive: true });
const stage = mkdtempSync(join(tmpdir(), 'coderl-devpack-'));
try {
  // 1. bundles, no npm package left external
  const esbuild = await import('esbuild');
  const { bundleCli } = await import(join(root, 'bin/coderl.mjs'));
  say('bundling the CLI (bin/coderl.mjs bundleCli, external: false)');
  await bundleCli(join(stage, 'cli.mjs'), { external: false });
  say('bundling bench-extra (engine bench with a model preset)');
  await esbuild.build({
    stdin: { contents: BENCH_EXTRA, loader: 'ts', resolveDir: root, sourcefile: 'device-bench-extra.ts' },
    outfile: join(stage, 'bench-extra.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    loader: { '.wgsl': 'text' },
    sourcemap: 'inline',
    logLevel: 'error',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  const dawn = join(root, 'node_modules/webgpu/dist/linux-x64/dawn.node');
  if (!existsSync(dawn)) die(`${dawn} is missing (npm ci)`);
  mkdirSync(join(stage, 'dist/linux-x64'), { recursive: true });
  copyFileSync(dawn, join(stage, 'dist/linux-x64/dawn.node'));

  // 2. smoke test: the bundles load and find dawn.node with no node_modules anywhere above them
  const env = { ...process.env, CODERL_BUNDLE: join(stage, 'cli.mjs'), NODE_PATH: '' };
  const run = (args, timeout = 60_000) => spawnSync(process.execPath, args, { cwd: stage, env, encoding: 'utf8', timeout });
  const v = run([join(root, 'bin/coderl.mjs'), '--version']);
  if (v.status !== 0) die(`the bundled CLI does not start:\n${v.stdout}${v.stderr}`);
  const info = run([join(root, 'bin/coderl.mjs'), 'gpu-info', '--skip-self-check', '--compact']);
  const infoText = `${info.stdout}${info.stderr}`;
  if (info.status === 0) say(`smoke test: gpu-info found ${JSON.parse(info.stdout).adapter.description}`);
  else if (/no WebGPU adapter/.test(infoText)) say('smoke test: dawn.node loads (no adapter on this machine)');
  else die(`the bundled CLI could not open Dawn:\n${infoText}`);
  const extra = run([join(stage, 'bench-extra.mjs'), '--help']);
  if (extra.status !== 0) die(`bench-extra does not start:\n${extra.stdout}${extra.stderr}`);

  // 3. compress into .devrun
  for (const f of ['cli.mjs', 'bench-extra.mjs']) {
    rmSync(join(pack, `${f}.xz.src`), { force: true }); // rebuilt every time: always recompress
    xz(join(stage, f), join(pack, `${f}.xz`));
  }
  xz(dawn, join(pack, 'dawn.node.xz'));
  xz(process.execPath, join(pack, 'node.xz'));
  const libstdcxx = ['/lib/x86_64-linux-gnu/libstdc++.so.6', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6'].find((p) => existsSync(p));
  if (libstdcxx) {
    mkdirSync(join(pack, 'compat'), { recursive: true });
    xz(libstdcxx, join(pack, 'compat/libstdc++.so.6.xz'));
  }

  // 4. the Vulkan loader, per the device README's `.gl` recipe (amd64 whatever this machine is)
  const gl = join(pack, 'gl');
  mkdirSync(gl, { recursive: true });
  if (!readdirSync(gl).some((f) => /^libvulkan1_.*_amd64\.deb$/.test(f))) {
    const lists = '/tmp/amd64';
    mkdirSync(join(lists, 'partial'), { recursive: true });
    const o = ['-oAPT::Architecture=amd64', '-oAPT::Architectures=amd64', `-oDir::State::Lists=${lists}`];
    say('apt-get download libvulkan1 and the glvnd libraries the NVIDIA ICD needs (amd64)');
    const up = spawnSync('apt-get', [...o, 'update'], { encoding: 'utf8' });
    const dl = up.status === 0 ? spawnSync('apt-get', [...o, 'download', ...GL_PACKAGES], { cwd: gl, encoding: 'utf8' }) : up;
    if (dl.status !== 0)
      console.error(
        `device-pack: WARNING: could not download ${GL_PACKAGES.join(', ')} (${dl.stderr?.trim() || dl.error}); the device must have its own Vulkan loader`,
      );
  }
  const deb = readdirSync(gl).find((f) => /^libvulkan1_.*_amd64\.deb$/.test(f));
  if (deb) {
    say(`Vulkan loader: gl/${deb}`);
    const x = mkdtempSync(join(tmpdir(), 'coderl-deb-'));
    try {
      execFileSync('dpkg', ['-x', join(gl, deb), x]);
      const so = ['usr/lib/x86_64-linux-gnu/libvulkan.so.1', 'lib/x86_64-linux-gnu/libvulkan.so.1']
        .map((p) => join(x, p))
        .find((p) => existsSync(p));
      if (!so) die(`no libvulkan.so.1 in ${deb}`);
      mkdirSync(join(pack, 'lib'), { recursive: true });
      copyFileSync(so, join(pack, 'lib/libvulkan.so.1')); // copyFileSync follows the symlink
    } finally {
      rmSync(x, { recursive: true, force: true });
    }
  }

  // 5. manifest: what was packed, from which tree; device-bench.sh checks the sha256 sums
  const git = (...a) => spawnSync('git', a, { cwd: root, encoding: 'utf8' }).stdout?.trim() ?? '';
  const sums = [
    ['cli.mjs', join(stage, 'cli.mjs')],
    ['bench-extra.mjs', join(stage, 'bench-extra.mjs')],
    ['dist/linux-x64/dawn.node', dawn],
    ['node', process.execPath],
  ].map(([name, file]) => `${sha256(file)}  ${name}`);
  const webgpuVersion = JSON.parse(readFileSync(join(root, 'node_modules/webgpu/package.json'), 'utf8')).version;
  const tfVersion = JSON.parse(readFileSync(join(root, 'node_modules/@tensorflow/tfjs-core/package.json'), 'utf8')).version;
  writeFileSync(
    join(pack, 'MANIFEST.txt'),
    [
      `packed: ${new Date().toISOString()}`,
      `git: ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : ''}`,
      `node: ${process.version}; webgpu (Dawn): ${webgpuVersion}; @tensorflow/tfjs-core: ${tfVersion}; Vulkan loader: ${deb ?? 'none'}`,
      'sha256 of the unpacked files (sha256sum -c, in the unpack folder):',
      ...sums,
      '',
    ].join('\n'),
  );
  writeFileSync(join(pack, 'SHA256SUMS'), `${sums.join('\n')}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}

// 6. size: what a device call carries
const du = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (n, e) => n + (e.isDirectory() ? du(join(dir, e.name)) : statSync(join(dir, e.name)).size),
    0,
  );
const total = du(pack);
for (const e of readdirSync(pack, { recursive: true })) {
  const p = join(pack, e);
  if (statSync(p).isFile() && !e.endsWith('.src')) say(`  ${e.padEnd(30)} ${mib(statSync(p).size)}`);
}
say(`total .devrun: ${mib(total)} (${total} bytes; device working tree limit 64 MiB, keep under ${LIMIT_MIB})`);
if (total > LIMIT_MIB * 2 ** 20) die(`.devrun is over ${LIMIT_MIB} MiB`);
