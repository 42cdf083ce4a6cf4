// What the client API (`/api`) lets in, and how fast (issue 21 item 3, "outsiders starve the
// leader"). Measured before: 4,000 unauthenticated `jobs.list` frames on one connection cost the
// leader its leadership every time (they were all served in the event-loop turn that read them);
// 20 connections x 4,000 requests whose answers were never read grew the leader to 1.49 GB.
//
//  - A connection is unauthenticated until a login succeeds on it or one of its requests carries a
//    valid token. Until then its requests are served one at a time, at most
//    API_UNAUTHENTICATED_REQUESTS_MAX of them, and it is closed after API_AUTH_DEADLINE_MS.
//    Connections per client address are capped; one more is closed at once, saying why.
//  - A connection has at most API_CONNECTION_INFLIGHT_MAX requests received and not yet answered:
//    past that its socket is not read (ws `pause()`: the TCP window then pushes back on the
//    client) until answers go out. While its unsent answers exceed API_REPLY_BACKLOG_BYTES_MAX
//    none of its requests is started and its socket is not read; if that lasts
//    API_REPLY_BACKLOG_STUCK_MS it is closed. So memory per connection is bounded, whatever the
//    client does.
//  - Requests are started by one scheduler, round robin over the connections, a bounded number per
//    event-loop turn, setImmediate between turns: the Raft tick (a timer) and peer messages (other
//    sockets) run between two batches, never behind a whole flood. Requests that compute over every
//    job (API_HEAVY_OPS) run at most API_HEAVY_INFLIGHT_MAX at a time, so that the reads a ReadIndex
//    releases together do not compute in one long turn.
//  - Token buckets per user and per client address answer `rate-limited` with `retryAfter_ms`; the
//    client library waits that long and sends the request again.
//
// This file holds the bookkeeping (unit-tested in api-admission.test.ts); api-server.ts adapts
// each `ws` socket to ApiSocket and supplies the authentication and the operations.

import { performance } from 'node:perf_hooks';
import {
  RequestError,
  parseRequest,
  requestIdOf,
  type ApiErrorBody,
  type Request,
  type Response,
} from '../api/protocol.js';
import { API_FRAME_BYTES_MAX } from '../api/protocol.js';
import { TokenBuckets, type BucketLimits } from './login-gate.js';
import type { Logger } from './log.js';

