// The client API admission's bounds (every number below, gathered in AdmissionLimits, which tests
// override) and its clock (timers, turns of the event loop, injectable for tests). The reasons for
// each bound are given with it; the design is described in api-admission.ts.

import { performance } from 'node:perf_hooks';
import { API_FRAME_BYTES_MAX } from '../api/protocol.js';
import type { BucketLimits } from './login-gate.js';

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
/** Bytes of frames received and not yet started beyond which the connection is closed. After a pause at most the rest of one TCP read (64 KiB) or one frame (API_FRAME_BYTES_MAX) follows, so only a broken invariant reaches it. */
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
