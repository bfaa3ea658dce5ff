/**
 * `--suite S` of every command that takes one (score, train, eval, onnx eval): a built-in
 * suite's name (tasks/builtin-suites.ts, read from data/benchmarks/ or $CODERL_DATA) or a file.
 * A name wins over a file of the same name in the current directory; write ./NAME for the file.
 */
import { readFile } from 'node:fs/promises';
import { benchmarkPath } from '../tasks/benchmarks';
import { BUILTIN_SUITES, builtinSuite, type BuiltinSuite } from '../tasks/builtin-suites';
import { UsageError } from './command';
import { errorText } from '../util/errors';

export interface SuiteArg {
  /** the file that holds the suite */
  path: string;
  /** the built-in suite the argument named; undefined for a file */
  builtin?: BuiltinSuite;
  /** how messages name it: the built-in name, or the path as given */
  label: string;
}

const builtinNames = (): string => BUILTIN_SUITES.map((s) => s.name).join(', ');

/** What `--suite arg` names: a built-in suite's file, or the path as given (read by readSuiteArg). */
export function resolveSuiteArg(arg: string): SuiteArg {
  const b = builtinSuite(arg);
  return b ? { path: benchmarkPath(b.file), builtin: b, label: b.name } : { path: arg, label: arg };
}

/**
 * Reads a resolved suite's bytes for `coderl cmd`. A file that is not there is a usage error
 * that names the argument and lists the built-in names; an unreadable built-in file says where
 * the lab looks for it.
 */
export async function readSuiteArg(cmd: string, s: SuiteArg): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(s.path));
  } catch (e) {
    const why = errorText(e);
    if (s.builtin) {
      throw new UsageError(
        `coderl ${cmd}: cannot read the built-in suite ${s.builtin.name} (${s.path}): ${why}; it ships in the repository's data/benchmarks/, and CODERL_DATA names another folder`,
      );
    }
    const notName =
      (e as NodeJS.ErrnoException).code === 'ENOENT'
        ? `; '${s.label}' is not a built-in suite either (built-in suites: ${builtinNames()}; coderl suites lists them)`
        : '';
    throw new UsageError(`coderl ${cmd}: cannot read --suite ${s.label}: ${why}${notName}`);
  }
}
