// The client API (`/api`): JSON frames validated with zod (api/protocol.ts), a JWT on every request
// but `login`, RBAC checked early (and again, authoritatively, in apply), writes proposed as
// facts through the leader, reads made linearizable with ReadIndex unless the client asks for a
// possibly stale local read.
//
// A follower answers a write with `not-leader` and the leader's address; the client library
// follows it and retries with the same session, so a submit is applied once.
//
// This file is the transport: the upgrade, the accepted socket handed to the admission
// (api-admission.ts), a frame parsed into a request, and the operation it names. The operations
// are daemon/api/*.ts (see daemon/README.md), each given one ApiContext.

import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { API_FRAME_BYTES_MAX, RequestError, parseRequest, requestIdOf } from '../api/protocol.js';
import type { ApiErrorBody, Request, Response } from '../api/protocol.js';
import type { OpResult } from '../api/responses.js';
import type { TokenAuthority } from './auth.js';
import { PeekUnavailable } from './worker-endpoint.js';
import { refuse } from './http-server.js';
import {
  ApiAdmission,
  LIMIT_KEYS,
  admissionLimitsOf,
  clientAddress,
  rateLimitedError,
  type ApiAdmissionStats,
  type ApiHandler,
  type ApiSocket,
} from './api-admission.js';
import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import type { ControllerMetrics } from './metrics.js';
import type { ClusterConfig, ClusterSection } from '../model/config-types.js';
import type { ApiContext } from './api/context.js';
import { internalError, toError } from './api/errors.js';
import { Logins, authenticate, refreshToken } from './api/auth-ops.js';
import { operate } from './api/operations.js';
import type { RestRefusal } from './rest/server.js';

export { LIST_LIMIT_DEFAULT, DEFAULT_QUEUE } from './api/jobs.js';

/** WebSocket handshakes completed per turn of the event loop (see ApiServer.handleUpgrade). */
export const API_UPGRADES_PER_TURN = 32;
/** Upgrades waiting for their handshake past which one more is refused with 503. */
export const API_UPGRADES_QUEUED_MAX = 4_096;
export { countJobs } from './api/views.js';

