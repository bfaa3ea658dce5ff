import { readFile } from 'node:fs/promises';
import { DEFAULT_SERVE, HttpError, isLoopback, type ServeConfig } from '../../serve/config';
import { rewardFrom } from '../../serve/validate';
import { ServeServer } from '../../serve/server';
import { DefaultSuiteError } from '../../serve/suites';
import { defaultPoolSize } from '../../sandbox/pool.node';
import { errorText } from '../../util/errors';
import { intOption, UsageError, type Command, type Io, type Options } from '../command';

const D = DEFAULT_SERVE;

/** --reward: a JSON file or inline {...}, checked as /v1/score checks a request's weights. */
async function rewardOption(value: string | boolean | undefined): Promise<ServeConfig['reward']> {
  if (typeof value !== 'string') return D.reward;
  let text = value;
  if (!value.trim().startsWith('{')) {
    try {
      text = await readFile(value, 'utf8');
    } catch (e) {
      throw new UsageError(`coderl serve: cannot read --reward ${value}: ${errorText(e)}`);
    }
  }
  try {
    return rewardFrom(JSON.parse(text), '--reward');
  } catch (e) {
    throw new UsageError(`coderl serve: ${e instanceof HttpError ? e.message : `--reward is not valid JSON: ${errorText(e)}`}`);
  }
}

/** The settings from the flags; a bound address beyond loopback without a token is refused here, before anything starts. */
export async function serveConfig(options: Options, env: NodeJS.ProcessEnv = process.env): Promise<ServeConfig> {
  const int = (name: string, min: number): number | undefined => intOption('serve', options, name, min);
  const host = typeof options.host === 'string' ? options.host : D.host;
  const token = typeof options.token === 'string' ? options.token : env.CODERL_SERVE_TOKEN || undefined;
  if (!isLoopback(host) && !token)
    throw new UsageError(
      `coderl serve: refusing to listen on ${host} without a token: beyond loopback anyone who reaches the port could run code on this machine's sandbox; give --token T or set CODERL_SERVE_TOKEN (clients then send Authorization: Bearer T)`,
    );
  const workers = int('workers', 1) ?? defaultPoolSize();
  const timeout = int('timeout', 1);
  return {
    ...D,
    host,
    port: int('port', 0) ?? D.port,
    token,
    workers,
    programWorkers: int('program-workers', 0) ?? workers,
    defaultSuite: typeof options.suite === 'string' ? options.suite : undefined,
    reward: await rewardOption(options.reward),
    limits: timeout ? { ...D.limits, timeoutMs: timeout } : D.limits,
    queueLimit: int('queue', 1) ?? D.queueLimit,
    maxBodyBytes: int('max-body', 1) ?? D.maxBodyBytes,
    requestTimeoutMs: int('request-timeout', 1) ?? D.requestTimeoutMs,
    suiteCacheSize: int('suite-cache', 1) ?? D.suiteCacheSize,
    eosMarkers: typeof options.eos === 'string' ? options.eos.split(',').filter(Boolean) : D.eosMarkers,
  };
}

/** Runs until SIGTERM or SIGINT, then drains and resolves with 0. */
async function serveUntilSignal(cfg: ServeConfig, io: Io): Promise<number> {
  let server: ServeServer;
  try {
    server = await ServeServer.start(cfg);
  } catch (e) {
    if (e instanceof DefaultSuiteError) throw new UsageError(`coderl serve: ${e.message}`);
    throw e;
  }
  io.out(server.url); // the first line: scripts and tests read the address here
  io.err(
    `coderl serve: ${cfg.workers} test worker(s), ${cfg.programWorkers} program worker(s), queue ${cfg.queueLimit}, ${cfg.token ? 'bearer token required' : 'no auth (loopback)'}${cfg.defaultSuite ? `, suite ${cfg.defaultSuite}` : ''}`,
  );
  server.ready.then(
    () => io.err('coderl serve: ready'),
    (e: unknown) => io.err(`coderl serve: not ready: ${errorText(e)}`),
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      process.off('SIGTERM', onTerm).off('SIGINT', onInt);
      io.err(`coderl serve: ${signal}: draining (no new work, /readyz 503, finishing what is in flight)`);
      void server.close().then(resolve);
    };
    const onTerm = (): void => stop('SIGTERM');
    const onInt = (): void => stop('SIGINT');
    process.once('SIGTERM', onTerm).once('SIGINT', onInt);
  });
  io.err('coderl serve: stopped');
  return 0;
}

