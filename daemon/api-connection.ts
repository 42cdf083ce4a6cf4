// One client API connection and its flow control: its queue of frames, its requests in flight
// (the socket is paused past the bound), its unsent answers (past the bound none of its requests
// starts, and a connection that stays there is closed), the authentication deadline.

import { RequestError, TOKENLESS_OPS, type ApiErrorBody, type Request, type Response } from '../api/protocol.js';
import {
  CLOSE_POLICY,
  CLOSE_TRY_AGAIN,
  LIMIT_KEYS,
  type AdmissionClock,
  type AdmissionLimits,
} from './api-admission-limits.js';
import { FrameThrottle, type FrameThrottleHost } from './api-frame-throttle.js';
import { rateLimitedAnswer } from './api-rate-limits.js';
import { RequestQueue } from './api-request-queue.js';
import type { LoginResult } from '../api/responses.js';
import { submitTrace, traceNow_us } from './submit-trace.js';

/** What the admission needs of a socket (api-server.ts adapts a `ws` WebSocket; tests a fake). */
export interface ApiSocket {
  /** Sends one text frame; `done` once it is handed to the kernel (or the socket failed). */
  send(text: string, done: (err?: Error) => void): void;
  /** Stops reading the socket (TCP pushes back on the client). */
  pause(): void;
  resume(): void;
  close(code: number, reason: string): void;
  terminate(): void;
  isOpen(): boolean;
}

/** What the admission needs of the API: the token check and the operations. Neither throws. */
export interface ApiHandler {
  /** The user the request's token names, or the error to answer (`unauthenticated`). */
  authenticate(req: Request): Promise<{ user: string } | { error: ApiErrorBody }>;
  /**
   * Serves an admitted request; `user` is who its token named (authenticate's answer, so the
   * handler need not verify the token again), null for a TOKENLESS_OPS request.
   */
  serve(req: Request, address: string, user: string | null): Promise<Response>;
}

export type CloseEvent =
  | 'auth-deadline'
  | 'unauthenticated-requests'
  | 'backlog-stuck'
  | 'backlog-hard'
  | 'queue-overflow'
  | 'sessions-per-user';

/** What a connection needs of its admission (api-admission.ts): the bounds, the clock, the shared counts and the scheduler. */
export interface ConnectionHost extends FrameThrottleHost {
  readonly limits: AdmissionLimits;
  readonly clock: AdmissionClock;
  /** Unsent answer bytes over all connections. */
  readonly backlogBytes: number;
  /** 0 when a request from `address` may go ahead (it is counted), else the ms until one may. */
  admitAddress(address: string): number;
  /** 0 when a request of `user` may go ahead (it is counted), else the ms until one may. */
  admitUser(user: string): number;
  /** The connection has requests that may be startable: it takes its turn. */
  wake(c: ApiConnection): void;
  heavySlotFree(): boolean;
  heavyStarted(): void;
  heavyDone(): void;
  /** Counts `bytes` more (or fewer, negative) unsent answer bytes. */
  unsent(bytes: number): void;
  count(what: 'pauses' | 'stalls'): void;
  closedFor(event: CloseEvent): void;
  /** The connection's socket closed: its slot and its unsent bytes are given back. */
  release(c: ApiConnection, unsent: number): void;
  /** The connection authenticated as `user`: false when the user holds api_limits.sessions_per_user already. */
  claimSession(c: ApiConnection, user: string): boolean;
}

/** Closes with a close frame saying why; the socket is destroyed if the handshake does not finish within `grace_ms`. */
export function closeSoftly(
  socket: ApiSocket,
  code: number,
  reason: string,
  clock: AdmissionClock,
  grace_ms: number,
): void {
  // A close reason is at most 123 bytes on the wire; ours are ASCII and short, this is a guard.
  socket.close(code, reason.length > 120 ? `${reason.slice(0, 117)}...` : reason);
  clock.after(grace_ms, () => socket.terminate());
}

/** One client connection: its queue of frames, its requests in flight, its unsent answers. */
export class ApiConnection {
  authenticated = false;
  /** The user the connection authenticated as (counted against api_limits.sessions_per_user). */
  user: string | null = null;
  /** The socket is not being read. */
  paused = false;
  /** Unsent answers exceed the bound: nothing is started. */
  stalled = false;
  private closing = false;
  private closed = false;
  private readonly queue = new RequestQueue();
  private inflight = 0;
  private unauthenticatedStarted = 0;
  private backlog = 0;
  private authTimer: { cancel(): void } | null;
  private stuckTimer: { cancel(): void } | null = null;
  /** Frames over api_limits.frames_per_connection: the socket is not read for a while. */
  private readonly frames: FrameThrottle;
  /** Set when a session was refused: the connection is closed once that answer is sent. */
  private closeAfterReply: string | null = null;

