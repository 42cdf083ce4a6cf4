// The REST API (`/v1/...`) on the controller's port, and the web status page at `/`.
//
// One set of handlers behind both transports: a route (api/rest-routes.ts) names a client API
// operation; its arguments are read from the path, the query and the JSON body and validated with
// that operation's zod schema; the request then goes through ApiServer.call, the very path a
// WebSocket frame takes (token check, RBAC, sessions, the operations of daemon/api/*). Only the
// envelope differs: a bearer token in `Authorization`, the session in `Idempotency-Key`, errors as
// problem details (daemon/rest/problem.ts).
//
// Writes are exactly once. `Idempotency-Key: <client>:<seq>` is the WebSocket API's session (a
// client id of 8 to 64 characters, a sequence number): a POST retried with the same key gets the
// first answer and applies nothing again, across a failover too (the session table is replicated).
// Without the header the controller makes a key and says so in the answer (`Idempotency-Key`, and
// `Idempotency-Key-Source: server`): the client can retry with it.
//
// A follower PROXIES a write to the leader rather than answering 307. Why: a redirect drops the
// bearer token (fetch and curl strip `Authorization` when a redirect changes host or port, and the
// leader is another port or host), a browser page served by one controller cannot follow a
// redirect to another origin without CORS, and the leader moves: a client holding a stale address
// would chase redirects. The follower instead forwards the request once (daemon/rest/proxy.ts),
// with the key (made before forwarding, so the leader applies it once), and answers with the
// leader's answer; when the leader cannot be reached it answers 503 and the client retries with
// the same key. Reads are served by the node asked (linearizable through ReadIndex, or `?stale=true`).

import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { API_FRAME_BYTES_MAX, Session, type ApiErrorBody, type Request, type Response } from '../../api/protocol.js';
import { IDEMPOTENCY_HEADER, OPENAPI_PATH, isWrite, matchRoute, type RestRoute } from '../../api/rest-routes.js';
import { routeArgs } from '../../api/rest-args.js';
import { clientAddress } from '../api-admission.js';
import type { Logger } from '../log.js';
import { RestMetrics } from './metrics.js';
import { problem, problemOfError, sendProblem, type Problem } from './problem.js';
import { FORWARDED_HEADER, LeaderUnreachableError, forward } from './proxy.js';
import { StaticPage } from './static.js';
import type { Registry } from 'prom-client';

/** A body larger than this is refused with 413 (the WebSocket API's frame limit). */
export const REST_BODY_BYTES_MAX = API_FRAME_BYTES_MAX;
/** REST requests being served at once on one controller; past it, 503 with Retry-After. */
export const REST_IN_FLIGHT_MAX = 1024;

/** What the REST server needs of the API: the operations (ApiServer.call). */
export interface ApiCaller {
  call(req: Request, address: string | null): Promise<Response>;
  /** The error answer for a token that names no current user (null when it is good): checked before the body. */
  checkToken(token: string | undefined): Promise<ApiErrorBody | null>;
}

/** What it needs of the node: its id (answers say which node served them), and who leads where. */
export interface LeaderView {
  readonly id: number;
  isLeader(): boolean;
  leaderId(): number;
  addressOf(id: number): string | null;
}

export interface RestServerOptions {
  readonly api: ApiCaller;
  readonly node: LeaderView;
  readonly log: Logger;
  /** The controller's metrics registry; null: no metrics. */
  readonly registry: Registry | null;
  /** The OpenAPI document served at GET /v1/openapi.json (api/openapi.ts). */
  readonly openapi: unknown;
  readonly page?: StaticPage;
}

/** The session of a write: from the header, or made here. */
type KeyOf = { session: Session; key: string; source: 'client' | 'server' } | { problem: Problem };

class BodyError extends Error {
  constructor(readonly p: Problem) {
    super(p.detail);
  }
}

export class RestServer {
  private readonly metrics: RestMetrics | null;
  private readonly page: StaticPage;
  private readonly openapiText: string;
  private inFlight = 0;
  private nextId = 1;

  constructor(private readonly opts: RestServerOptions) {
    this.metrics = opts.registry === null ? null : new RestMetrics(opts.registry);
    this.page = opts.page ?? new StaticPage();
    this.openapiText = JSON.stringify(opts.openapi);
  }

  /** Whether this server answers `path` (the controller's port hands it every other path). */
  serves(path: string): boolean {
    return path.startsWith('/v1/') || path === '/v1' || this.page.has(path);
  }