/** An unauthenticated connection is closed after this: a client logs in or sends its token at once; an idle socket from nobody is not kept. */
export const API_AUTH_DEADLINE_MS = 10_000;
/** Requests served before a successful authentication: a client needs one (login or any request with its token); a few allow a typo'd password. */
export const API_UNAUTHENTICATED_REQUESTS_MAX = 8;
/** Connections one client address may hold: the cluster benchmark opens 256 from one login node, so this leaves it room (64 would refuse it). */
export const API_CONNECTIONS_PER_ADDRESS_MAX = 512;
/** Requests received and not yet answered on one connection; past it the socket is not read. The client library sends one request per call, a pipelining program rarely more. */
export const API_CONNECTION_INFLIGHT_MAX = 64;
/** A paused socket is read again once its requests in flight are down to this (hysteresis: not a pause per request). */
export const API_CONNECTION_RESUME_AT = 32;
/** Unsent answer bytes on one connection above which none of its requests is started: a few large `jobs.list` answers, far more than a client that reads ever leaves unsent. */
export const API_REPLY_BACKLOG_BYTES_MAX = 8 * 1024 * 1024;
/** Unsent answer bytes at which a connection is closed at once (its answers in flight when it crossed the bound above overshoot it; this caps the overshoot). */
export const API_REPLY_BACKLOG_HARD_BYTES = 64 * 1024 * 1024;
/** A connection over API_REPLY_BACKLOG_BYTES_MAX this long is closed: 8 MiB in 30 s is a client reading under 300 KB/s, or not at all. */
export const API_REPLY_BACKLOG_STUCK_MS = 30_000;
/** Unsent answer bytes over all connections above which a connection with more than API_REPLY_BACKLOG_FAIR_BYTES of its own is not served: many slow readers together stay bounded too. */
export const API_REPLY_BACKLOG_TOTAL_BYTES_MAX = 256 * 1024 * 1024;
/** See API_REPLY_BACKLOG_TOTAL_BYTES_MAX: clients that read their answers keep being served. */
export const API_REPLY_BACKLOG_FAIR_BYTES = 1024 * 1024;
/** Bytes of frames received and not yet started on one connection at which its socket is not read any more (large frames count by bytes, not by number). */
export const API_QUEUED_BYTES_PAUSE = API_FRAME_BYTES_MAX;
/** Bytes of frames received and not yet started beyond which the connection is closed. After a pause at most the rest of one TCP read (64 KiB) or one frame (1 MiB) follows, so only a broken invariant reaches it. */
export const API_QUEUED_BYTES_MAX = 4 * API_FRAME_BYTES_MAX;
/** Per user: 20,000 requests a second, bursts of 40,000. Above the most one user was measured to get served (12,667 submits/s, the cluster benchmark's 256 clients), so it slows only a user sending cheap requests faster than any real work: it leaves the leader to the others. */
export const API_USER_RATE: BucketLimits = { burst: 40_000, refill_ms: 1_000 / 20_000 };
/** Per client address (a login node carries many users): twice a user's, 40,000 a second, bursts of 80,000. */
export const API_ADDRESS_RATE: BucketLimits = { burst: 80_000, refill_ms: 1_000 / 40_000 };
/** Requests started per event-loop turn over all connections: a turn of cheap requests stays in the low milliseconds, well within a 50 ms Raft tick. */
export const API_REQUESTS_PER_TURN = 64;
/** Requests one connection may start per turn: a flooding connection gets its share of a turn, not all of it. */
export const API_REQUESTS_PER_CONNECTION_TURN = 8;
/** Milliseconds of starting requests per turn, whatever their number: the Raft tick waits at most about this for the API. */
export const API_TURN_BUDGET_MS = 5;
/** Operations that compute over every job of the state (their answer can be megabytes). */
export const API_HEAVY_OPS: ReadonlySet<string> = new Set(['jobs.list']);
/** API_HEAVY_OPS requests in progress over all connections: the reads one ReadIndex answer releases together compute in a few milliseconds, not hundreds. */
export const API_HEAVY_INFLIGHT_MAX = 8;
/** A refused or closed connection is logged at most once per client address in this time (a flood must not flood the log). */
export const API_LOG_EVERY_MS = 60_000;
/** Addresses whose last log time is remembered; the least recently logged goes first. */
export const API_LOG_ADDRESSES_MAX = 10_000;
/** A connection closed by the server gets this long for the close handshake before its socket is destroyed (a flooder does not answer it). */
export const API_CLOSE_GRACE_MS = 1_000;

/** WebSocket close codes used here: a policy violation (not logged in, answers not read) and "try again later" (too many connections). */
export const CLOSE_POLICY = 1008;
export const CLOSE_TRY_AGAIN = 1013;

export interface AdmissionLimits {
  readonly authDeadline_ms: number;
  readonly unauthenticatedRequestsMax: number;
  readonly connectionsPerAddressMax: number;
  readonly inflightMax: number;
  readonly resumeAt: number;
  readonly backlogBytesMax: number;
  readonly backlogHardBytes: number;
  readonly backlogStuck_ms: number;
  readonly backlogTotalBytesMax: number;
  readonly backlogFairBytes: number;
  readonly queuedBytesPause: number;
  readonly queuedBytesMax: number;
  readonly userRate: BucketLimits;
  readonly addressRate: BucketLimits;
  readonly requestsPerTurn: number;
  readonly requestsPerConnectionTurn: number;
  readonly turnBudget_ms: number;
  readonly heavyOps: ReadonlySet<string>;
  readonly heavyInflightMax: number;
  readonly logEvery_ms: number;
  readonly closeGrace_ms: number;
}