export class ApiServer {
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: API_FRAME_BYTES_MAX,
    perMessageDeflate: false,
  });
  /** What every operation is given (daemon/api/context.ts). */
  private readonly ctx: ApiContext;
  /** `login`, with the login gate's rate limits and password checks (daemon/api/auth-ops.ts). */
  private readonly logins: Logins;

  constructor(
    node: ControllerNode,
    tokens: TokenAuthority,
    private readonly log: Logger,
    metrics: ControllerMetrics | null,
    /** The bootstrap configuration: serves `login` before the first ConfigFact is applied. */
    bootstrapConfig: ClusterConfig,
    now: () => number = Date.now,
  ) {
    this.ctx = {
      node,
      config: () => node.state.config?.cluster ?? null,
      bootstrapConfig,
      tokens,
      log,
      metrics,
      now,
      schedulerReason: (jobId) => this.schedulerReason(jobId),
      availableHosts: () => this.availableHosts(),
      lostHosts: () => this.lostHosts(),
      hostCredential: (host, epoch) => this.hostCredential(host, epoch),
      peekWorker: (host, q) => this.peekWorker(host, q),
    };
    this.logins = new Logins(this.ctx);
  }

  /** A host's credential file text at an epoch (set by the controller, which holds the worker root). */
  hostCredential: (host: string, epoch: number) => string | null = () => null;
  /** The leader's scheduler reason for a pending job (set by the controller when it runs a hub). */
  schedulerReason: (jobId: number) => string | undefined = () => undefined;
  /** Hosts whose worker is connected to this leader (set by the controller when it runs a hub). */
  availableHosts: () => ReadonlySet<string> = () => new Set();
  /** Hosts silent for the host-lost timeout (set by the controller when it runs a hub). */
  lostHosts: () => ReadonlySet<string> = () => new Set();
  /** Asks a host's worker for a piece of a running job's stdout (set by the controller when it runs a hub). */
  peekWorker: ApiContext['peekWorker'] = () =>
    Promise.reject(new PeekUnavailable('this controller runs no worker hub'));

  /** Who may connect, how many requests each connection has in flight, how fast: api-admission.ts. Made on first use. */
  private admissionOf: ApiAdmission | null = null;
  /** The configuration the admission's limits (xce.yaml `api_limits`) were taken from. */
  private limitsFrom: ClusterSection | null = null;

  /** The admission, its limits those of the current configuration (the replicated one once applied). */
  private get admission(): ApiAdmission {
    const config = (this.ctx.config() ?? this.ctx.bootstrapConfig).cluster;
    if (this.admissionOf === null) {
      this.admissionOf = new ApiAdmission(this.log, admissionLimitsOf(config.apiLimits));
      this.limitsFrom = config;
    } else if (config !== this.limitsFrom) {
      if (JSON.stringify(config.apiLimits) !== JSON.stringify(this.limitsFrom?.apiLimits))
        this.admissionOf.setLimits(admissionLimitsOf(config.apiLimits));
      this.limitsFrom = config;
    }
    return this.admissionOf;
  }

  /** Connections, paused and stalled sockets, refusals (for /healthz and the flood tests). */
  admissionStats(): ApiAdmissionStats {
    return this.admission.stats();
  }

  /**
   * Upgrades wait here for their WebSocket handshake, which is completed for at most
   * API_UPGRADES_PER_TURN of them per turn of the event loop (setImmediate between turns): a burst
   * of connects (thousands of sockets at once) does not hold the Raft tick and the peer sockets
   * behind all of its handshakes. Past API_UPGRADES_QUEUED_MAX waiting, one more is refused (503).
   */
  private readonly upgrades: Array<{ req: IncomingMessage; socket: Duplex; head: Buffer; address: string }> = [];
  private upgradesScheduled = false;

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const address = clientAddress(req.socket.remoteAddress);
    if (this.upgrades.length >= API_UPGRADES_QUEUED_MAX)
      return refuse(
        socket,
        503,
        `${API_UPGRADES_QUEUED_MAX} connections are waiting for their handshake; retry shortly`,
      );
    this.upgrades.push({ req, socket, head, address });
    if (!this.upgradesScheduled) {
      this.upgradesScheduled = true;
      setImmediate(() => this.handshakes());
    }
  }

  private handshakes(): void {
    const turn = this.upgrades.splice(0, API_UPGRADES_PER_TURN);
    for (const u of turn)
      if (!u.socket.destroyed) this.wss.handleUpgrade(u.req, u.socket, u.head, (ws) => this.accept(ws, u.address));
    if (this.upgrades.length > 0) setImmediate(() => this.handshakes());
    else this.upgradesScheduled = false;
  }

  /** What the admission asks of the API: the token check, and the operations. */
  private readonly handler: ApiHandler = {
    authenticate: async (req) => {
      try {
        return { user: await authenticate(this.ctx, req) };
      } catch (err) {
        return { error: toError(this.ctx, err, req.op, req.id) };
      }
    },
    serve: (req, address, user) => this.handleRequest(req, address, user),
  };

  /**
   * Frames are queued on their connection and started by the admission's scheduler, a few per
   * event-loop turn (api-admission.ts); the socket is paused while the connection has too many
   * requests in flight or too many answers unsent.
   */
  private accept(ws: WebSocket, address: string): void {
    ws.on('error', () => undefined);
    const socket: ApiSocket = {
      send: (text, done) => ws.send(text, done),
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      close: (code, reason) => ws.close(code, reason),
      terminate: () => ws.terminate(),
      isOpen: () => ws.readyState === ws.OPEN,
    };
    const conn = this.admission.accept(socket, address, this.handler);
    if (conn === null) return;
    ws.on('message', (data: Buffer, isBinary: boolean) =>
      conn.receive(isBinary ? new Uint8Array(data) : data.toString('utf8'), data.length),
    );
    ws.on('close', () => conn.closedBySocket());
  }

  /**
   * Handles one frame; never throws: every failure becomes an error response. `address`: the
   * client's (for the login gate's per-address limit), null when not known.
   */
  async handle(frame: string | Uint8Array, address: string | null = null): Promise<Response> {
    let req: Request;
    try {
      req = parseRequest(frame);
    } catch (err) {
      if (err instanceof RequestError)
        return { id: err.id, ok: false, error: { code: err.code, message: err.message } };
      return { id: requestIdOf(frame), ok: false, error: internalError(this.ctx, err, '(unparsed)') };
    }
    return this.handleRequest(req, address);
  }

  /**
   * Serves a request another transport built and validated (the REST API, daemon/rest/server.ts):
   * the same operations as a frame; never throws.
   */
  call(req: Request, address: string | null): Promise<Response> {
    return this.handleRequest(req, address);
  }

  /**
   * The error answer for a token that names no current user, or whose user is over
   * api_limits.requests_per_user, or null when it is good (the REST API checks it first).
   */
  async checkToken(token: string | undefined): Promise<ApiErrorBody | null> {
    let user: string;
    try {
      user = await authenticate(this.ctx, {
        id: 0,
        op: 'cluster.status',
        args: {},
        ...(token !== undefined ? { token } : {}),
      });
    } catch (err) {
      return toError(this.ctx, err, '(token)');
    }
    const wait = this.admission.admitUser(user);
    if (wait === 0) return null;
    return rateLimitedError(wait, `for user ${user}`, this.admission.limits.userRate, LIMIT_KEYS.requestsPerUser);
  }

  /**
   * A REST request on `socket` from `address`: null when it may be served, else the error to answer
   * (429). The socket counts against api_limits.connections_per_address from its first request
   * until it closes; each request against api_limits.requests_per_address. A request another
   * controller forwarded (`trusted`) was counted there.
   */
  admitRest(socket: Socket, address: string, trusted: boolean): RestRefusal | null {
    if (trusted) return null;
    const admission = this.admission;
    if (!this.restSockets.has(socket)) {
      const refused = admission.acceptRest(address);
      if (refused !== null)
        return { error: { code: 'rate-limited', message: refused, retryAfter_ms: 1_000 }, closeConnection: true };
      this.restSockets.add(socket);
      socket.once('close', () => admission.releaseRest(address));
    }
    const wait = admission.admitAddress(address);
    if (wait === 0) return null;
    const error = rateLimitedError(
      wait,
      `from ${address}`,
      admission.limits.addressRate,
      LIMIT_KEYS.requestsPerAddress,
    );
    return { error, closeConnection: false };
  }

  /** HTTP sockets counted against connections_per_address (each once). */
  private readonly restSockets = new WeakSet<Socket>();

  /** Whether `address` is one of the controllers' (a request it forwards was counted where it came in). */
  isControllerAddress(address: string): boolean {
    const config = (this.ctx.config() ?? this.ctx.bootstrapConfig).cluster;
    return config.controllers.some((c) => c.host === address);
  }

  /**
   * Serves a parsed request; never throws. `user`: who its token names when the caller verified it
   * already (the admission, once per request), else (undefined) the token is verified here.
   */
  private async handleRequest(req: Request, address: string | null, user?: string | null): Promise<Response> {
    this.ctx.metrics?.apiRequests.inc({ op: req.op });
    try {
      const result = await this.dispatch(req, address, user ?? undefined);
      return { id: req.id, ok: true, result };
    } catch (err) {
      return { id: req.id, ok: false, error: toError(this.ctx, err, req.op, req.id) };
    }
  }

  /** The operation the request names, for the user its token names (but `login` and `auth.refresh`). */
  private async dispatch(req: Request, address: string | null, user?: string): Promise<OpResult<Request['op']>> {
    const ctx = this.ctx;
    if (req.op === 'login') return this.logins.login(req.args, address);
    if (req.op === 'auth.refresh') return refreshToken(ctx, req.args);
    return operate(ctx, user ?? (await authenticate(ctx, req)), req);
  }

  close(): void {
    for (const u of this.upgrades.splice(0)) u.socket.destroy();
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
