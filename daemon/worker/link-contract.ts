// The contract of the worker's link to the leader (leader-link.ts): its options and timing
// constants, and what the agent does with the frames about jobs.

import type { DialTls } from '../handshake.js';
import type { HostCredential } from '../keys.js';
import { FEATURE_REPORTS_BATCH } from '../worker-report-frames.js';
import { FEATURE_FAILOVER_SPREAD, FEATURE_PING_HEARTBEAT, FEATURE_START_BATCH } from '../worker-start-batch.js';
import type {
  KillFrame,
  PeekFrame,
  Resources,
  RunningJob,
  SignalFrame,
  StartInfo,
  WorkerToControllerFrame,
} from '../worker-protocol.js';

/** The features this worker names in its WORKER_HEADER_FEATURES header (older controllers ignore them). */
export const WORKER_FEATURES = [
  FEATURE_START_BATCH,
  FEATURE_REPORTS_BATCH,
  FEATURE_FAILOVER_SPREAD,
  FEATURE_PING_HEARTBEAT,
].join(',');
export { FEATURE_PING_HEARTBEAT };

export const RECONNECT_MS_MIN_DEFAULT = 100;
export const RECONNECT_MS_MAX_DEFAULT = 5_000;
/** A connection that has not been answered `registered` or `not-leader` by then is dropped. */
export const REGISTER_TIMEOUT_MS_DEFAULT = 5_000;
export const HANDSHAKE_TIMEOUT_MS = 3_000;
/** Heartbeat periods without any frame or pong from the controller before the connection is dropped. */
export const HEARTBEAT_MISSES_MAX = 3;
/** A registration refused for the same reason again is logged as a warning at most this often. */
export const REFUSED_WARN_EVERY_MS = 60_000;
/**
 * After losing the leader, the first dial waits a random time up to this: the hosts of a site all
 * lose it at once, and spread over this window they do not all dial the new leader in the same
 * instant (no thundering herd). A leader spends about half a millisecond of its event loop on a
 * registration (handshake, authentication, register frame); 2,000 hosts over 2 s arrive slower
 * than it serves them, where the same hosts over 0.1 s would hold its event loop long enough to
 * miss its Raft heartbeats, lose its leadership, and send them all to the next leader again.
 */
export const RECONNECT_SPREAD_MS_DEFAULT = 2_000;
/**
 * With the count of hosts the cluster lists (the leader's `registered` says it), the spread is this
 * much per host, within [the back-off's minimum, RECONNECT_SPREAD_MS_DEFAULT]: what a registration
 * is reckoned to cost the new leader on a loaded machine (daemon/registration-gate.ts
 * REGISTRATION_COST_MS), so that 1,000 hosts and more spread as before, and a small site is not
 * held back 2 s for a herd it does not have (a herd guard, not a delay). At 1 ms per host, 600 to
 * 1,000 hosts over 0.6-1 s held a just-elected leader on a loaded 2-core machine in TLS handshakes
 * (done before its registration gate) and came back later than over 2 s (benchmarks/README.md).
 */
export const RECONNECT_SPREAD_MS_PER_HOST = 2;
/**
 * The spread window starts this long after the loss (or one spread later, when the spread is
 * shorter): the controllers' election. The next leader is the voter after the dead one
 * (raft/README.md "Who leads next": it times out 6 ticks of 50 ms after the last heartbeat,
 * daemon/controller/core-options.ts), and it is the controller every host dials first. Hosts that
 * dialled it while it was still electing were only told `no-leader`, but their TLS handshakes held
 * its event loop, its election ticks fell behind, and the other follower's timer fired first: every
 * host then paid a redirect (benchmarks/README.md, "Many worker hosts", part 13). A host that dials
 * once the election is over reaches the new leader. Not a delay for a small site (the spread is
 * short, and so is this); for a large one, the new leader is busy until well after the window ends.
 */