export const API_ADMISSION_LIMITS: AdmissionLimits = {
  authDeadline_ms: API_AUTH_DEADLINE_MS,
  unauthenticatedRequestsMax: API_UNAUTHENTICATED_REQUESTS_MAX,
  connectionsPerAddressMax: API_CONNECTIONS_PER_ADDRESS_MAX,
  inflightMax: API_CONNECTION_INFLIGHT_MAX,
  resumeAt: API_CONNECTION_RESUME_AT,
  backlogBytesMax: API_REPLY_BACKLOG_BYTES_MAX,
  backlogHardBytes: API_REPLY_BACKLOG_HARD_BYTES,
  backlogStuck_ms: API_REPLY_BACKLOG_STUCK_MS,
  backlogTotalBytesMax: API_REPLY_BACKLOG_TOTAL_BYTES_MAX,
  backlogFairBytes: API_REPLY_BACKLOG_FAIR_BYTES,
  queuedBytesPause: API_QUEUED_BYTES_PAUSE,
  queuedBytesMax: API_QUEUED_BYTES_MAX,
  userRate: API_USER_RATE,
  addressRate: API_ADDRESS_RATE,
  requestsPerTurn: API_REQUESTS_PER_TURN,
  requestsPerConnectionTurn: API_REQUESTS_PER_CONNECTION_TURN,
  turnBudget_ms: API_TURN_BUDGET_MS,
  heavyOps: API_HEAVY_OPS,
  heavyInflightMax: API_HEAVY_INFLIGHT_MAX,
  logEvery_ms: API_LOG_EVERY_MS,
  closeGrace_ms: API_CLOSE_GRACE_MS,
};

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
  /** Serves an admitted request. */
  serve(req: Request, address: string): Promise<Response>;
}

/** Timers, injectable for tests. */
export interface AdmissionClock {
  now(): number;
  /** A one-shot timer that does not keep the process alive. */
  after(ms: number, fn: () => void): { cancel(): void };
  /** Runs `fn` in a later turn of the event loop (setImmediate). */
  defer(fn: () => void): void;
  /** A monotonic clock in ms for the per-turn budget. */
  elapsed(): number;
}

export const REAL_CLOCK: AdmissionClock = {
  now: Date.now,
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  defer: (fn) => void setImmediate(fn),
  elapsed: () => performance.now(),
};

export type CloseEvent =
  'auth-deadline' | 'unauthenticated-requests' | 'backlog-stuck' | 'backlog-hard' | 'queue-overflow';

/** Figures for /healthz and tests: current counts, and totals since start. */
export interface ApiAdmissionStats {
  connections: number;
  unauthenticated: number;
  /** Sockets not read right now (too many requests in flight, or answers unsent). */
  paused: number;
  /** Connections not served right now because their unsent answers exceed the bound. */
  stalled: number;
  /** Unsent answer bytes over all connections. */
  backlogBytes: number;
  heavyInflight: number;
  /** Totals since start. */
  refused: number;
  pauses: number;
  stalls: number;
  rateLimited: number;
  closed: Record<CloseEvent, number>;
}

/** Logs an event at most once per key per `every_ms`, counting the ones it held back. */
export class LogThrottle {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(
    readonly every_ms = API_LOG_EVERY_MS,
    readonly entriesMax = API_LOG_ADDRESSES_MAX,
  ) {}

  /** null: do not log now (it is counted); else the number of events held back since the last line. */
  admit(key: string, now: number): number | null {
    const e = this.last.get(key);
    if (e !== undefined && now - e.at < this.every_ms) {
      e.held++;
      return null;
    }
    const held = e?.held ?? 0;
    this.last.delete(key);
    this.last.set(key, { at: now, held: 0 });
    while (this.last.size > this.entriesMax) this.last.delete(this.last.keys().next().value as string);
    return held;
  }
}

/** `::ffff:10.0.0.1` → `10.0.0.1`: one client, one key, whatever the socket family. */
export function clientAddress(remote: string | undefined): string {
  if (remote === undefined || remote === '') return 'unknown';
  return remote.startsWith('::ffff:') ? remote.slice(7) : remote;
}

interface Entry {
  readonly frame: string | Uint8Array;
  readonly bytes: number;
  parsed?: Request | RequestError;
}

function parse(frame: string | Uint8Array): Request | RequestError {
  try {
    return parseRequest(frame);
  } catch (err) {
    // Anything else is a bug of ours, not of the frame: no exception text goes back to the client.
    return err instanceof RequestError
      ? err
      : new RequestError(requestIdOf(frame), 'bad-frame', 'the frame could not be read as a request');
  }
}

