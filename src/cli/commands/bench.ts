import { benchRuntime } from '../../../bench/runtime';
import { nodeProvider } from '../../gpu/node';
import { GpuRuntime } from '../../gpu/runtime';
import { UsageError, type Command } from '../command';

const SUITES = ['runtime'] as const;

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark and print its figures (runtime)',
  usage: 'coderl bench <suite> [--json] [--quick] [--swiftshader]',
  description: [
    'Suites:',
    '  runtime   K small dispatches recorded into one submit vs one submit each (dispatches/s and',
    '            the ratio), and the round trip of a 4-byte readback. Results are validated first.',
  ].join('\n'),
  options: {
    json: { type: 'boolean', description: 'print one JSON object instead of a table' },
    quick: { type: 'boolean', description: 'fewer repeats' },
    swiftshader: { type: 'boolean', description: 'use SwiftShader even if a hardware adapter exists' },
  },
  examples: ['npx coderl bench runtime', 'npx coderl bench runtime --json'],
  async run(options, positionals, io) {
    const suite = positionals[0];
    if (!suite || !(SUITES as readonly string[]).includes(suite)) {
      throw new UsageError(`coderl bench: ${suite ? `unknown suite '${suite}'` : 'name a suite'}; suites: ${SUITES.join(', ')}`);
    }
    const provider = await nodeProvider({ forceSwiftShader: options.swiftshader === true });
    const rt = await GpuRuntime.create(provider);
    try {
      const r = await benchRuntime(rt, options.quick ? { dispatches: 100, repeats: 1 } : {});
      if (options.json) {
        io.out(JSON.stringify(r));
      } else {
        io.out(
          [
            `adapter: ${r.adapter}`,
            `${r.dispatches} dispatches, one submit:        ${r.one_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `${r.dispatches} dispatches, one submit each:   ${r.per_dispatch_submit_dispatches_per_s.toLocaleString('en-US')} dispatches/s`,
            `ratio (one submit / one each):      ${r.ratio}x`,
            `4-byte readback round trip (median): ${r.readback_ms} ms`,
          ].join('\n'),
        );
      }
      return 0;
    } finally {
      rt.dispose();
    }
  },
};
