/** The self-check on the test adapter: its three checks pass, and the matmul one names and runs this adapter's strategy. */
import { expect, test } from 'vitest';
import { testRuntime } from '../testing/gpu';
import { defaultMatmulStrategy, selectMatmulForward } from './matmul';
import { matmulCheckName, matmulCheckStrategy, runSelfCheck, selfCheckMatmulSpec } from './selfcheck';

test('the self-check passes saxpy, reduce_sum and the matmul of the selected strategy, in one submit', async () => {
  const rt = await testRuntime();
  const strategy = defaultMatmulStrategy(rt);
  const r = await runSelfCheck(rt);
  expect(r.error).toBeUndefined();
  expect(r.checks.map((c) => [c.name, c.ok])).toEqual([
    ['saxpy', true],
    ['reduce_sum', true],
    [matmulCheckName(strategy), true],
  ]);
  expect(r.checks[2]!.n).toBe(37 * 67);
  expect(r.submits).toBe(1);
  // the kernel it ran is the one models get for that shape
  expect(selfCheckMatmulSpec(strategy).name).toBe(
    selectMatmulForward({ M: 37, K: 36, N: 67 }, { bias: true, gelu: false, pre: false }, strategy).name,
  );
});

test('matmul check names round-trip; other names are not matmul checks', () => {
  for (const s of ['tiled', 'direct', 'naive', 'subgroup4', 'subgroup8'] as const) expect(matmulCheckStrategy(matmulCheckName(s))).toBe(s);
  expect(matmulCheckStrategy('saxpy')).toBeNull();
  expect(matmulCheckStrategy('matmul fast')).toBeNull();
  expect(selfCheckMatmulSpec('subgroup4').wgsl.startsWith('enable subgroups;')).toBe(true);
});
