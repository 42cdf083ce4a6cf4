// The controller's one port: plain HTTP for `/metrics` and `/healthz`, and WebSocket upgrades
// routed by path (`/raft` peers, `/api` clients, `/worker` workers). Each path's owner decides
// whether to accept an upgrade; anything else is answered with a clear HTTP error.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { HandshakeCounts, TICKET_SERVER_OPTIONS, TicketKeyRotation } from './tls-resumption.js';

/** A connection idle this long before it has sent a whole request (or between keep-alive requests)
 * is closed: a socket from nobody is not kept for minutes (Node's default keeps a silent one for
 * good). Upgraded sockets (/api, /raft, /worker) are not affected: `ws` clears the timeout, and
 * each endpoint has its own rules (api-admission.ts for /api). */
export const HTTP_IDLE_TIMEOUT_MS = 10_000;

/** A TLS port's certificate and key (PEM), and the root of the session ticket keys the controllers share. */
export interface PortTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ticketRoot?: Uint8Array;
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export class ControllerPort {
  readonly server: Server;
  private readonly upgrades = new Map<string, UpgradeHandler>();
  private readonly routes = new Map<string, HttpHandler>();
  /** Every other request (any method) on a path `serves` accepts: the REST API and the status page. */
  private fallback: { serves: (path: string) => boolean; handler: HttpHandler } | null = null;
  /** TLS handshakes done on this port, full and resumed (tls-resumption.ts). */
  readonly handshakes = new HandshakeCounts();
  private readonly tickets: TicketKeyRotation | null = null;

  /**
   * `tls`: serve https:// and wss:// with this certificate and key (PEM), and with `ticketRoot` the
   * session tickets every controller accepts (tls-resumption.ts); none: plain http:// and ws://.
   */
  constructor(tls?: PortTls, now: () => number = Date.now) {
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.onRequest(req, res);
    if (tls !== undefined) {
      const tickets = tls.ticketRoot !== undefined ? TICKET_SERVER_OPTIONS : {};
      const server = createTlsServer({ cert: tls.cert, key: tls.key, ...tickets }, handler);
      server.on('secureConnection', (socket: TLSSocket) => this.handshakes.count(socket));
      if (tls.ticketRoot !== undefined) this.tickets = new TicketKeyRotation(server, tls.ticketRoot, now);
      this.server = server;
    } else this.server = createServer(handler);
    this.server.timeout = HTTP_IDLE_TIMEOUT_MS;
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => undefined);
      const handler = this.upgrades.get(pathOf(req));
      if (handler === undefined)
        return refuse(socket, 404, `no WebSocket endpoint at ${pathOf(req)}; use /api, /worker or /raft`);
      handler(req, socket, head);
    });
    this.server.on('clientError', (_err, socket) => socket.destroy());
    // A failed TLS handshake (a client that does not trust us, or plain text on a TLS port).
    this.server.on('tlsClientError', (_err, socket) => socket.destroy());
  }

  onUpgrade(path: string, handler: UpgradeHandler): void {
    this.upgrades.set(path, handler);
  }

  onGet(path: string, handler: HttpHandler): void {
    this.routes.set(path, handler);
  }

  /** Hands the paths `serves` accepts, any method, to `handler` (after the exact GET routes). */
  onOther(serves: (path: string) => boolean, handler: HttpHandler): void {
    this.fallback = { serves, handler };
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let handler = req.method === 'GET' ? this.routes.get(pathOf(req)) : undefined;
    if (handler === undefined && this.fallback?.serves(pathOf(req))) handler = this.fallback.handler;
    if (handler === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${req.method} ${pathOf(req)}\n`);
      return;
    }
    try {
      await handler(req, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`internal error: ${(err as Error).message}\n`);
    }
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        this.tickets?.start();
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  close(): Promise<void> {
    this.tickets?.stop();
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}

export function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

const STATUS_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  404: 'Not Found',
  421: 'Misdirected Request',
  503: 'Service Unavailable',
};

/** Answers an upgrade request with an HTTP error and closes the socket. */
export function refuse(socket: Duplex, status: number, message: string): void {
  answerUpgrade(socket, status, `${message}\n`, 'text/plain');
}

/**
 * Answers an upgrade request with `status` and `body` instead of upgrading, and closes the socket;
 * `headers` are added as they are (`name: value`).
 */
export function answerUpgrade(
  socket: Duplex,
  status: number,
  body: string,
  contentType: string,
  headers: readonly string[] = [],
): void {
  const head = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Bad Request'}`,
    `content-type: ${contentType}`,
    ...headers,
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