/** The admission of one API server: connections per address, rate limits, the scheduler, the totals. */
export class ApiAdmission {
  readonly limits: AdmissionLimits;
  private readonly perAddress = new Map<string, number>();
  private readonly connections = new Set<ApiConnection>();
  private readonly byUser: TokenBuckets;
  private readonly byAddress: TokenBuckets;
  private readonly logThrottle: LogThrottle;
  /** Connections with requests waiting, in round-robin order (one served moves to the end). */
  private readonly ready = new Set<ApiConnection>();
  private pumpScheduled = false;
  heavyInflight = 0;
  backlogBytes = 0;
  private readonly totals = {
    refused: 0,
    pauses: 0,
    stalls: 0,
    rateLimited: 0,
    closed: {
      'auth-deadline': 0,
      'unauthenticated-requests': 0,
      'backlog-stuck': 0,
      'backlog-hard': 0,
      'queue-overflow': 0,
    } as Record<CloseEvent, number>,
  };

  constructor(
    private readonly log: Logger,
    limits: Partial<AdmissionLimits> = {},
    readonly clock: AdmissionClock = REAL_CLOCK,
  ) {
    this.limits = { ...API_ADMISSION_LIMITS, ...limits };
    this.byUser = new TokenBuckets(this.limits.userRate);
    this.byAddress = new TokenBuckets(this.limits.addressRate);
    this.logThrottle = new LogThrottle(this.limits.logEvery_ms);
  }

  /** A new socket from `address`: its connection, or null when it is refused (and closed, saying why). */
  accept(socket: ApiSocket, address: string, handler: ApiHandler): ApiConnection | null {
    const n = this.perAddress.get(address) ?? 0;
    if (n >= this.limits.connectionsPerAddressMax) {
      this.totals.refused++;
      const reason = `too many connections from ${address} (${this.limits.connectionsPerAddressMax}): close some`;
      this.note(address, 'refused a client API connection', { reason, connections: n });
      closeSoftly(socket, CLOSE_TRY_AGAIN, reason, this.clock, this.limits.closeGrace_ms);
      return null;
    }
    this.perAddress.set(address, n + 1);
    const c = new ApiConnection(this, socket, address, handler);
    this.connections.add(c);
    return c;
  }

