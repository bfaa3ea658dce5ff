import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';
import { sha256Hex } from '../../rl/tasks/from-suite';
import { benchmarksDir, benchmarkPath } from '../../tasks/benchmarks';
import { BUILTIN_SUITES, type BuiltinSuite } from '../../tasks/builtin-suites';
import { loadSuite } from '../../tasks/suite';
import { formatIssue } from '../../tasks/types';
import type { Command } from '../command';
import { errorText } from '../../util/errors';

/** One built-in suite as `coderl suites` reports it, read from its file. */
export interface SuiteListing {
  name: string;
  title: string;
  language: string;
  /** tasks loaded from the file; null when it cannot be read */
  tasks: number | null;
  /** the file's path */
  file: string;
  /** hex SHA-256 of the file's bytes; null when it cannot be read */
  sha256: string | null;
  source: string;
  description: string;
  /** why the file cannot be read, or its load issues */
  problem?: string;
}

async function listing(s: BuiltinSuite): Promise<SuiteListing> {
  const file = benchmarkPath(s.file);
  const row = (tasks: number | null, sha256: string | null, problem?: string): SuiteListing => ({
    name: s.name,
    title: s.title,
    language: s.language,
    tasks,
    file,
    sha256,
    source: s.source,
    description: s.description,
    ...(problem ? { problem } : {}),
  });
  try {
    const bytes = new Uint8Array(await readFile(file));
    const loaded = await loadSuite(bytes, s.file);
    const problem = loaded.issues.length
      ? `${loaded.issues.length} line(s) of ${file} do not load, e.g. ${formatIssue(loaded.issues[0]!)}`
      : undefined;
    return row(loaded.items.length, await sha256Hex(bytes), problem);
  } catch (e) {
    return row(null, null, `cannot read ${file}: ${errorText(e)}`);
  }
}

/** A path under the current directory relative to it, any other absolute. */
function shown(path: string): string {
  const r = relative(process.cwd(), path);
  return r && !r.startsWith('..') ? r : path;
}

export const suitesCommand: Command = {
  name: 'suites',
  summary: 'list the built-in task suites (the names --suite takes)',
  usage: 'coderl suites [--json]',
  description: [
    'Lists the benchmark suites that ship in the repository (data/benchmarks/, or the folder CODERL_DATA',
    'names): each name is accepted by --suite wherever a suite file is (coderl score, train, eval, onnx eval).',
    'Each file is read: the task count is what loads from it. --json prints an array of',
    '{name, title, language, tasks, file, sha256, source, description}. Exit 1 when a file cannot be read.',
  ].join('\n'),
  options: {
    json: { type: 'boolean', description: 'print one JSON array' },
  },
  examples: ['npx coderl suites', 'npx coderl score --suite humaneval-x-js --canonical --out /tmp/r.jsonl'],
  async run(options, _positionals, io) {
    const rows = await Promise.all(BUILTIN_SUITES.map(listing));
    if (options.json) {
      io.out(JSON.stringify(rows));
    } else {
      const w = Math.max(...rows.map((r) => r.name.length)) + 2;
      io.out(`${'name'.padEnd(w)}${'language'.padEnd(12)}${'tasks'.padStart(5)}  file`);
      for (const r of rows) {
        io.out(`${r.name.padEnd(w)}${r.language.padEnd(12)}${String(r.tasks ?? '?').padStart(5)}  ${shown(r.file)}`);
        io.out(`${''.padEnd(w)}${r.title}: ${r.description}`);
        io.out(`${''.padEnd(w)}source: ${r.source}`);
      }
      io.out(`folder: ${shown(benchmarksDir())}${process.env.CODERL_DATA ? ' (CODERL_DATA)' : ''}; use a name as --suite NAME`);
    }
    const bad = rows.filter((r) => r.problem);
    for (const r of bad) io.err(`coderl suites: ${r.name}: ${r.problem}`);
    return bad.length ? 1 : 0;
  },
};
