/**
 * What every trainer's launch files share: the export's context, the environment variables the
 * scripts read (so a user points them at the cluster without editing them), and the reward's
 * wiring to `coderl serve` through clients/python/coderl_client.py, which reads the scorer's
 * address from CODERL_SERVE_URL.
 */
import type { ArchFamily } from '../model/arch';
import type { ExportRun, TrainerMapping } from './mapping';
import type { Split, TaskRow } from './rows';

/** The scorer's address when --serve-url is not given: `coderl serve`'s default host and port. */
export const DEFAULT_SERVE_URL = 'http://127.0.0.1:8000';

/** The Python client the reward functions import (written in clients/python/ of the repository). */
export const CLIENT_FILE = 'coderl_client.py';

export interface LaunchContext {
  run: ExportRun;
  mapping: TrainerMapping;
  rows: Record<Split, TaskRow[]>;
  /** the run directory's name, for experiment names */
  name: string;
  serveUrl: string;
  family: ArchFamily;
}

/** The environment variables the launch scripts read, with what each is for. */
export const LAUNCH_ENV = {
  EXPORT_DIR: "where this folder is on storage every node reads (default: the script's own folder)",
  CODERL_SERVE_URL: "the scorer's address, http://HOST:PORT (default: the export's --serve-url)",
  N_GPUS: 'GPUs per node (default 1)',
  NNODES: 'nodes (default 1)',
  RAY_ADDRESS: 'OpenRLHF: the Ray dashboard address `ray job submit` talks to (default http://127.0.0.1:8265)',
  MICRO_BATCH: 'veRL: sequences per GPU per forward pass (default 4); memory, not a training setting',
} as const;

/** The head of a launch script: strict bash, the folder, and the variables with their defaults. */
export function scriptHead(what: string, ctx: LaunchContext, vars: (keyof typeof LAUNCH_ENV)[]): string[] {
  const defaults: Record<keyof typeof LAUNCH_ENV, string> = {
    EXPORT_DIR: '$HERE',
    CODERL_SERVE_URL: ctx.serveUrl,
    N_GPUS: '1',
    NNODES: '1',
    RAY_ADDRESS: 'http://127.0.0.1:8265',
    MICRO_BATCH: '4',
  };
  return [
    '#!/usr/bin/env bash',
    `# ${what} of the coderl export of run ${ctx.name}. Start the scorer first (README.md).`,
    '# Every setting carried over from the run is in the settings below, with the lab setting it',
    '# comes from and the trainer source the key was checked in; NOTES.md lists what is not carried.',
    'set -euo pipefail',
    'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
    ...vars.flatMap((v) => [`# ${LAUNCH_ENV[v]}`, `${v}="\${${v}:-${defaults[v]}}"`]),
  ];
}