  /** The connection's socket closed: its slot and its unsent bytes are given back. */
  release(c: ApiConnection, unsent: number): void {
    if (!this.connections.delete(c)) return;
    const n = (this.perAddress.get(c.address) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(c.address);
    else this.perAddress.set(c.address, n);
    this.ready.delete(c);
    this.unsent(-unsent);
  }

  /** Counts `bytes` more (or fewer, negative) unsent answer bytes; wakes the scheduler when the total falls back under its bound. */
  unsent(bytes: number): void {
    const wasOver = this.backlogBytes >= this.limits.backlogTotalBytesMax;
    this.backlogBytes += bytes;
    if (wasOver && this.backlogBytes < this.limits.backlogTotalBytesMax) this.wakeAll();
  }

  /** 0 when a request from `address` may go ahead (it is counted), else the ms until one may. */
  admitAddress(address: string): number {
    return this.take(this.byAddress, address);
  }

  /** 0 when a request of `user` may go ahead (it is counted), else the ms until one may. */
  admitUser(user: string): number {
    return this.take(this.byUser, user);
  }

  private take(buckets: TokenBuckets, key: string): number {
    const now = this.clock.now();
    const wait = buckets.wait(key, now);
    if (wait > 0) {
      this.totals.rateLimited++;
      return wait;
    }
    buckets.take(key, now);
    return 0;
  }

  /** The connection has requests that may be startable: it takes its turn. */
  wake(c: ApiConnection): void {
    if (!c.hasWork()) return;
    this.ready.add(c);
    this.schedule();
  }

  /** Something every waiting connection may wait for was freed (a heavy slot, the total backlog). */
  wakeAll(): void {
    if (this.ready.size > 0) this.schedule();
  }

  heavyDone(): void {
    this.heavyInflight--;
    this.wakeAll();
  }

  private schedule(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    this.clock.defer(() => this.pump());
  }

  /**
   * One turn: starts requests round robin, one per connection per pass, until the turn's count or
   * time is used, or no waiting connection can start one. Another turn follows (setImmediate)
   * only when this one started something; a connection that could not start waits for the event
   * that frees it (an answer sent, a request done, a heavy slot), which wakes the scheduler.
   */
  pump(): void {
    this.pumpScheduled = false;
    const L = this.limits;
    const t0 = this.clock.elapsed();
    const startedBy = new Map<ApiConnection, number>();
    let started = 0;
    let progress = true;
    outer: while (progress) {
      progress = false;
      for (const c of [...this.ready]) {
        if (!c.hasWork()) {
          this.ready.delete(c);
          continue;
        }
        const mine = startedBy.get(c) ?? 0;
        if (mine >= L.requestsPerConnectionTurn) continue;
        if (!c.tryStart()) continue;
        startedBy.set(c, mine + 1);
        started++;
        progress = true;
        this.ready.delete(c); // to the end of the round
        if (c.hasWork()) this.ready.add(c);
        if (started >= L.requestsPerTurn || this.clock.elapsed() - t0 >= L.turnBudget_ms) break outer;
      }
    }
    if (started > 0 && this.ready.size > 0) this.schedule();
  }

  /** Logs a connection refused or closed, at most once per address per API_LOG_EVERY_MS. */
  note(address: string, msg: string, fields: Record<string, unknown>): void {
    const held = this.logThrottle.admit(address, this.clock.now());
    if (held === null) return;
    this.log.warn(msg, { address, ...fields, ...(held > 0 ? { notLoggedSinceLastLine: held } : {}) });
  }

  count(what: 'pauses' | 'stalls'): void {
    this.totals[what]++;
  }

  closedFor(event: CloseEvent): void {
    this.totals.closed[event]++;
  }

  connectionsFrom(address: string): number {
    return this.perAddress.get(address) ?? 0;
  }

  stats(): ApiAdmissionStats {
    let unauthenticated = 0;
    let paused = 0;
    let stalled = 0;
    for (const c of this.connections) {
      if (!c.authenticated) unauthenticated++;
      if (c.paused) paused++;
      if (c.stalled) stalled++;
    }
    return {
      connections: this.connections.size,
      unauthenticated,
      paused,
      stalled,
      backlogBytes: this.backlogBytes,
      heavyInflight: this.heavyInflight,
      refused: this.totals.refused,
      pauses: this.totals.pauses,
      stalls: this.totals.stalls,
      rateLimited: this.totals.rateLimited,
      closed: { ...this.totals.closed },
    };
  }
}

function closeSoftly(socket: ApiSocket, code: number, reason: string, clock: AdmissionClock, grace_ms: number): void {
  // A close reason is at most 123 bytes on the wire; ours are ASCII and short, this is a guard.
  socket.close(code, reason.length > 120 ? `${reason.slice(0, 117)}...` : reason);
  clock.after(grace_ms, () => socket.terminate());
}

/** One client connection: its queue of frames, its requests in flight, its unsent answers. */
export class ApiConnection {
  authenticated = false;
  /** The socket is not being read. */
  paused = false;
  /** Unsent answers exceed the bound: nothing is started. */
  stalled = false;
  private closing = false;
  private closed = false;
  private readonly queue: Entry[] = [];
  private head = 0;
  private queuedBytes = 0;
  private inflight = 0;
  private unauthenticatedStarted = 0;
  private backlog = 0;
  private authTimer: { cancel(): void } | null;
  private stuckTimer: { cancel(): void } | null = null;

  constructor(
    private readonly admission: ApiAdmission,
    private readonly socket: ApiSocket,
    readonly address: string,
    private readonly handler: ApiHandler,
  ) {
    const L = admission.limits;
    this.authTimer = admission.clock.after(L.authDeadline_ms, () => {
      this.authTimer = null;
      if (!this.authenticated)
        this.close(
          'auth-deadline',
          `not logged in within ${L.authDeadline_ms / 1000} s: log in (or send a token) first`,
        );
    });
  }

  private get L(): AdmissionLimits {
    return this.admission.limits;
  }