  /** Serves one HTTP request; never throws. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const t0 = performance.now();
    const url = new URL(req.url ?? '/', 'http://controller');
    const method = req.method ?? 'GET';
    let label = 'unmatched';
    try {
      label = await this.route(req, res, url, method);
    } catch (err) {
      const p =
        err instanceof BodyError
          ? err.p
          : problem('internal', 'internal error; the controller log has the details', url.pathname);
      if (!(err instanceof BodyError))
        this.opts.log.error('REST request failed', { path: url.pathname, error: (err as Error).message });
      if (!res.headersSent) sendProblem(res, p);
      else res.end();
    }
    const seconds = (performance.now() - t0) / 1000;
    this.metrics?.observe(label, method, res.statusCode, seconds);
    const fields = { method, route: label, status: res.statusCode, ms: Math.round(seconds * 1000) };
    if (res.statusCode >= 500) this.opts.log.warn('REST request', fields);
    else this.opts.log.debug('REST request', fields);
  }

  /** Answers the request; returns the metrics label of its route. */
  private async route(req: IncomingMessage, res: ServerResponse, url: URL, method: string): Promise<string> {
    const path = url.pathname;
    if (method === 'GET' && this.page.serve(path, res)) return 'page';
    if (method === 'GET' && path === OPENAPI_PATH) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache' }).end(this.openapiText);
      return OPENAPI_PATH;
    }
    const m = matchRoute(method, path);
    if (m.kind === 'none') {
      sendProblem(
        res,
        problem('no-route', `no route ${method} ${path}; the routes are listed at ${OPENAPI_PATH}`, path),
      );
      return 'unmatched';
    }
    if (m.kind === 'method') {
      const allowed = m.allowed.join(', ');
      sendProblem(res, problem('method-not-allowed', `${path} takes ${allowed}, not ${method}`, path), {
        allow: allowed,
      });
      return 'unmatched';
    }
    if (this.inFlight >= REST_IN_FLIGHT_MAX) {
      sendProblem(res, problem('busy', `${REST_IN_FLIGHT_MAX} requests are being served; retry shortly`, path));
      return m.route.path;
    }
    this.inFlight++;
    try {
      await this.serveRoute(req, res, url, m.route, m.params);
    } finally {
      this.inFlight--;
    }
    return m.route.path;
  }

  private async serveRoute(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    route: RestRoute,
    params: Readonly<Record<string, string>>,
  ): Promise<void> {
    const path = url.pathname;
    const raw = await readBody(req, path);
    const auth = req.headers.authorization;
    const token = auth === undefined ? undefined : /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
    if (auth !== undefined && token === undefined)
      return sendProblem(res, problem('unauthenticated', 'the Authorization header must be `Bearer <token>`', path));
    // Who asks comes before what they ask: a request without a good token learns nothing of its body's faults.
    const refused = route.op === 'login' ? null : await this.opts.api.checkToken(token);
    if (refused !== null) return sendProblem(res, problemOfError(refused, path));
    const body = route.body === undefined || raw === null ? undefined : parseJson(req, raw, path);
    const key = isWrite(route) ? sessionOf(req, path) : null;
    if (key !== null && 'problem' in key) return sendProblem(res, key.problem);
    const keyHeaders: Record<string, string> =
      key === null ? {} : { 'idempotency-key': key.key, 'idempotency-key-source': key.source };
    const parsed = routeArgs(route, params, url.searchParams, body);
    if (!parsed.ok) {
      const detail = parsed.invalid.map((i) => `${i.name} (${i.in}): ${i.reason}`).join('; ');
      return sendProblem(res, problem('bad-request', detail, path, { invalidParams: parsed.invalid }), keyHeaders);
    }
    const forwarded = req.headers[FORWARDED_HEADER] !== undefined;
    const leader = route.leaderRead && !parsed.stale && !forwarded ? this.leaderAddress() : null;
    // Unreachable leader: this node's own view is better than none (it says which node answered).
    if (leader !== null && (await this.proxy(req, res, path + url.search, leader, raw, keyHeaders))) return;
    // The operation's arguments passed its own zod schema (routeArgs), as a frame's do in parseRequest.
    const request = {
      id: this.nextId++,
      op: route.op,
      args: parsed.args,
      ...(token !== undefined ? { token } : {}),
      ...(key !== null ? { session: key.session } : {}),
      ...(parsed.stale ? { stale: true } : {}),
    } as Request;
    const answer = await this.opts.api.call(request, clientAddress(req.socket.remoteAddress));
    if (answer.ok) return sendResult(res, route, answer.result, keyHeaders, this.opts.node.id);
    const e = answer.error;
    if (e.code === 'not-leader' && e.leader !== undefined) {
      if (!forwarded)
        if (!(await this.proxy(req, res, path + url.search, e.leader.address, raw, keyHeaders))) {
          const detail = `node ${this.opts.node.id} is not the leader and could not reach it at ${e.leader.address}; retry with the same Idempotency-Key`;
          sendProblem(res, problem('leader-unreachable', detail, path), keyHeaders);
        }
      return;
      return sendProblem(
        res,
        problem('no-leader', `forwarded here by node ${String(req.headers[FORWARDED_HEADER])}, but ${e.message}`, path),
        keyHeaders,
      );
    }
    sendProblem(res, problemOfError(e, path), keyHeaders);
  }

  /** The leader's address when this node is a follower that knows it; null otherwise. */
  private leaderAddress(): string | null {
    const node = this.opts.node;
    if (node.isLeader()) return null;
    const lead = node.leaderId();
    return lead ? node.addressOf(lead) : null;
  }

  private async proxy(
    req: IncomingMessage,
    res: ServerResponse,
    pathAndQuery: string,
    leader: string,
    body: Buffer | null,
    keyHeaders: Record<string, string>,
  ): Promise<boolean> {
    try {
      const extra = { [FORWARDED_HEADER]: String(this.opts.node.id), ...pick(keyHeaders, 'idempotency-key') };
      const method = req.method ?? 'POST';
      const a = await forward(leader, method, pathAndQuery, req.headers, extra, body, REST_BODY_BYTES_MAX);
      res.writeHead(a.status, { ...a.headers, ...keyHeaders, 'content-length': String(a.body.length) }).end(a.body);
      return true;
    } catch (err) {
      if (!(err instanceof LeaderUnreachableError)) throw err;
      this.opts.log.info('REST forward to the leader failed', { leader, path: pathAndQuery, error: err.message });
      return false;
    }
  }
}

