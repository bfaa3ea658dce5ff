/** A small command framework over node:util parseArgs: every command has --help, typed options and clear errors. */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { errorText } from '../util/errors';

export interface OptionSpec {
  type: 'string' | 'boolean';
  description: string;
  short?: string;
  /** shown in help as the value's name, e.g. FILE */
  value?: string;
}

export type Options = Record<string, string | boolean | undefined>;

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  description: string;
  options: Record<string, OptionSpec>;
  examples: string[];
  run(options: Options, positionals: string[], io: Io): Promise<number>;
}

/** Thrown for bad command-line input; printed without a stack, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * An integer option of `coderl CMD`, at least `min`; undefined when absent. The error names the
 * command, the flag and the value given.
 */
export function intOption(cmd: string, options: Options, name: string, min: number): number | undefined {
  const v = options[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < min) {
    throw new UsageError(
      `coderl ${cmd}: --${name} must be ${min === 1 ? 'a positive integer' : `an integer >= ${min}`}, got '${String(v)}'`,
    );
  }
  return n;
}

/** A file named on the command line, as bytes; an unreadable one is a usage error naming it (and `what` it was for). */
export async function readInput(cmd: string, path: string, what = ''): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    throw new UsageError(`coderl ${cmd}: cannot read ${what ? `${what} ` : ''}${path}: ${errorText(e)}`);
  }
}

export function commandHelp(c: Command): string {
  const opts = Object.entries({ ...c.options, help: { type: 'boolean', description: 'show this help', short: 'h' } as OptionSpec });
  const rows = opts.map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
    return `  ${flag.padEnd(30)} ${o.description}`;
  });
  return [
    `coderl ${c.name}: ${c.summary}`,
    '',
    `Usage: ${c.usage}`,
    '',
    c.description,
    '',
    'Options:',
    ...rows,
    ...(c.examples.length ? ['', 'Examples:', ...c.examples.map((e) => `  ${e}`)] : []),
    '',
  ].join('\n');
}

export function parseCommandArgs(c: Command, argv: string[]): { options: Options; positionals: string[]; help: boolean } {
  const spec: Record<string, { type: 'string' | 'boolean'; short?: string }> = { help: { type: 'boolean', short: 'h' } };
  for (const [name, o] of Object.entries(c.options)) spec[name] = o.short ? { type: o.type, short: o.short } : { type: o.type };
  try {
    const { values, positionals } = parseArgs({ args: argv, options: spec, strict: true, allowPositionals: true });
    const { help, ...options } = values as Options;
    return { options, positionals, help: help === true };
  } catch (e) {
    throw new UsageError(`coderl ${c.name}: ${errorText(e).replace(/\. To specify.*$/s, '')}`);
  }
}