  constructor(
    private readonly admission: ConnectionHost,
    private readonly socket: ApiSocket,
    readonly address: string,
    private readonly handler: ApiHandler,
  ) {
    const L = admission.limits;
    this.frames = new FrameThrottle(admission, address, () => this.flow());
    this.authTimer = admission.clock.after(L.authDeadline_ms, () => {
      this.authTimer = null;
      if (!this.authenticated)
        this.close(
          'auth-deadline',
          `not logged in within ${L.authDeadline_ms / 1000} s (${LIMIT_KEYS.authDeadline}): log in (or send a token) first`,
        );
    });
  }

  private get L(): AdmissionLimits {
    return this.admission.limits;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Requests received and not yet answered. */
  get outstanding(): number {
    return this.queued + this.inflight;
  }

  /** Unsent answer bytes. */
  get unsent(): number {
    return this.backlog;
  }

  hasWork(): boolean {
    return !this.closing && this.queued > 0;
  }

  /** A frame from the socket: queued for the scheduler. */
  receive(frame: string | Uint8Array, bytes: number): void {
    if (this.closing) return;
    this.queue.push(submitTrace === null ? { frame, bytes } : { frame, bytes, recv_us: traceNow_us() });
    if (this.queue.bytes > this.L.queuedBytesMax) {
      this.close('queue-overflow', `more than ${this.L.queuedBytesMax} bytes of requests waiting`);
      return;
    }
    this.frames.count();
    this.flow();
    this.admission.wake(this);
  }

  /** Starts the next request if this connection may now; false when it may not (it waits for an event). */
  tryStart(): boolean {
    const L = this.L;
    if (!this.hasWork()) return false;
    if (!this.authenticated) {
      if (this.inflight > 0) return false; // one at a time until authenticated
      if (this.unauthenticatedStarted >= L.unauthenticatedRequestsMax) {
        this.close(
          'unauthenticated-requests',
          `${this.unauthenticatedStarted} requests without a login or a valid token: log in first`,
        );
        return false;
      }
    }
    if (this.inflight >= L.inflightMax || this.backlog >= L.backlogBytesMax) return false;
    if (this.admission.backlogBytes >= L.backlogTotalBytesMax && this.backlog >= L.backlogFairBytes) return false;
    const start_us = submitTrace === null ? 0 : traceNow_us();
    const e = this.queue.next();
    const heavy = !(e.parsed instanceof RequestError) && L.heavyOps.has(e.parsed.op);
    if (heavy && !this.admission.heavySlotFree()) return false;
    this.queue.take();
    this.inflight++;
    if (!this.authenticated) this.unauthenticatedStarted++;
    if (heavy) this.admission.heavyStarted();
    if (submitTrace === null) void this.run(e.parsed, heavy);
    else {
      const ctx = { recv_us: e.recv_us ?? start_us, start_us, parsed_us: traceNow_us(), proposed_us: 0, index: 0 };
      void submitTrace.request(ctx, () => this.run(e.parsed, heavy));
    }
    return true;
  }

  /** The socket is not read for the frame rate. */
  get throttled(): boolean {
    return this.frames.throttled;
  }

  private async run(p: Request | RequestError, heavy: boolean): Promise<void> {
    let resp: Response;
    try {
      resp = p instanceof RequestError ? this.badFrame(p) : await this.serve(p);
    } catch (err) {
      // The handler never throws; this is a guard, and the details stay here (they may hold state).
      this.admission.note(this.address, 'internal error admitting a client API request', {
        error: (err as Error).message,
      });
      resp = { id: p.id, ok: false, error: { code: 'internal', message: 'internal error admitting the request' } };
    }
    this.reply(resp); // before the heavy slot is given back: building a large answer is part of the heavy work
    if (this.closeAfterReply !== null) this.close('sessions-per-user', this.closeAfterReply, CLOSE_TRY_AGAIN);
    this.inflight--;
    if (heavy) this.admission.heavyDone();
    this.flow();
    this.admission.wake(this);
  }

  private badFrame(e: RequestError): Response {
    const wait = this.admission.admitAddress(this.address);
    if (wait > 0)
      return rateLimitedAnswer(e.id, wait, `from ${this.address}`, this.L.addressRate, LIMIT_KEYS.requestsPerAddress);
    return { id: e.id, ok: false, error: { code: e.code, message: e.message } };
  }

  private async serve(req: Request): Promise<Response> {
    const addressWait = this.admission.admitAddress(this.address);
    if (addressWait > 0)
      return rateLimitedAnswer(
        req.id,
        addressWait,
        `from ${this.address}`,
        this.L.addressRate,
        LIMIT_KEYS.requestsPerAddress,
      );
    let user: string | null = null;
    if (!TOKENLESS_OPS.has(req.op)) {
      const a = await this.handler.authenticate(req);
      if ('error' in a) return { id: req.id, ok: false, error: a.error };
      if (!this.authenticatedAs(a.user)) return this.sessionRefused(req.id, a.user);
      const userWait = this.admission.admitUser(a.user);
      if (userWait > 0)
        return rateLimitedAnswer(req.id, userWait, `for user ${a.user}`, this.L.userRate, LIMIT_KEYS.requestsPerUser);
      user = a.user;
    }
    const r = await this.handler.serve(req, this.address, user);
    if (TOKENLESS_OPS.has(req.op) && r.ok) {
      // A login or a refresh authenticates the connection as the token's user (sessions_per_user).
      const user = (r.result as LoginResult).user;
      if (!this.authenticatedAs(user)) return this.sessionRefused(req.id, user);
    }
    return r;
  }

  /** The answer when `user` holds api_limits.sessions_per_user connections already; the connection is closed after it. */
  private sessionRefused(id: number, user: string): Response {
    const message = `too many sessions of user ${user} (${LIMIT_KEYS.sessionsPerUser}: ${this.L.sessionsPerUserMax}): close some`;
    this.closeAfterReply = message;
    return { id, ok: false, error: { code: 'unavailable', message } };
  }

  /** Marks the connection authenticated as `user`; false when that user may not have one more session. */
  private authenticatedAs(user: string): boolean {
    if (this.authenticated) return true;
    if (this.closeAfterReply !== null || !this.admission.claimSession(this, user)) return false;
    this.user = user;
    this.authenticated = true;
    this.authTimer?.cancel();
    this.authTimer = null;
    this.admission.wake(this); // its waiting requests need not wait for this one any more
    return true;
  }

  private reply(resp: Response): void {
    if (this.closing || !this.socket.isOpen()) return;
    if (submitTrace !== null) submitTrace.answered(resp.ok ? resp.result : undefined);
    const text = JSON.stringify(resp);
    const bytes = Buffer.byteLength(text);
    this.backlog += bytes;
    this.admission.unsent(bytes);
    this.socket.send(text, () => this.flushed(bytes));
    if (this.backlog >= this.L.backlogHardBytes) {
      this.abort('backlog-hard', `${this.backlog} bytes of answers unsent (the client does not read them)`);
    }
  }

  private flushed(bytes: number): void {
    if (this.closed) return; // given back all at once when the socket closed
    this.backlog -= bytes;
    this.admission.unsent(-bytes);
    this.flow();
    this.admission.wake(this);
  }

  /** Pauses or resumes reading the socket, and marks the connection stalled, from its counts. */
  private flow(): void {
    if (this.closing) return;
    const L = this.L;
    const over = this.backlog >= L.backlogBytesMax;
    if (over && !this.stalled) {
      this.stalled = true;
      this.admission.count('stalls');
      this.stuckTimer = this.admission.clock.after(L.backlogStuck_ms, () => {
        this.stuckTimer = null;
        if (this.stalled)
          this.abort(
            'backlog-stuck',
            `answers unsent for ${L.backlogStuck_ms / 1000} s (${this.backlog} bytes): the client does not read them`,
          );
      });
    } else if (!over && this.stalled) {
      this.stalled = false;
      this.stuckTimer?.cancel();
      this.stuckTimer = null;
    }
    if (
      !this.paused &&
      (over || this.throttled || this.outstanding >= L.inflightMax || this.queue.bytes >= L.queuedBytesPause)
    ) {
      this.paused = true;
      this.admission.count('pauses');
      this.socket.pause();
    } else if (
      this.paused &&
      !over &&
      !this.throttled &&
      this.outstanding <= L.resumeAt &&
      this.queue.bytes < L.queuedBytesPause / 2
    ) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Closes with a close frame (the client learns why); the socket is destroyed if the handshake does not finish soon. */
  private close(event: CloseEvent, reason: string, code = CLOSE_POLICY): void {
    if (this.closing) return;
    this.closing = true;
    this.admission.closedFor(event);
    this.admission.note(this.address, 'closed a client API connection', { reason, event });
    closeSoftly(this.socket, code, reason, this.admission.clock, this.L.closeGrace_ms);
  }

  /** Destroys the socket at once: a close frame would wait behind the answers the client does not read. */
  private abort(event: CloseEvent, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.admission.closedFor(event);
    this.admission.note(this.address, 'closed a client API connection', { reason, event });
    this.socket.terminate();
  }

  /** The socket closed (either side): everything it held is given back. */
  closedBySocket(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;
    this.authTimer?.cancel();
    this.stuckTimer?.cancel();
    this.frames.cancel();
    this.queue.clear();
    this.paused = false;
    this.stalled = false;
    const unsent = this.backlog;
    this.backlog = 0;
    this.admission.release(this, unsent);
  }
}
