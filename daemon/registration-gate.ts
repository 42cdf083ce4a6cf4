// The leader's bound on worker registrations (issue 14): a storm of them (every host of a site
// after a failover) must not hold its event loop past the 250-500 ms election timeout, or the
// followers elect another leader and every host storms that one next. Each `/worker` handshake
// (authentication and WebSocket upgrade) and each `register` frame waits in one queue, handled at
// most `per_turn` a turn of the event loop (Raft's ticks and the peers' I/O run in between); past
// `queued_max` waiting, or with the oldest waiting for QUEUE_WAIT_MS_MAX, the worker is answered
// `busy` with a time to retry after
// (worker-protocol.ts BusyFrame), which its leader link waits, jittered, before dialling again.
// The limits are xce.yaml's `worker_registrations`, read at each use (a configuration upgrade
// takes effect at once).

import type { WorkerRegistrationLimits } from '../model/config-types.js';
import { TurnQueue } from './turn-queue.js';

/** The shortest and longest time a `busy` answer asks the worker to wait. */
export const BUSY_RETRY_MS_MIN = 250;
export const BUSY_RETRY_MS_MAX = 10_000;
/**
 * What one registration is reckoned to cost the leader's event loop (handshake, authentication,
 * register; about 0.5-1 ms measured, doubled for a loaded machine): the k-th worker told `busy`
 * within BUSY_WINDOW_MS is asked to come back after the queue and the k-1 before it are served,
 * so that the deferred hosts return spread out rather than together.
 */
export const REGISTRATION_COST_MS = 2;
export const BUSY_WINDOW_MS = 1_000;
/**
 * A handshake or registration that has waited this long means the leader is behind (a starved CPU
 * serves fewer registrations a turn than the count allows): newcomers are answered `busy` whatever
 * the count. A worker gives up on an upgrade after 3 s (HANDSHAKE_TIMEOUT_MS) and dials another
 * controller, so a queue that took longer would be served to sockets already given up.
 */
export const QUEUE_WAIT_MS_MAX = 1_000;

/** The gate's figures since the controller started (GET /metrics). */
export interface RegistrationGateStats {
  /** Handshakes and registrations waiting now. */
  readonly queued: number;
  /** Workers answered `busy`. */
  readonly deferred: number;
}

export class RegistrationGate {
  private readonly queue: TurnQueue<{ readonly work: () => void; readonly at_ms: number }>;
  private deferred = 0;
  /** The current window of `busy` answers: when it began, and how many so far. */
  private window = { start_ms: -Infinity, busy: 0 };

  constructor(
    private readonly limits: () => WorkerRegistrationLimits,
    private readonly now: () => number,
  ) {
    this.queue = new TurnQueue(
      () => this.limits().perTurn,
      (item) => item.work(),
    );
  }

  /**
   * Queues `work` (a handshake or a registration, done in a later turn, at most `per_turn` a turn);
   * null when queued, else how long the worker should wait before trying again (`queued_max` are
   * waiting already, or the oldest has waited QUEUE_WAIT_MS_MAX).
   */
  offer(work: () => void): number | null {
    const now = this.now();
    const oldest = this.queue.peek();
    if (this.queue.size < this.limits().queuedMax && (oldest === undefined || now - oldest.at_ms < QUEUE_WAIT_MS_MAX)) {
      this.queue.push({ work, at_ms: now });
      return null;
    }
    return this.busy(now);
  }

  /** Queues `work` whatever the queue's length (a registration on a connection the gate let in). */
  admit(work: () => void): void {
    this.queue.push({ work, at_ms: this.now() });
  }

  stats(): RegistrationGateStats {
    return { queued: this.queue.size, deferred: this.deferred };
  }

  private busy(now: number): number {
    if (now - this.window.start_ms >= BUSY_WINDOW_MS) this.window = { start_ms: now, busy: 0 };
    this.window.busy++;
    this.deferred++;
    const retry_ms = (this.queue.size + this.window.busy) * REGISTRATION_COST_MS;
    return Math.min(BUSY_RETRY_MS_MAX, Math.max(BUSY_RETRY_MS_MIN, Math.round(retry_ms)));
  }
}
