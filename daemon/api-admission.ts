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
// The concepts, one file each: the bounds and the clock (api-admission-limits.ts), rate limits
// (api-rate-limits.ts), one connection's flow control (api-connection.ts), the fair scheduler and
// the heavy slots (api-scheduler.ts); this file holds the bookkeeping of them all (connections per
// address, the total of unsent answers, the refusals and closes counted and logged), unit-tested in
// api-admission.test.ts, and exports every name of the admission. api-server.ts adapts each `ws`
// socket to ApiSocket and supplies the authentication and the operations.

import type { Logger } from './log.js';
import {
  API_ADMISSION_LIMITS,
  API_LOG_ADDRESSES_MAX,
  API_LOG_EVERY_MS,
  CLOSE_TRY_AGAIN,
  LIMIT_KEYS,
  REAL_CLOCK,
  type AdmissionClock,
  type AdmissionLimits,
} from './api-admission-limits.js';
import {
  ApiConnection,
  closeSoftly,
  type ApiHandler,
  type ApiSocket,
  type CloseEvent,
  type ConnectionHost,
} from './api-connection.js';
import { ApiRateLimits } from './api-rate-limits.js';
import { ApiScheduler } from './api-scheduler.js';

export * from './api-admission-limits.js';
export { ApiConnection, type ApiHandler, type ApiSocket, type CloseEvent } from './api-connection.js';
export { ApiRateLimits, FrameBucket, rateLimitedAnswer, rateLimitedError } from './api-rate-limits.js';
export { ApiScheduler, API_SLICE_MS, WorkSlicer, type Schedulable } from './api-scheduler.js';

/** Why a connection was refused: too many from its address, or too many sessions of its user. */
export type RefusalReason = 'connections-per-address' | 'sessions-per-user';

/** Figures for /healthz, the metrics and tests: current counts, and totals since start. */
export interface ApiAdmissionStats {
  connections: number;
  unauthenticated: number;
  /** REST (HTTP) connections counted against connections_per_address. */
  restConnections: number;
  /** Sockets not read right now (too many requests in flight, or answers unsent). */
  paused: number;
  /** Connections not served right now because their unsent answers exceed the bound. */
  stalled: number;
  /** Unsent answer bytes over all connections. */
  backlogBytes: number;
  heavyInflight: number;
  /** Totals since start. */
  refused: number;
  refusedBy: Record<RefusalReason, number>;
  pauses: number;
  stalls: number;
  rateLimited: number;
  rateLimitedBy: Record<'user' | 'address', number>;
  /** Frames received over their connection's frame rate, and the times a connection was throttled for it. */
  framesThrottled: number;
  throttles: number;
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

/** The admission of one API server: connections per address, rate limits, the scheduler, the totals. */
export class ApiAdmission implements ConnectionHost {
  limits: AdmissionLimits;
  /** Connections (/api and REST) per client address. */
  private readonly perAddress = new Map<string, number>();
  /** Authenticated /api connections per user. */
  private readonly perUser = new Map<string, number>();
  private readonly connections = new Set<ApiConnection>();
  private restConnections = 0;
  private rates: ApiRateLimits;
  private readonly scheduler: ApiScheduler<ApiConnection>;
  private readonly logThrottle: LogThrottle;
  private backlog = 0;
  private readonly totals = {
    refusedBy: { 'connections-per-address': 0, 'sessions-per-user': 0 } as Record<RefusalReason, number>,
    pauses: 0,
    stalls: 0,
    framesThrottled: 0,
    throttles: 0,
    closed: {
      'auth-deadline': 0,
      'unauthenticated-requests': 0,
      'backlog-stuck': 0,
      'backlog-hard': 0,
      'queue-overflow': 0,
      'sessions-per-user': 0,
    } as Record<CloseEvent, number>,
  };

  constructor(
    private readonly log: Logger,
    limits: Partial<AdmissionLimits> = {},
    readonly clock: AdmissionClock = REAL_CLOCK,
  ) {
    this.limits = { ...API_ADMISSION_LIMITS, ...limits };
    this.rates = new ApiRateLimits(this.limits.userRate, this.limits.addressRate, clock);
    this.scheduler = new ApiScheduler(this.limits, clock);
    this.logThrottle = new LogThrottle(this.limits.logEvery_ms);
  }

  /** Unsent answer bytes over all connections. */
  get backlogBytes(): number {
    return this.backlog;
  }

  /** API_HEAVY_OPS requests in progress over all connections. */
  get heavyInflight(): number {
    return this.scheduler.heavyInflight;
  }

  /**
   * New limits (xce.yaml `api_limits` changed): counts and connections stay, the rate buckets start
   * full again, a deadline or frame rate applies to connections made from now on.
   */
  setLimits(limits: Partial<AdmissionLimits>): void {
    this.limits = { ...API_ADMISSION_LIMITS, ...limits };
    this.rates = new ApiRateLimits(this.limits.userRate, this.limits.addressRate, this.clock, this.rates);
  }

