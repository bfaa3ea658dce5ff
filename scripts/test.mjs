#!/usr/bin/env node
// `npm test`: every test tier, in order, failing fast.
//   1. system packages the tests need (Chromium with SwiftShader, the Vulkan loader)
//   2. TypeScript strict type check, then lint (ESLint) and format (Prettier --check)
//   3. vitest unit tests, WebGPU tests included (Dawn in Node, on whatever adapter exists)
//   4. the app built with Vite
//   5. end-to-end tests: playwright-core driving headless Chromium against the built app
// A skipped or todo test counts as a failure. The last line reads "N passed, M failed".
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, 'test-results');
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const APT = ['chromium', 'libvulkan1'];

function step(title) {
  console.log(`\n=== ${title} ===`);
}

function hasVulkanLoader() {
  try {
    return execFileSync('ldconfig', ['-p'], { encoding: 'utf8' }).includes('libvulkan.so.1');
  } catch {
    return ['/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib/x86_64-linux-gnu/libvulkan.so.1'].some(existsSync);
  }
}

function ensureSystem() {
  step('system packages');
  const missing = [];
  if (!existsSync(chromiumPath)) missing.push('chromium');
  if (!hasVulkanLoader()) missing.push('libvulkan1');
  if (!missing.length) {
    console.log(`ok: ${chromiumPath}, libvulkan.so.1`);
    return;
  }
  const cmd = `apt-get update && apt-get install -y ${APT.join(' ')}`;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !existsSync('/usr/bin/apt-get')) {
    console.error(`missing: ${missing.join(', ')}. Install them, then run npm test again:\n  sudo sh -c '${cmd}'`);
    process.exit(1);
  }
  console.log(`missing ${missing.join(', ')}; installing: ${cmd}`);
  const r = spawnSync('sh', ['-c', cmd], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (r.status !== 0) {
    console.error(`installing ${missing.join(', ')} failed (exit ${r.status}); run as root: ${cmd}`);
    process.exit(1);
  }
}

function run(title, cmd, args) {
  step(title);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    console.error(`\n${title} failed (exit ${r.status ?? r.signal})`);
    return false;
  }
  return true;
}

/** Reads a vitest JSON report; skipped, todo or zero tests are failures. */
function tally(name, file) {
  const j = JSON.parse(readFileSync(file, 'utf8'));
  const t = { passed: j.numPassedTests, failed: j.numFailedTests, skipped: j.numPendingTests + j.numTodoTests };
  console.log(`${name}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`);
  if (t.skipped > 0) console.error(`${name}: ${t.skipped} skipped or todo tests count as failures`);
  if (t.passed === 0) console.error(`${name}: no test ran`);
  return t;
}

mkdirSync(results, { recursive: true });
ensureSystem();
const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const totals = { passed: 0, failed: 0, problems: 0 };
const finish = () => {
  const failed = totals.failed + totals.problems;
  console.log(`\ntests: ${totals.passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
};
const tier = (name, args) => {
  const file = join(results, `${name}.json`);
  const ok = run(`${name} tests`, process.execPath, [
    vitest,
    'run',
    ...args,
    '--reporter=default',
    '--reporter=json',
    `--outputFile=${file}`,
  ]);
  if (!existsSync(file)) {
    totals.problems++;
    return false;
  }
  const t = tally(name, file);
  totals.passed += t.passed;
  totals.failed += t.failed;
  if (t.skipped > 0 || t.passed === 0) totals.problems++;
  return ok && t.failed === 0 && t.skipped === 0 && t.passed > 0;
};

if (!run('typecheck', process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', root])) {
  totals.problems++;
  finish();
}
if (!run('lint', process.execPath, [join(root, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', root])) {
  totals.problems++;
  finish();
}
if (!run('format', process.execPath, [join(root, 'node_modules/prettier/bin/prettier.cjs'), '--check', '--log-level', 'warn', root])) {
  console.error('format: run `npm run format` to rewrite the files Prettier lists');
  totals.problems++;
  finish();
}
if (!tier('unit', [])) finish();
if (!run('build', process.execPath, [join(root, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'])) {
  totals.problems++;
  finish();
}
tier('e2e', ['--config', 'vitest.e2e.config.ts']);
finish();
