/**
 * The part of Sandbox Fusion's POST /run_code (bytedance/SandboxFusion 469de0845cb7,
 * sandbox/server/sandbox_api.py RunCodeRequest / RunCodeResponse / parse_run_status,
 * sandbox/runners/types.py CommandRunResult) that veRL's sandbox_fusion reward and tool call
 * (volcengine/verl b178a3cd56f5, verl/utils/reward_score/sandbox_fusion/utils.py,
 * call_sandbox_api) uses. veRL sends
 *
 *   {"compile_timeout": ..., "run_timeout": ..., "code": ..., "stdin": ... (or null), "memory_limit_MB": ...,
 *    "language": language, "files": {}, "fetch_files": []}
 *
 * with Content-Type and Accept only (a token rides in the URL), waits compile + run + 10 s,
 * retries a 504 (3 attempts, 1 s then 2 s apart) and takes any other non-2xx as an API error,
 * and reads `status` ("Success" / "Failed" / "SandboxError"), `compile_result` and `run_result`
 * {status ("Finished" / "TimeLimitExceeded" / "Error"), return_code, stdout, stderr,
 * execution_time}: Success wants run_result Finished; Failed with TimeLimitExceeded is a
 * timeout, with Finished and a code other than 0 a runtime error. Answers follow Sandbox
 * Fusion's parse_run_status: Success when the run finished with code 0, Failed on a time limit
 * or another code, SandboxError when the sandbox itself failed. Python and JavaScript have no
 * compile step: compile_result is null.
 */
import type { RunLimits, RunResult } from '../sandbox/result';
import { DEFAULT_LIMITS } from '../sandbox/result';
import { isProgramResult } from '../sandbox/program';
import type { ServeConfig } from './config';
import type { RunCodeRequest } from './validate';

export interface CommandRunResult {
  status: 'Finished' | 'TimeLimitExceeded' | 'Error';
  execution_time: number | null;
  return_code: number | null;
  stdout: string | null;
  stderr: string | null;
}

export interface RunCodeResponse {
  status: 'Success' | 'Failed' | 'SandboxError';
  message: string;
  compile_result: CommandRunResult | null;
  run_result: CommandRunResult | null;
  executor_pod_name: string | null;
  files: Record<string, string>;
}

/** A request's limits: run_timeout and memory_limit_MB capped by the server's, the output limit the server's. */
export function runCodeLimits(req: RunCodeRequest, cfg: ServeConfig): RunLimits {
  const mb = req.memoryLimitMb > 0 ? Math.min(req.memoryLimitMb, cfg.maxMemoryMb) : cfg.maxMemoryMb;
  return {
    ...DEFAULT_LIMITS,
    timeoutMs: Math.max(1, Math.min(Math.round(req.runTimeoutS * 1000), cfg.maxRunTimeoutMs)),
    memoryBytes: mb << 20,
    pythonMemoryBytes: mb << 20,
    outputChars: cfg.programOutputChars,
  };
}

/** How long a /run_code request may take: veRL's client gives up at compile + run + 10 s, so answer (504, which it retries) before that. */
export function runCodeDeadlineMs(req: RunCodeRequest, cfg: ServeConfig): number {
  return Math.min(cfg.requestTimeoutMs, Math.round((req.compileTimeoutS + req.runTimeoutS) * 1000) + 8000);
}

export function runCodeResponse(r: RunResult): RunCodeResponse {
  const base = { compile_result: null, executor_pod_name: process.env.MY_POD_NAME ?? null, files: {} };
  const seconds = Math.round(r.duration_ms) / 1000;
  if (isProgramResult(r)) {
    const p = r.process;
    if (r.verdict === 'timeout')
      return {
        ...base,
        status: 'Failed',
        message: '',
        run_result: { status: 'TimeLimitExceeded', execution_time: seconds, return_code: null, stdout: p.stdout, stderr: p.stderr },
      };
    const stderr = r.verdict === 'output-limit' ? `${p.stderr}\n[coderl serve] ${r.message ?? 'output limit'}\n` : p.stderr;
    return {
      ...base,
      status: p.exit_code === 0 ? 'Success' : 'Failed',
      message: '',
      run_result: { status: 'Finished', execution_time: seconds, return_code: p.exit_code, stdout: p.stdout, stderr },
    };
  }
  // no process output: the pool killed the worker (its hard timeout) or the sandbox failed
  if (r.verdict === 'timeout')
    return {
      ...base,
      status: 'Failed',
      message: '',
      run_result: { status: 'TimeLimitExceeded', execution_time: seconds, return_code: null, stdout: '', stderr: '' },
    };
  return { ...base, status: 'SandboxError', message: r.message ?? 'the sandbox failed', run_result: null };
}
