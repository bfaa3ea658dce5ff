/**
 * The HTTP layer over node:http: routing, bearer auth, the body size limit, the per-request
 * deadline, JSON answers and errors, metrics per request, and draining. Handlers see an
 * ApiRequest (the body already read) and return a Reply or throw: an HttpError becomes its
 * status with {error, field}; a full queue (QueueFull) becomes the route's busy status (429 by
 * default) with Retry-After; anything else is 500. Every answer is JSON but /metrics.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './config';
import type { ServeMetrics } from './metrics';
import { QueueFull } from './scheduler';
import { errorText } from '../util/errors';

export interface ApiRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Uint8Array;
  /** aborts when the request's deadline passes or the client goes away */
  signal: AbortSignal;
  /** brings the deadline forward to `ms` from now (never later than it was) */
  narrowDeadline(ms: number): void;
}

export interface Reply {
  status?: number;
  json?: unknown;
  /** a text answer instead of JSON */
  text?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  /** false: answered without the token (the probes) */
  auth: boolean;
  /** the status of a full queue (default 429) */
  busyStatus?: number;
  handle(req: ApiRequest): Promise<Reply>;
}

export interface HttpOptions {
  token: string | undefined;
  maxBodyBytes: number;
  requestTimeoutMs: number;
  metrics: ServeMetrics;
  /** true once shutdown began: everything but the probes is 503 */
  draining(): boolean;
}

/** Bodies this much past the limit are not read to the end: the connection is closed. */
const DISCARD_CAP = 64 << 20;

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** The token a request carries: `Authorization: Bearer T`, Basic auth's password (a URL's user:T@), or `?token=T`. */
export function presentedToken(headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  const auth = headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(auth);
  if (bearer) return bearer[1]!.trim();
  const basic = /^Basic\s+(.+)$/i.exec(auth);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return query.get('token') ?? undefined;
}

export function authorized(token: string | undefined, headers: IncomingHttpHeaders, query: URLSearchParams): boolean {
  if (token === undefined) return true;
  const given = presentedToken(headers, query);
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

/** The body, or 'too-large' once it passes `limit` (the rest is read and dropped, up to DISCARD_CAP). */
async function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit + DISCARD_CAP) {
      req.destroy();
      break;
    }
    if (size <= limit) chunks.push(chunk);
  }
  return size > limit ? 'too-large' : new Uint8Array(Buffer.concat(chunks));
}

function send(res: ServerResponse, reply: Reply, close: boolean): number {
  const status = reply.status ?? 200;
  const body = reply.text ?? `${JSON.stringify(reply.json ?? null)}\n`;
  res.writeHead(status, {
    'content-type': reply.contentType ?? 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...(close ? { connection: 'close' } : {}),
    ...reply.headers,
  });
  res.end(body);
  return status;
}

function errorReply(e: unknown, route: Route | undefined): Reply {
  if (e instanceof HttpError) return { status: e.status, json: { error: e.message, field: e.field }, headers: e.headers };
  if (e instanceof QueueFull)
    return {
      status: route?.busyStatus ?? 429,
      json: { error: e.message, field: null, retry_after_s: e.retryAfterS },
      headers: { 'retry-after': String(e.retryAfterS) },
    };
  return { status: 500, json: { error: `internal error: ${errorText(e)}`, field: null } };
}

/** Runs `handle` until the request's deadline (504 past it). */
async function withDeadline(
  route: Route,
  req: Omit<ApiRequest, 'signal' | 'narrowDeadline'>,
  opts: HttpOptions,
  gone: AbortSignal,
): Promise<Reply> {
  const ctl = new AbortController();
  const abort = (): void => ctl.abort();
  gone.addEventListener('abort', abort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  let deadline = Date.now() + opts.requestTimeoutMs;
  let expire!: () => void;
  const timedOut = new Promise<Reply>((resolve) => {
    expire = () => {
      ctl.abort();
      resolve({ status: 504, json: { error: `the request took longer than ${deadline - started} ms and was stopped`, field: null } });
    };
  });
  const started = Date.now();
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(expire, Math.max(0, deadline - Date.now()));
  };
  arm();
  const full: ApiRequest = {
    ...req,
    signal: ctl.signal,
    narrowDeadline: (ms) => {
      if (Date.now() + ms < deadline) {
        deadline = Date.now() + ms;
        arm();
      }
    },
  };
  try {
    return await Promise.race([route.handle(full).catch((e: unknown) => errorReply(e, route)), timedOut]);
  } finally {
    clearTimeout(timer);
    gone.removeEventListener('abort', abort);
    ctl.abort(); // the request is answered: whatever of it still waits in a queue is dropped
  }
}

/** The request listener for node:http's createServer; `inflight` counts requests not yet answered. */
export function createListener(routes: readonly Route[], opts: HttpOptions, inflight: { count: number; onIdle?: () => void }) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const t0 = performance.now();
    const url = new URL(req.url ?? '/', 'http://serve');
    const route = routes.find((r) => r.path === url.pathname && r.method === req.method);
    const endpoint = routes.some((r) => r.path === url.pathname) ? url.pathname : 'other';
    inflight.count++;
    const allowed = routes.filter((r) => r.path === url.pathname).map((r) => r.method);
    void answer(req, res, url, route, allowed, opts).then(
      (status) => done(status),
      (e: unknown) => done(res.headersSent ? 500 : send(res, errorReply(e, route), true)),
    );
    function done(status: number): void {
      opts.metrics.answered(endpoint, status, (performance.now() - t0) / 1000);
      if (--inflight.count === 0) inflight.onIdle?.();
    }
  };
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  route: Route | undefined,
  allowed: readonly string[],
  opts: HttpOptions,
): Promise<number> {
  const draining = opts.draining();
  if (!route) {
    req.resume();
    if (allowed.length)
      return send(
        res,
        {
          status: 405,
          json: { error: `${req.method} is not allowed on ${url.pathname} (use ${allowed.join(', ')})`, field: null },
          headers: { allow: allowed.join(', ') },
        },
        draining,
      );
    return send(res, { status: 404, json: { error: `no endpoint ${url.pathname}`, field: null } }, draining);
  }
  if (draining && route.auth) {
    req.resume();
    return send(
      res,
      { status: 503, json: { error: 'the server is shutting down; send this request to another replica', field: null } },
      true,
    );
  }
  if (route.auth && !authorized(opts.token, req.headers, url.searchParams)) {
    req.resume();
    return send(
      res,
      {
        status: 401,
        json: { error: 'a valid bearer token is required (Authorization: Bearer T)', field: 'authorization' },
        headers: { 'www-authenticate': 'Bearer' },
      },
      draining,
    );
  }
  const body = await readBody(req, opts.maxBodyBytes);
  if (body === 'too-large')
    return send(res, { status: 413, json: { error: `body: larger than the limit of ${opts.maxBodyBytes} bytes`, field: 'body' } }, true);
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableEnded) gone.abort();
  });
  const reply = await withDeadline(
    route,
    { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body },
    opts,
    gone.signal,
  );
  return send(res, reply, opts.draining());
}