  /** A new socket from `address`: its connection, or null when it is refused (and closed, saying why). */
  accept(socket: ApiSocket, address: string, handler: ApiHandler): ApiConnection | null {
    const reason = this.takeAddressSlot(address);
    if (reason !== null) {
      closeSoftly(socket, CLOSE_TRY_AGAIN, reason, this.clock, this.limits.closeGrace_ms);
      return null;
    }
    const c = new ApiConnection(this, socket, address, handler);
    this.connections.add(c);
    return c;
  }

  /** Takes one of `address`'s connection slots: null, or why it may not have one more (counted and logged). */
  takeAddressSlot(address: string): string | null {
    const n = this.perAddress.get(address) ?? 0;
    const max = this.limits.connectionsPerAddressMax;
    if (n >= max) {
      this.totals.refusedBy['connections-per-address']++;
      const reason = `too many connections from ${address} (${LIMIT_KEYS.connectionsPerAddress}: ${max}): close some`;
      this.note(address, 'refused a client API connection', { reason, connections: n });
      return reason;
    }
    this.perAddress.set(address, n + 1);
    return null;
  }

  private giveAddressSlot(address: string): void {
    const n = (this.perAddress.get(address) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(address);
    else this.perAddress.set(address, n);
  }

  /** A REST (HTTP) connection from `address`: null when it may be served, else why not; `release` once it closes. */
  acceptRest(address: string): string | null {
    const reason = this.takeAddressSlot(address);
    if (reason === null) this.restConnections++;
    return reason;
  }

  releaseRest(address: string): void {
    this.restConnections--;
    this.giveAddressSlot(address);
  }

  /** The connection's socket closed: its slot, its session and its unsent bytes are given back. */
  release(c: ApiConnection, unsent: number): void {
    if (!this.connections.delete(c)) return;
    this.giveAddressSlot(c.address);
    if (c.user !== null) {
      const n = (this.perUser.get(c.user) ?? 1) - 1;
      if (n <= 0) this.perUser.delete(c.user);
      else this.perUser.set(c.user, n);
    }
    this.scheduler.forget(c);
    this.unsent(-unsent);
  }

  claimSession(c: ApiConnection, user: string): boolean {
    if (!this.connections.has(c)) return false;
    const n = this.perUser.get(user) ?? 0;
    if (n >= this.limits.sessionsPerUserMax) {
      this.totals.refusedBy['sessions-per-user']++;
      return false;
    }
    this.perUser.set(user, n + 1);
    return true;
  }

  sessionsOf(user: string): number {
    return this.perUser.get(user) ?? 0;
  }

  frameThrottled(started: boolean): void {
    this.totals.framesThrottled++;
    if (started) this.totals.throttles++;
  }

  /** Counts `bytes` more (or fewer, negative) unsent answer bytes; wakes the scheduler when the total falls back under its bound. */
  unsent(bytes: number): void {
    const wasOver = this.backlog >= this.limits.backlogTotalBytesMax;
    this.backlog += bytes;
    if (wasOver && this.backlog < this.limits.backlogTotalBytesMax) this.wakeAll();
  }

  /** 0 when a request from `address` may go ahead (it is counted), else the ms until one may. */
  admitAddress(address: string): number {
    return this.rates.admitAddress(address);
  }

  /** 0 when a request of `user` may go ahead (it is counted), else the ms until one may. */
  admitUser(user: string): number {
    return this.rates.admitUser(user);
  }

  /** The connection has requests that may be startable: it takes its turn. */
  wake(c: ApiConnection): void {
    this.scheduler.wake(c);
  }

  /** Something every waiting connection may wait for was freed (a heavy slot, the total backlog). */
  wakeAll(): void {
    this.scheduler.wakeAll();
  }

  heavySlotFree(): boolean {
    return this.scheduler.heavySlotFree();
  }

  heavyStarted(): void {
    this.scheduler.heavyStarted();
  }

  heavyDone(): void {
    this.scheduler.heavyDone();
  }

  /** One turn of the scheduler (api-scheduler.ts); it runs by itself, tests may call it. */
  pump(): void {
    this.scheduler.pump();
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
    const refusedBy = { ...this.totals.refusedBy };
    let stalled = 0;
    for (const c of this.connections) {
      if (!c.authenticated) unauthenticated++;
      if (c.paused) paused++;
      if (c.stalled) stalled++;
    }
    return {
      connections: this.connections.size,
      unauthenticated,
      restConnections: this.restConnections,
      paused,
      stalled,
      backlogBytes: this.backlog,
      heavyInflight: this.scheduler.heavyInflight,
      refused: refusedBy['connections-per-address'] + refusedBy['sessions-per-user'],
      refusedBy,
      pauses: this.totals.pauses,
      stalls: this.totals.stalls,
      rateLimited: this.rates.rateLimited,
      rateLimitedBy: { ...this.rates.rateLimitedBy },
      framesThrottled: this.totals.framesThrottled,
      throttles: this.totals.throttles,
      closed: { ...this.totals.closed },
    };
  }
}