export const serveCommand: Command = {
  name: 'serve',
  summary: "the lab's scorer as an HTTP service: our /v1/score, OpenRLHF's /get_reward, Sandbox Fusion's /run_code",
  usage: 'coderl serve [--host H] [--port P] [--token T] [--workers N] [--suite NAME|FILE] [--reward JSON] [--queue N] ...',
  description: [
    'Serves the scorer of coderl score (the same sandbox, analysis and reward; stateless but for an LRU of',
    'uploaded suites) so cluster trainers can call it: POST /v1/suites and /v1/score (records as coderl score',
    "writes them), POST /get_reward (OpenRLHF's --reward.remote_url, --remote_rm_url before 0.10.2), POST",
    "/run_code (veRL's reward_model.sandbox_fusion.url), GET /healthz, /readyz and /metrics (Prometheus).",
    "--suite names the suite /get_reward's labels and a /v1/score without a suite field look task ids up in:",
    'a built-in name, a file (read at start; a bad line refuses to start, exit 2) or an uploaded hash.',
    'docs/serve.md has the requests, answers and error codes. The first line printed is the bound address',
    '(http://host:port). Beyond loopback a token is required (--token or CODERL_SERVE_TOKEN; clients send',
    'Authorization: Bearer T, or put it in the URL as http://coderl:T@host:port or ?token=T); without one it',
    'refuses to start (exit 2). A full queue answers 429 with Retry-After (504 on /run_code, which veRL',
    'retries); SIGTERM or SIGINT drains: /readyz 503, new requests 503, requests in flight finish, then exit 0.',
  ].join('\n'),
  options: {
    host: { type: 'string', description: `address to listen on (default ${D.host}); beyond loopback needs a token`, value: 'H' },
    port: { type: 'string', description: `port (default ${D.port}; 0 picks a free one)`, value: 'P' },
    token: { type: 'string', description: 'bearer token every request must carry (default: $CODERL_SERVE_TOKEN)', value: 'T' },
    workers: { type: 'string', description: 'sandbox workers for scoring (default: cores - 1)', value: 'N' },
    'program-workers': { type: 'string', description: 'sandbox workers for /run_code (default: --workers; 0 turns it off)', value: 'N' },
    suite: {
      type: 'string',
      description:
        "for /get_reward's labels and a /v1/score naming none: a built-in name, a file (JSONL, .gz, JSON array) or an uploaded hash",
      value: 'NAME|FILE',
    },
    timeout: { type: 'string', description: `wall-clock limit per scored program (default ${D.limits.timeoutMs})`, value: 'MS' },
    reward: {
      type: 'string',
      description: 'reward weights as JSON (a file, or inline {...}); unset fields keep their defaults',
      value: 'JSON',
    },
    queue: {
      type: 'string',
      description: `programs that may wait per pool before requests are refused; also the most per request (default ${D.queueLimit})`,
      value: 'N',
    },
    'max-body': { type: 'string', description: `largest request body (default ${D.maxBodyBytes})`, value: 'BYTES' },
    'request-timeout': {
      type: 'string',
      description: `wall-clock limit per request, 504 past it (default ${D.requestTimeoutMs})`,
      value: 'MS',
    },
    'suite-cache': { type: 'string', description: `uploaded suites kept in memory (default ${D.suiteCacheSize})`, value: 'N' },
    eos: {
      type: 'string',
      description: "texts stripped from the end of /get_reward's responses, comma-separated (default: common EOS tokens)",
      value: 'LIST',
    },
  },
  examples: [
    'npx coderl serve --port 8000 --workers 4 --suite humaneval-python',
    'npx coderl serve --suite tasks.jsonl --reward reward.json    # in a folder coderl export wrote',
    'CODERL_SERVE_TOKEN=secret npx coderl serve --host 0.0.0.0 --port 8000',
    'curl -s localhost:8000/v1/score -d \'{"suite":"humaneval-x-js","completions":[{"task_id":"JavaScript/0","completion":"}"}]}\'',
  ],
  async run(options, _positionals, io) {
    return serveUntilSignal(await serveConfig(options), io);
  },
};