function pick(h: Record<string, string>, name: string): Record<string, string> {
  return h[name] === undefined ? {} : { [name]: h[name] };
}

/** The body, or null when there is none; 413 past REST_BODY_BYTES_MAX (declared or sent). */
async function readBody(req: IncomingMessage, path: string): Promise<Buffer | null> {
  const tooLarge = (bytes: string): BodyError =>
    new BodyError(
      problem('body-too-large', `the body of ${bytes} bytes exceeds the limit of ${REST_BODY_BYTES_MAX} bytes`, path),
    );
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > REST_BODY_BYTES_MAX) {
    req.resume(); // drained, not read: the answer goes out at once
    throw tooLarge(String(declared));
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    bytes += c.length;
    if (bytes > REST_BODY_BYTES_MAX) {
      req.resume();
      throw tooLarge(`more than ${REST_BODY_BYTES_MAX}`);
    }
    chunks.push(c);
  }
  return bytes === 0 ? null : Buffer.concat(chunks);
}

function parseJson(req: IncomingMessage, raw: Buffer, path: string): unknown {
  const type = req.headers['content-type'];
  if (type !== undefined && !/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type))
    throw new BodyError(problem('unsupported-media-type', `the body is ${type}; send application/json`, path));
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (err) {
    throw new BodyError(problem('bad-json', `the body is not JSON: ${(err as Error).message}`, path));
  }
}

/** `Idempotency-Key: <client>:<seq>`, or one made here (a fresh client id, sequence 1). */
function sessionOf(req: IncomingMessage, path: string): KeyOf {
  const header = req.headers[IDEMPOTENCY_HEADER];
  if (header === undefined) {
    const client = `rest-${randomBytes(12).toString('hex')}`;
    return { session: { client, seq: 1 }, key: `${client}:1`, source: 'server' };
  }
  const value = Array.isArray(header) ? header.join(',') : header;
  const i = value.lastIndexOf(':');
  const s = Session.safeParse(i < 0 ? null : { client: value.slice(0, i), seq: Number(value.slice(i + 1)) });
  if (!s.success) {
    const detail = `Idempotency-Key "${value.slice(0, 80)}" must be <client>:<seq>: a client id of 8 to 64 characters and a positive integer`;
    return {
      problem: problem('bad-idempotency-key', detail, path, {
        invalidParams: [{ name: 'Idempotency-Key', in: 'header', reason: detail }],
      }),
    };
  }
  return { session: s.data, key: value, source: 'client' };
}

function sendResult(
  res: ServerResponse,
  route: RestRoute,
  result: unknown,
  keyHeaders: Record<string, string>,
  node: number,
): void {
  const body = JSON.stringify(result);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'xce-served-by': String(node),
    ...keyHeaders,
  };
  let status = 200;
  const jobId = (result as { jobId?: unknown; dryRun?: unknown }).jobId;
  if (route.op === 'jobs.submit' && typeof jobId === 'number') {
    status = 201;
    headers['location'] = `/v1/jobs/${jobId}`;
  }
  res.writeHead(status, headers).end(body);
}
