/**
 * The deployment files agree with each other and with the server they deploy (docs/deploy.md):
 * the Dockerfile (read instruction by instruction), .dockerignore, deploy/k8s/*.yaml (parsed with
 * `yaml`) and the adapter rule and Secret command of docs/deploy.md, against `coderl serve`'s own
 * flags (serveCommand's options, parsed as the CLI parses them, into serveConfig), the bundle
 * names the sandbox pools look for, and a real server's routes and /metrics. Nothing here runs
 * Docker or a cluster: those are not on the build machines.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseCommandArgs } from './cli/command';
import { serveCommand, serveConfig } from './cli/commands/serve';
import { PROGRAM_WORKER_BUNDLE_NAME } from './sandbox/program-pool.node';
import { WORKER_BUNDLE_NAME } from './sandbox/node-worker-bundle';
import { DEFAULT_SERVE, type ServeConfig } from './serve/config';
import { ServeServer } from './serve/server';

const root = join(import.meta.dirname, '..');
const read = (p: string): string => readFileSync(join(root, p), 'utf8');

// ---------------------------------------------------------------------------------------------
// The Dockerfile, one instruction per entry (continuations joined, comments dropped).

interface Instruction {
  op: string;
  args: string;
  /** the stage it is in: 0 for the first FROM */
  stage: number;
}

function dockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n').filter((l) => !/^\s*#/.test(l));
  let stage = -1;
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    while (line.trimEnd().endsWith('\\') && i + 1 < lines.length) line = `${line.trimEnd().slice(0, -1)} ${lines[++i]!.trim()}`;
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    if (op === 'FROM') stage++;
    out.push({ op, args: m[2]!.trim(), stage });
  }
  return out;
}

const D = dockerfile(read('Dockerfile'));
const finalStage = Math.max(...D.map((x) => x.stage));
const final = (op: string): Instruction[] => D.filter((x) => x.op === op && x.stage === finalStage);
const one = (op: string): string => {
  const xs = final(op);
  expect(xs, `the final stage has one ${op}`).toHaveLength(1);
  return xs[0]!.args;
};
const exposed = (): number => Number(one('EXPOSE'));

/** .dockerignore as Docker reads it: the last pattern matching a path or one of its parents decides; `!` re-includes. */
function ignored(patterns: string[], path: string): boolean {
  const toRegex = (p: string): RegExp =>
    new RegExp(
      `^${p
        .replace(/^\//, '')
        .replace(/\/$/, '')
        .split('**')
        .map((s) =>
          s
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('.*')}$`,
    );
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let out = false;
  for (const raw of patterns) {
    const neg = raw.startsWith('!');
    const re = toRegex(neg ? raw.slice(1) : raw);
    if (prefixes.some((p) => re.test(p))) out = !neg;
  }
  return out;
}

const IGNORE = read('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

// ---------------------------------------------------------------------------------------------
// The manifests.

interface Container {
  name: string;
  args: string[];
  command?: string[];
  ports: { name: string; containerPort: number }[];
  env: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  readinessProbe: { httpGet: { path: string; port: string | number } };
  livenessProbe: { httpGet: { path: string; port: string | number } };
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources: { requests: { cpu: string; memory: string }; limits: { memory: string } };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
}

interface Deployment {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        terminationGracePeriodSeconds: number;
        securityContext: { runAsNonRoot: boolean; runAsUser: number };
        containers: Container[];
      };
    };
  };
}

function manifest<T>(file: string): T {
  const docs = parseAllDocuments(read(file));
  expect(docs.map((d) => d.errors)).toEqual(docs.map(() => []));
  expect(docs, `${file} holds one object`).toHaveLength(1);
  return docs[0]!.toJS() as T;
}

const deployment = manifest<Deployment>('deploy/k8s/deployment.yaml');
const service = manifest<{
  kind: string;
  spec: { selector: Record<string, string>; ports: { port: number; targetPort: string | number }[] };
}>('deploy/k8s/service.yaml');
const hpa = manifest<{
  apiVersion: string;
  kind: string;
  spec: {
    scaleTargetRef: { apiVersion: string; kind: string; name: string };
    minReplicas: number;
    maxReplicas: number;
    metrics: { type: string; pods?: { metric: { name: string }; target: { type: string; averageValue: string } } }[];
  };
}>('deploy/k8s/hpa.yaml');
const container = deployment.spec.template.spec.containers[0]!;
const docs = read('docs/deploy.md');

/** A `coderl serve` argv (after `serve`) as the CLI parses it, then as serveConfig reads it with `env`. */
async function configOf(argv: string[], env: NodeJS.ProcessEnv): Promise<ServeConfig> {
  const { options, positionals } = parseCommandArgs(serveCommand, argv);
  expect(positionals).toEqual([]);
  return serveConfig(options, env);
}

// ---------------------------------------------------------------------------------------------

