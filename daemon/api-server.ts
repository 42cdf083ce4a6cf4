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
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { API_FRAME_BYTES_MAX, RequestError, parseRequest, requestIdOf } from '../api/protocol.js';
import type { ApiErrorBody, Request, Response } from '../api/protocol.js';
import type { OpResult } from '../api/responses.js';
import type { TokenAuthority } from './auth.js';
import { PeekUnavailable } from './worker-endpoint.js';
import {
  ApiAdmission,
  clientAddress,
  type ApiAdmissionStats,
  type ApiHandler,
  type ApiSocket,
} from './api-admission.js';
import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import type { ControllerMetrics } from './metrics.js';
import type { ClusterConfig } from '../model/config-types.js';
import type { ApiContext } from './api/context.js';
import { internalError, toError } from './api/errors.js';
import { Logins, authenticate } from './api/auth-ops.js';
import { operate } from './api/operations.js';

export { LIST_LIMIT_DEFAULT, DEFAULT_QUEUE } from './api/jobs.js';
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
      peekWorker: (host, q) => this.peekWorker(host, q),
    };
    this.logins = new Logins(this.ctx);
  }

  /** The leader's scheduler reason for a pending job (set by the controller when it runs a hub). */
  schedulerReason: (jobId: number) => string | undefined = () => undefined;
  /** Hosts whose worker is connected to this leader (set by the controller when it runs a hub). */
  availableHosts: () => ReadonlySet<string> = () => new Set();
  /** Asks a host's worker for a piece of a running job's stdout (set by the controller when it runs a hub). */
  peekWorker: ApiContext['peekWorker'] = () =>
    Promise.reject(new PeekUnavailable('this controller runs no worker hub'));

  /** Who may connect, how many requests each connection has in flight, how fast: api-admission.ts. Made on first use. */
  private admissionOf: ApiAdmission | null = null;

  private get admission(): ApiAdmission {
    this.admissionOf ??= new ApiAdmission(this.log);
    return this.admissionOf;
  }

  /** Connections, paused and stalled sockets, refusals (for /healthz and the flood tests). */
  admissionStats(): ApiAdmissionStats {
    return this.admission.stats();
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const address = clientAddress(req.socket.remoteAddress);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, address));
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
    serve: (req, address) => this.handleRequest(req, address),
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

  /** The error answer for a token that names no current user, or null when it is good (the REST API checks it first). */
  async checkToken(token: string | undefined): Promise<ApiErrorBody | null> {
    try {
      await authenticate(this.ctx, {
        id: 0,
        op: 'cluster.status',
        args: {},
        ...(token !== undefined ? { token } : {}),
      });
      return null;
    } catch (err) {
      return toError(this.ctx, err, '(token)');
    }
  }

  /** Serves a parsed request; never throws. */
  private async handleRequest(req: Request, address: string | null): Promise<Response> {
    this.ctx.metrics?.apiRequests.inc({ op: req.op });
    try {
      const result = await this.dispatch(req, address);
      return { id: req.id, ok: true, result };
    } catch (err) {
      return { id: req.id, ok: false, error: toError(this.ctx, err, req.op, req.id) };
    }
  }

  /** The operation the request names, for the user its token names (but `login`). */
  private async dispatch(req: Request, address: string | null): Promise<OpResult<Request['op']>> {
    const ctx = this.ctx;
    if (req.op === 'login') return this.logins.login(req.args, address);
    return operate(ctx, await authenticate(ctx, req), req);
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}
