// One WebSocket connection from the client library to one controller's /api: request/response
// correlation by id, a timeout per request, and a keepalive ping while requests wait, so that a
// controller that stops answering is abandoned quickly (the library retries elsewhere).

import type { SecureContextOptions } from 'node:tls';
import WebSocket from 'ws';
import type { Response } from '../api/protocol.js';
import { ApiError, WaitedOut } from './api-error.js';

/** A controller with a request pending must answer a ping within this (else: retry elsewhere). */
export const KEEPALIVE_MS = 750;

/**
 * What one keepalive tick does while requests wait: `heard` (a frame came in the last half
 * keepalive: the controller is alive, no ping), `abandon` (the last tick's ping got no pong and
 * nothing else came), or `ping`.
 *
 * Skipping the ping while answers flow spares the controller a pong per waiting client and
 * keepalive, a write that costs it about what an answer does (256 waiting clients: 341 pongs/s).
 * Half the interval, not all of it, bounds how long a controller that falls silent is kept: its
 * ping goes out at most 1.5 keepalives after its last frame and is given one keepalive, so it is
 * abandoned within 2.5 keepalives of that frame (2 when every tick pinged).
 */
export function keepaliveAction(
  now_ms: number,
  lastHeard_ms: number,
  awaitingPong: boolean,
): 'heard' | 'ping' | 'abandon' {
  if (now_ms - lastHeard_ms < KEEPALIVE_MS / 2) return 'heard';
  return awaitingPong ? 'abandon' : 'ping';
}

interface Pending {
  resolve(r: Response): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

/** One WebSocket connection to one controller's /api, with request/response correlation. */
export class Connection {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  readonly opened: Promise<void>;
  closed = false;

  private pingTimer: NodeJS.Timeout | null = null;
  private awaitingPong = false;
  /** When the last frame of any kind came from the controller (performance.now(), ms). */
  private lastHeard_ms = -Infinity;

  /** `ca`: the CA (PEM) to verify a wss:// controller with; absent: the system's CAs. */
  constructor(
    readonly url: string,
    ca?: SecureContextOptions['ca'],
    private readonly ws: WebSocket = new WebSocket(url, {
      maxPayload: 64 * 1024 * 1024,
      handshakeTimeout: 3_000,
      ...(ca !== undefined ? { ca } : {}),
    }),
  ) {
    // Keepalive while requests wait: a controller that stops answering pings (paused, or its
    // machine gone) is abandoned after KEEPALIVE_MS, and the request is retried elsewhere with the
    // same session instead of waiting for the whole request timeout.
    ws.on('pong', () => {
      this.awaitingPong = false;
    });
    // Any frame proves the controller's loop turns, as a pong does (keepalive below).
    ws.on('message', () => {
      this.lastHeard_ms = performance.now();
    });
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (err) => reject(new ApiError('unreachable', `cannot reach ${url}: ${err.message}`)));
    });
    this.opened.catch(() => undefined);
    ws.on('message', (data) => this.onMessage(data.toString()));
    // The controller says why when it closes a connection (not logged in in time, too many connections, ...).
    ws.on('close', (code, reason) =>
      this.failAll(
        new ApiError(
          'unreachable',
          `connection to ${url} closed${reason.length > 0 ? ` (${code}: ${reason.toString()})` : ''}`,
        ),
      ),
    );
    ws.on('error', () => undefined);
  }

  private onMessage(text: string): void {
    let r: Response;
    try {
      r = JSON.parse(text) as Response;
    } catch {
      return;
    }
    const p = this.pending.get(r.id);
    if (p === undefined) return;
    this.pending.delete(r.id);
    clearTimeout(p.timer);
    p.resolve(r);
  }

  private keepalive(): void {
    if (this.pingTimer !== null) return;
    this.pingTimer = setInterval(() => {
      if (this.pending.size === 0) {
        clearInterval(this.pingTimer!);
        this.pingTimer = null;
        this.awaitingPong = false;
        return;
      }
      const action = keepaliveAction(performance.now(), this.lastHeard_ms, this.awaitingPong);
      if (action === 'heard') {
        this.awaitingPong = false;
        return;
      }
      if (action === 'abandon') {
        this.ws.terminate();
        this.failAll(new ApiError('unreachable', `${this.url} stopped answering (no pong within ${KEEPALIVE_MS} ms)`));
        return;
      }
      this.awaitingPong = true;
      if (this.ws.readyState === WebSocket.OPEN) this.ws.ping();
    }, KEEPALIVE_MS);
    this.pingTimer.unref();
  }

  private failAll(err: Error): void {
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.closed = true;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  /** The WebSocket is open (a request sent now goes out at once). */
  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  /** Sends one request; `timeout_ms` bounds the wait for the connection to open and for the answer. */
  async send(frame: Record<string, unknown>, timeout_ms: number): Promise<Response> {
    if (this.closed) throw new ApiError('unreachable', `connection to ${this.url} closed`);
    const id = this.nextId++;
    return new Promise<Response>((resolve, reject) => {
      let opened = false;
      let settled = false;
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.pending.delete(id);
        reject(err);
      };
      const timer = setTimeout(
        () =>
          fail(
            opened
              ? new WaitedOut('timeout', `no answer from ${this.url} within ${timeout_ms} ms`)
              : new WaitedOut('unreachable', `cannot reach ${this.url} within ${timeout_ms} ms`),
          ),
        timeout_ms,
      );
      this.opened.then(() => {
        opened = true;
        if (settled) return;
        if (this.closed) return fail(new ApiError('unreachable', `connection to ${this.url} closed`));
        this.pending.set(id, {
          resolve: (r) => {
            settled = true;
            resolve(r);
          },
          reject: fail,
          timer,
        });
        this.keepalive();
        this.ws.send(JSON.stringify({ ...frame, id }), (err) => {
          if (err) fail(new ApiError('unreachable', `cannot send to ${this.url}: ${err.message}`));
        });
      }, fail);
    });
  }

  close(): void {
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    this.pingTimer = null;
    this.closed = true;
    this.ws.close();
  }
}