describe('Dockerfile', () => {
  test('Node as package.json asks, multi-stage, non-root by number, SIGTERM, coderl serve on 0.0.0.0 at the exposed port', async () => {
    const args = Object.fromEntries(D.filter((x) => x.op === 'ARG').map((x) => x.args.split('=') as [string, string]));
    const froms = D.filter((x) => x.op === 'FROM').map((x) => x.args.replace(/\$\{(\w+)\}/g, (_, k: string) => args[k] ?? ''));
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    const min = Number(/>=\s*(\d+)/.exec(engines)![1]);
    for (const f of froms) expect(Number(/^node:(\d+)/.exec(f)?.[1]), f).toBeGreaterThanOrEqual(min);
    const user = one('USER');
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(one('STOPSIGNAL')).toBe('SIGTERM');
    expect(exposed()).toBe(8000);
    const entry = JSON.parse(one('ENTRYPOINT')) as string[];
    const cmd = JSON.parse(one('CMD')) as string[];
    expect(entry).toEqual(['coderl']);
    expect(final('RUN').some((x) => x.args.includes('/usr/local/bin/coderl') && x.args.includes('/app/bin/coderl.mjs'))).toBe(true);
    expect(cmd[0]).toBe('serve');
    const cfg = await configOf(cmd.slice(1), { CODERL_SERVE_TOKEN: 't' });
    expect(cfg).toMatchObject({ host: '0.0.0.0', port: exposed(), token: 't' });
    await expect(configOf(cmd.slice(1), {})).rejects.toThrow(/refusing to listen on 0\.0\.0\.0 without a token/);
  });

  test('the bundles are where the launcher and the pools look; nothing is built or fetched at run time', () => {
    const env = one('ENV');
    const bundle = /^CODERL_BUNDLE=(\S+)$/.exec(env)?.[1];
    expect(bundle, env).toBeDefined();
    const dist = bundle!.replace(/\/[^/]+$/, '');
    const copied = final('COPY').find((x) => x.args.startsWith('--from='))!;
    expect(copied.args).toMatch(new RegExp(`^--from=\\S+ (\\S+) (\\S+)$`));
    const [, from, to] = /^--from=\S+ (\S+) (\S+)$/.exec(copied.args)!;
    expect(join('/app', to!).replace(/\/$/, '')).toBe(dist);
    // the build stage writes the three bundles into the folder copied: cli.mjs (and, beside it, sandbox-worker.mjs) by bundleCli, program-worker.mjs by esbuild
    const build = D.filter((x) => x.stage < finalStage && x.op === 'RUN').map((x) => x.args);
    const outDir = from!.replace(/\/$/, '');
    expect(build.some((r) => r.includes(`bundleCli('${outDir}/cli.mjs')`))).toBe(true);
    expect(bundle!.endsWith('/cli.mjs')).toBe(true);
    expect(WORKER_BUNDLE_NAME).toBe('sandbox-worker.mjs'); // bundleCli's name for it (bin/coderl.mjs)
    expect(read('bin/coderl.mjs')).toContain(`join(dirname(outfile), '${WORKER_BUNDLE_NAME}')`);
    expect(
      build.some((r) => r.includes('src/sandbox/program.worker.ts') && r.includes(`--outfile=${outDir}/${PROGRAM_WORKER_BUNDLE_NAME}`)),
    ).toBe(true);
    // production dependencies only, no install scripts; the benchmarks beside the bundle's folder, where benchmarksDir walks up to
    expect(final('RUN').some((x) => /npm ci .*--omit=dev/.test(x.args) && x.args.includes('--ignore-scripts'))).toBe(true);
    expect(final('COPY').some((x) => x.args === 'data/benchmarks ./data/benchmarks')).toBe(true);
    expect(one('WORKDIR')).toBe('/app');
  });

  test('.dockerignore lets in every COPY source and keeps node_modules, .git and runs out', () => {
    const sources = D.filter((x) => x.op === 'COPY' && !x.args.startsWith('--from=')).flatMap((x) => x.args.split(/\s+/).slice(0, -1));
    expect(sources).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'bin', 'src', 'data/benchmarks']));
    for (const s of sources) {
      expect(existsSync(join(root, s)), s).toBe(true);
      expect(ignored(IGNORE, s), `${s} is left out of the build context`).toBe(false);
      expect(ignored(IGNORE, `${s}/some/file.ts`), `${s}'s files`).toBe(false);
    }
    for (const p of [
      'node_modules',
      'node_modules/pyodide/pyodide.asm.wasm',
      '.git/HEAD',
      'runs/x/policy.ckpt',
      'tmp',
      'data/hf-fixtures/gpt2',
    ])
      expect(ignored(IGNORE, p), p).toBe(true);
  });
});

