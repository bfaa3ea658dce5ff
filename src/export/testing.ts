/**
 * Test support for the export: real run directories (coderl train in-process on MINI_RUN, the
 * lab's GPT or the GPT-2 fixture with LoRA; the test passes the CLI's `main` in, as the export sits
 * below the CLI), a stub command that records the argv a launch script ends in, and the python3
 * probes (tests that need Python skip without it).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MINI_RUN } from '../rl/testing';

const quiet = { out: () => {}, err: () => {} };

/** The CLI's entry point (cli/main.ts main). */
export type CliMain = (argv: string[], io: { out(t: string): void; err(t: string): void }) => Promise<number>;

export const GPT2_FIXTURE = join(import.meta.dirname, '../../data/hf-fixtures/gpt2');

/** A finished run of the lab's GPT: MINI_RUN (PPO, KL penalty), seed 2. */
export async function trainLabRun(main: CliMain, root: string): Promise<string> {
  const dir = join(root, 'lab-run');
  const code = await main(
    ['train', '--preset', 'tiny', '--seed', '2', '--out', dir, '--set', JSON.stringify(MINI_RUN), '--quiet', '--workers', '2'],
    quiet,
  );
  if (code !== 0) throw new Error(`coderl train exited ${code}`);
  return dir;
}

/** A finished Dr. GRPO run with LoRA rank 4 on the GPT-2 fixture (64 positions). */
export async function trainLoraRun(main: CliMain, root: string): Promise<string> {
  const dir = join(root, 'lora-run');
  const { sft: _sft, ...mini } = MINI_RUN;
  const set = {
    ...mini,
    model: { contextLength: 64 },
    lora: { rank: 4 },
    rl: { ...MINI_RUN.rl, algo: 'grpo', groupStd: false, maxNewTokens: 8 },
    eval: { ...MINI_RUN.eval, maxNewTokens: 8 },
  };
  const args = ['train', '--preset', 'tiny', '--seed', '4', '--out', dir, '--model', GPT2_FIXTURE, '--set', JSON.stringify(set), '--quiet'];
  const code = await main([...args, '--workers', '1'], quiet);
  if (code !== 0) throw new Error(`coderl train --model exited ${code}`);
  return dir;
}

/**
 * Runs `bash script` with a stub `cmd` first on PATH that records its arguments; returns them.
 * The script's environment is `env` over this process's.
 */
export function runWithStub(script: string, cmd: string, env: Record<string, string> = {}, extra: string[] = []): string[] {
  const bin = mkdtempSync(join(tmpdir(), 'coderl-stub-'));
  const record = join(bin, 'argv');
  writeFileSync(
    join(bin, cmd),
    `#!/usr/bin/env bash\nprintf '%s\\0' "$@" > "${record}"\nprintf 'CODERL_SERVE_URL=%s\\0' "\${CODERL_SERVE_URL:-}" >> "${record}"\n`,
  );
  chmodSync(join(bin, cmd), 0o755);
  const r = spawnSync('bash', [script, ...extra], {
    env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH ?? ''}` },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`bash ${script} exited ${r.status}: ${r.stderr}`);
  return readFileSync(record, 'utf8').split('\0').slice(0, -1);
}

/** Whether `python3` runs, and imports `module` when one is named. */
export function hasPython(module?: string): boolean {
  const r = spawnSync('python3', ['-c', module ? `import ${module}` : 'pass'], { encoding: 'utf8' });
  return r.status === 0;
}

/** Runs python3 on a program with arguments; its stdout, or throws with its stderr. */
export function python(program: string, ...args: string[]): string {
  const r = spawnSync('python3', ['-c', program, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`);
  return r.stdout;
}