export const FAILOVER_ELECTION_LEAD_MS = 400;
/**
 * For FAILOVER_WINDOW_MS after losing the leader, a dial that found no leader (a controller still
 * electing, the dead leader named by a follower that has not noticed yet, no answer) is followed by
 * the next one after a random time between half this and this, the controllers' longest election
 * timeout (daemon/controller/core-options.ts: 5 to 10 ticks of 50 ms): the wait does not grow, so
 * a worker dials within an election timeout of the new leader's election, and the jitter spreads
 * the hosts that got the same answer. Past the window the back-off grows as usual (a cluster
 * without a quorum is not dialled twice a second by every host for long).
 */
export const FAILOVER_RETRY_MS = 500;
export const FAILOVER_WINDOW_MS = 10_000;

export interface LinkOptions {
  readonly controllers: readonly string[];
  readonly host: string;
  readonly resources: Resources;
  readonly version: string;
  /** This host's credential (`xceadmin host enroll`); null: connect without a handshake (a stand-in controller in tests). */
  readonly credential: HostCredential | null;
  /** Dial the controllers over TLS with this CA; null: plain ws (insecure_dev). */
  readonly tls: DialTls | null;
  readonly random: () => number;
  readonly now: () => number;
  readonly reconnectMin_ms?: number;
  readonly reconnectMax_ms?: number;
  readonly registerTimeout_ms?: number;
  /** See RECONNECT_SPREAD_MS_DEFAULT: the longest spread (a shorter one with the count of hosts). */
  readonly reconnectSpread_ms?: number;
  /** Told each step of the link's dialling (the many-hosts bench's timeline of each host); none by default. */
  readonly trace?: (event: LinkTraceEvent) => void;
}

/** How a dial ended, as the link saw it. */
export type LinkAnswer =
  | 'registered'
  /** No challenge: connection refused, TLS failure, timeout (detail: the error). */
  | 'unreachable'
  /** `not-leader` naming a leader, followed at once (detail: its URL). */
  | 'not-leader-hint'
  /** `not-leader` naming a leader not followed (back to the sender, too many hops; detail: its URL). */
  | 'not-leader-hint-ignored'
  /** `not-leader` naming no leader (an election is under way). */
  | 'no-leader'
  | 'busy'
  | 'refused'
  | 'register-timeout'
  /** The connection failed or closed another way (detail: the error or close code). */
  | 'error';

/** Why the link waits before its next dial. */
export type LinkWaitReason = 'spread' | 'busy' | 'backoff' | 'refused';

/** One step of the link's dialling (LinkOptions.trace). */
export type LinkTraceEvent =
  | { readonly kind: 'lost'; readonly url: string }
  | { readonly kind: 'dial'; readonly url: string }
  | { readonly kind: 'answer'; readonly url: string; readonly answer: LinkAnswer; readonly detail?: string }
  | { readonly kind: 'wait'; readonly why: LinkWaitReason; readonly ms: number };

/** Sends a frame on the connection a request came on; false when it is not open. */
export type Reply = (frame: WorkerToControllerFrame) => boolean;

/** A start frame that does not parse, whose job and run can still be read. */
export interface UnreadableStart {
  readonly jobId: number;
  readonly run: number;
  readonly problem: string;
}

/** What the agent does with the frames about jobs (start and kill only once registered). */
export interface LinkHandler {
  /** Every run this worker has, for `register`. */
  running(): RunningJob[];
  /** The leader accepted this worker: heartbeats are running. `sessionResumed`: over TLS, the dial resumed a session (daemon/tls-resumption.ts). */
  onRegistered(url: string, leaderId: number, sessionResumed: boolean): void;
  onStart(reply: Reply, info: StartInfo): void;
  onUnreadableStart(reply: Reply, url: string, start: UnreadableStart, error: Error): void;
  onKill(reply: Reply, frame: KillFrame): void;
  onSignal(reply: Reply, frame: SignalFrame): void;
  onStatusAck(statusId: string): void;
  onPeek(reply: Reply, frame: PeekFrame): void;
}
