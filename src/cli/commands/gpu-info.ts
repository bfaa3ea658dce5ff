import { gpuInfo } from '../../gpu/info';
import { nodeProvider } from '../../gpu/node';
import { GpuRuntime } from '../../gpu/runtime';
import { runSelfCheck } from '../../kernels/selfcheck';
import type { Command } from '../command';

export const gpuInfoCommand: Command = {
  name: 'gpu-info',
  summary: 'print the WebGPU adapter, its features and limits as JSON, and run the self-check',
  usage: 'coderl gpu-info [--skip-self-check] [--compact] [--swiftshader]',
  description: [
    "Opens a WebGPU device through Dawn (the `webgpu` package) with the adapter's own limits, prints",
    'a JSON object {platform, adapter, notes, adapterFeatures, features, adapterLimits, deviceLimits,',
    'selfCheck} and exits 0 when the self-check passes, 1 when it fails or no adapter is found.',
    "Without a GPU, SwiftShader (from Debian's chromium package) is chosen and `notes` says so.",
  ].join('\n'),
  options: {
    'skip-self-check': { type: 'boolean', description: 'do not run the self-check kernels' },
    compact: { type: 'boolean', description: 'print the JSON on one line' },
    swiftshader: { type: 'boolean', description: 'use SwiftShader even if a hardware adapter exists' },
  },
  examples: ['npx coderl gpu-info', 'npx coderl gpu-info --compact | jq .adapter'],
  async run(options, _positionals, io) {
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    const rt = await GpuRuntime.create(provider);
    for (const note of provider.notes) io.err(`coderl gpu-info: note: ${note}`);
    try {
      const check = options['skip-self-check'] ? undefined : await runSelfCheck(rt);
      const info = gpuInfo(rt, check);
      io.out(options.compact ? JSON.stringify(info) : JSON.stringify(info, null, 2));
      if (check && !check.ok) {
        io.err(
          `coderl gpu-info: self-check FAILED: ${
            check.error ??
            check.checks
              .filter((c) => !c.ok)
              .map((c) => `${c.name}: ${c.detail}`)
              .join('; ')
          }`,
        );
        return 1;
      }
      return 0;
    } finally {
      rt.dispose();
    }
  },
};
