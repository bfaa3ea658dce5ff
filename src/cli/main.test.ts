import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import type { GpuInfo } from '../gpu/info';
import { COMMANDS, main } from './main';

function capture(): { io: { out(t: string): void; err(t: string): void }; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t) => void out.push(t), err: (t) => void err.push(t) }, out, err };
}

describe('coderl', () => {
  test('--help lists every command', async () => {
    const c = capture();
    expect(await main(['--help'], c.io)).toBe(0);
    for (const cmd of COMMANDS) expect(c.out.join('')).toContain(cmd.name);
  });

  test.each(COMMANDS.map((c) => c.name))('%s --help describes its options', async (name) => {
    const c = capture();
    expect(await main([name, '--help'], c.io)).toBe(0);
    expect(c.out.join('')).toMatch(new RegExp(`^coderl ${name}: [\\s\\S]*Usage: coderl ${name}[\\s\\S]*Options:`));
  });

  test('an unknown command or option is exit 2 with a message naming it', async () => {
    let c = capture();
    expect(await main(['trian'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/unknown command 'trian'\. Commands: gpu-info/);
    c = capture();
    expect(await main(['gpu-info', '--fast'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/coderl gpu-info: Unknown option '--fast'/);
  });

  test('gpu-info prints the adapter JSON and a passing self-check', async () => {
    const c = capture();
    expect(await main(['gpu-info', '--compact'], c.io)).toBe(0);
    const info = JSON.parse(c.out.join('')) as GpuInfo;
    expect(info.platform).toBe('node');
    expect(info.adapter.vendor || info.adapter.architecture).toBeTruthy();
    expect(info.deviceLimits.maxBufferSize).toBe(info.adapterLimits.maxBufferSize);
    expect(info.selfCheck?.ok).toBe(true);
    // the matmul check names the strategy this adapter selects (subgroup4 on SwiftShader, subgroup8 on lavapipe)
    expect(info.selfCheck?.checks.map((x) => x.name)).toEqual([
      'saxpy',
      'reduce_sum',
      expect.stringMatching(/^matmul (tiled|direct|subgroup[48])$/),
    ]);
    expect(info.selfCheck?.submits).toBe(1);
  });
});

test('bin/coderl.mjs runs gpu-info as a real process', async () => {
  const bin = join(import.meta.dirname, '../../bin/coderl.mjs');
  const { stdout } = await promisify(execFile)(process.execPath, [bin, 'gpu-info', '--compact'], { timeout: 60_000 });
  const info = JSON.parse(stdout) as GpuInfo;
  expect(info.selfCheck?.ok).toBe(true);
}, 90_000);

describe('coderl bench', () => {
  test('runtime --json prints validated figures', async () => {
    const c = capture();
    expect(await main(['bench', 'runtime', '--json', '--quick'], c.io)).toBe(0);
    const r = JSON.parse(c.out.join(''));
    expect(r.dispatches).toBe(100);
    expect(r.one_submit_dispatches_per_s).toBeGreaterThan(0);
    expect(r.per_dispatch_submit_dispatches_per_s).toBeGreaterThan(0);
    expect(r.readback_ms).toBeGreaterThan(0);
  });
  test('an unknown suite is a usage error listing the suites', async () => {
    const c = capture();
    expect(await main(['bench', 'warp'], c.io)).toBe(2);
    expect(c.err.join('')).toMatch(/unknown suite 'warp'; suites: runtime/);
  });
});