  get queued(): number {
    return this.queue.length - this.head;
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
    this.queue.push({ frame, bytes });
    this.queuedBytes += bytes;
    if (this.queuedBytes > this.L.queuedBytesMax) {
      this.close('queue-overflow', `more than ${this.L.queuedBytesMax} bytes of requests waiting`);
      return;
    }
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
    const e = this.queue[this.head]!;
    e.parsed ??= parse(e.frame);
    const heavy = !(e.parsed instanceof RequestError) && L.heavyOps.has(e.parsed.op);
    if (heavy && this.admission.heavyInflight >= L.heavyInflightMax) return false;
    this.queue[this.head++] = undefined as unknown as Entry;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.queuedBytes -= e.bytes;
    this.inflight++;
    if (!this.authenticated) this.unauthenticatedStarted++;
    if (heavy) this.admission.heavyInflight++;
    void this.run(e.parsed, heavy);
    return true;
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
    this.inflight--;
    if (heavy) this.admission.heavyDone();
    this.flow();
    this.admission.wake(this);
  }

  private badFrame(e: RequestError): Response {
    const wait = this.admission.admitAddress(this.address);
    if (wait > 0) return this.rateLimited(e.id, wait, `from ${this.address}`, this.L.addressRate);
    return { id: e.id, ok: false, error: { code: e.code, message: e.message } };
  }

  private async serve(req: Request): Promise<Response> {
    const addressWait = this.admission.admitAddress(this.address);
    if (addressWait > 0) return this.rateLimited(req.id, addressWait, `from ${this.address}`, this.L.addressRate);
    if (req.op !== 'login') {
      const a = await this.handler.authenticate(req);
      if ('error' in a) return { id: req.id, ok: false, error: a.error };
      this.authenticatedAs();
      const userWait = this.admission.admitUser(a.user);
      if (userWait > 0) return this.rateLimited(req.id, userWait, `for user ${a.user}`, this.L.userRate);
    }
    const r = await this.handler.serve(req, this.address);
    if (req.op === 'login' && r.ok) this.authenticatedAs();
    return r;
  }

  private rateLimited(id: number, wait_ms: number, who: string, limits: BucketLimits): Response {
    const perSecond = Math.round(1_000 / limits.refill_ms);
    return {
      id,
      ok: false,
      error: {
        code: 'rate-limited',
        message: `too many requests ${who} (more than ${perSecond} a second); retry in ${wait_ms} ms`,
        retryAfter_ms: wait_ms,
      },
    };
  }

  private authenticatedAs(): void {
    if (this.authenticated) return;
    this.authenticated = true;
    this.authTimer?.cancel();
    this.authTimer = null;
    this.admission.wake(this); // its waiting requests need not wait for this one any more
  }

  private reply(resp: Response): void {
    if (this.closing || !this.socket.isOpen()) return;
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
    if (!this.paused && (over || this.outstanding >= L.inflightMax || this.queuedBytes >= L.queuedBytesPause)) {
      this.paused = true;
      this.admission.count('pauses');
      this.socket.pause();
    } else if (this.paused && !over && this.outstanding <= L.resumeAt && this.queuedBytes < L.queuedBytesPause / 2) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** Closes with a close frame (the client learns why); the socket is destroyed if the handshake does not finish soon. */
  private close(event: CloseEvent, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.admission.closedFor(event);
    this.admission.note(this.address, 'closed a client API connection', { reason, event });
    closeSoftly(this.socket, CLOSE_POLICY, reason, this.admission.clock, this.L.closeGrace_ms);
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
    this.queue.length = 0;
    this.head = 0;
    this.queuedBytes = 0;
    this.paused = false;
    this.stalled = false;
    const unsent = this.backlog;
    this.backlog = 0;
    this.admission.release(this, unsent);
  }
}

/** Milliseconds of synchronous work an operation that walks many jobs does before it lets a turn of the event loop pass (the Raft tick is 50 ms). */
export const API_SLICE_MS = 5;

/**
 * For an operation that walks every job (`jobs.list` with a filter over a large state): in its
 * loop, `if ((++n & 255) === 0 && slicer.due()) await slicer.yield();` keeps each turn under
 * API_SLICE_MS. The state may be applied further between two slices, so the walk must tolerate a
 * job that is gone (a read that sees a later state than its barrier is still linearizable).
 */
export class WorkSlicer {
  private start = performance.now();

  constructor(readonly slice_ms = API_SLICE_MS) {}

  due(): boolean {
    return performance.now() - this.start >= this.slice_ms;
  }

  async yield(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    this.start = performance.now();
  }
}
