/** Entry point of the `coderl` CLI (bundled and launched by bin/coderl.mjs). */
import { GpuError } from '../gpu/errors';
import { commandHelp, parseCommandArgs, UsageError, type Command, type Io } from './command';
import { benchCommand } from './commands/bench';
import { gpuInfoCommand } from './commands/gpu-info';
import { scoreCommand } from './commands/score';
import { serveCommand } from './commands/serve';
import { suitesCommand } from './commands/suites';
import { trainCommand } from './commands/train';
import { evalCommand } from './commands/eval';
import { onnxCommand } from './commands/onnx';
import { exportHfCommand, generateCommand, logitsCommand } from './commands/models';
import { exportCommand } from './commands/export';

export const COMMANDS: Command[] = [
  gpuInfoCommand,
  benchCommand,
  suitesCommand,
  scoreCommand,
  serveCommand,
  trainCommand,
  evalCommand,
  generateCommand,
  logitsCommand,
  exportHfCommand,
  onnxCommand,
  exportCommand,
];

const VERSION = '0.1.0';

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    'coderl: Code RL Lab, headless (reinforcement learning on code generation, on WebGPU)',
    '',
    'Usage: coderl <command> [options]',
    '       coderl <command> --help',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    'Options:',
    '  -h, --help     show this help',
    '  --version      print the version',
    '',
  ].join('\n');
}

const stdio: Io = {
  out: (t) => process.stdout.write(t.endsWith('\n') ? t : `${t}\n`),
  err: (t) => process.stderr.write(t.endsWith('\n') ? t : `${t}\n`),
};

/** Runs the CLI; returns the exit code (0 ok, 1 failure, 2 bad usage). */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help') {
    io.out(mainHelp());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version') {
    io.out(VERSION);
    return 0;
  }
  if (first === 'help') {
    const c = COMMANDS.find((x) => x.name === rest[0]);
    io.out(c ? commandHelp(c) : mainHelp());
    return c || rest[0] === undefined ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === first);
  if (!command) {
    io.err(`coderl: unknown command '${first}'. Commands: ${COMMANDS.map((c) => c.name).join(', ')}. See coderl --help.`);
    return 2;
  }
  try {
    const { options, positionals, help } = parseCommandArgs(command, rest);
    if (help) {
      io.out(commandHelp(command));
      return 0;
    }
    return await command.run(options, positionals, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`${e.message}\nSee coderl ${command.name} --help.`);
      return 2;
    }
    if (e instanceof GpuError) {
      io.err(`coderl ${command.name}: ${e.kind}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}