describe('deploy/k8s', () => {
  let server: ServeServer;
  let metrics = '';
  const token = 'deploy-test-token';

  beforeAll(async () => {
    server = await ServeServer.start({ ...DEFAULT_SERVE, port: 0, workers: 1, programWorkers: 0, token });
    await server.ready;
    metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
  }, 60_000);
  afterAll(async () => server?.close());

  test("the container's args are coderl serve flags: a valid start only with the token the Secret gives, at the exposed port", async () => {
    expect(container.command).toBeUndefined(); // the image's ENTRYPOINT (coderl) runs them
    expect(container.args[0]).toBe('serve');
    const flags = container.args.filter((a) => a.startsWith('--')).map((a) => a.slice(2));
    for (const f of flags) expect(Object.keys(serveCommand.options), `--${f}`).toContain(f);
    const secret = container.env.find((e) => e.name === 'CODERL_SERVE_TOKEN')?.valueFrom?.secretKeyRef;
    expect(secret).toBeDefined();
    const cfg = await configOf(container.args.slice(1), { CODERL_SERVE_TOKEN: 's' });
    expect(cfg).toMatchObject({ host: '0.0.0.0', port: exposed(), token: 's' });
    await expect(configOf(container.args.slice(1), {})).rejects.toThrow(/without a token/);
    // the Secret the docs (and the manifest's header) create has that name and key
    const create = `kubectl create secret generic ${secret!.name} --from-literal=${secret!.key}=`;
    expect(docs).toContain(create);
    expect(read('deploy/k8s/deployment.yaml')).toContain(create);
    // one core per sandbox worker and one for the HTTP thread
    expect(cfg.workers + cfg.programWorkers).toBeLessThan(Number(container.resources.requests.cpu));
    expect(container.ports).toEqual([{ name: 'http', containerPort: exposed() }]);
  });

  test('the grace period outlasts preStop, the longest request and the drain; non-root as the image, read-only root', async () => {
    const pod = deployment.spec.template.spec;
    const cfg = await configOf(container.args.slice(1), { CODERL_SERVE_TOKEN: 's' });
    const preStop = Number(container.lifecycle?.preStop?.exec?.command.at(-1) ?? 0);
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStop * 1000 + Math.max(cfg.requestTimeoutMs, cfg.drainTimeoutMs));
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBe(Number(one('USER').split(':')[0]));
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
  });

  test('the probes are routes of the real server, answered without the token; the Service reaches the named port', async () => {
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    for (const path of ['/readyz', '/healthz']) expect((await fetch(`${server.url}${path}`)).status, path).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401); // the scrape needs the token: docs/deploy.md's PodMonitor sends it
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.ports).toEqual([{ name: 'http', port: exposed(), targetPort: 'http' }]);
  });

  test("the HPA scales the Deployment on a Pods metric /metrics emits, which the docs' adapter rule serves under that name", () => {
    expect(hpa).toMatchObject({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' });
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: deployment.apiVersion, kind: deployment.kind, name: deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    const [m] = hpa.spec.metrics;
    expect(m!.type).toBe('Pods');
    const name = m!.pods!.metric.name;
    expect(m!.pods!.target.type).toBe('AverageValue');
    expect(metrics).toMatch(new RegExp(`^# TYPE ${name} gauge$`, 'm'));
    expect(metrics).toMatch(new RegExp(`^${name}\\{pool="score"\\} 0$`, 'm'));
    // the adapter rule: the YAML block of docs/deploy.md with a seriesQuery
    const block = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)].map((b) => b[1]!).find((b) => b.includes('seriesQuery'));
    const rule = (parse(block!) as { rules: { seriesQuery: string; name: { matches: string; as: string }; metricsQuery: string }[] })
      .rules[0]!;
    expect(rule.seriesQuery).toMatch(new RegExp(`^${name}\\{.*pool="score".*\\}$`));
    expect(new RegExp(rule.name.matches).test(name)).toBe(true);
    expect(rule.name.as).toBe(name);
    expect(rule.metricsQuery).toContain('<<.LabelMatchers>>');
    expect(rule.metricsQuery).toContain('pool="score"');
    // and the PodMonitor scrapes the named port with the Deployment's Secret
    const monitor = [...docs.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((b) => parse(b[1]!) as { kind?: string })
      .find((d) => d.kind === 'PodMonitor') as
      | {
          spec: {
            selector: { matchLabels: Record<string, string> };
            podMetricsEndpoints: { port: string; path: string; authorization: { credentials: { name: string; key: string } } }[];
          };
        }
      | undefined;
    expect(monitor!.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    const ep = monitor!.spec.podMetricsEndpoints[0]!;
    expect(ep).toMatchObject({ port: 'http', path: '/metrics' });
    expect(ep.authorization.credentials).toEqual(container.env.find((e) => e.name === 'CODERL_SERVE_TOKEN')!.valueFrom!.secretKeyRef);
  });
});
