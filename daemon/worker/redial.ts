// How long the worker's leader link (leader-link.ts) waits before its next dial. Losing the
// leader: a random time within the spread window, 2 ms per host the cluster lists (the leader's
// `registered` says how many), at most 2 s, from the end of the election on
// (FAILOVER_ELECTION_LEAD_MS): the hosts of a site all lose it at once; spread, they do not all
// dial the new one in the same instant. Refused: the longest back-off (nothing changes
// until an administrator acts). Otherwise the back-off, jittered, doubling up to its maximum; for
// a while after losing the leader (the controllers are electing a new one), a short jittered wait
// that does not grow, bounded by the election timeout (FAILOVER_RETRY_MS). Pure: the clock and the
// randomness are passed in.

import { Backoff } from '../net/leader-follower.js';
import {
  FAILOVER_ELECTION_LEAD_MS,
  FAILOVER_RETRY_MS,
  FAILOVER_WINDOW_MS,
  RECONNECT_MS_MAX_DEFAULT,
  RECONNECT_MS_MIN_DEFAULT,
  RECONNECT_SPREAD_MS_DEFAULT,
  RECONNECT_SPREAD_MS_PER_HOST,
} from './link-contract.js';

export interface RedialOptions {
  readonly random: () => number;
  readonly now: () => number;
  readonly reconnectMin_ms?: number;
  readonly reconnectMax_ms?: number;
  readonly reconnectSpread_ms?: number;
}

export class RedialSchedule {
  private readonly backoff: Backoff;
  /** When the registered connection was last lost (opts.now()); null once registered again. */
  private lostAt_ms: number | null = null;
  /** The hosts the cluster lists, as the leader last said; null: not said (an older leader). */
  private hosts: number | null = null;

  constructor(private readonly opts: RedialOptions) {
    this.backoff = new Backoff(
      opts.reconnectMin_ms ?? RECONNECT_MS_MIN_DEFAULT,
      opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT,
      opts.random,
    );
  }

  /** Registered (the leader saying how many hosts the cluster lists, or not): the back-off starts again. */
  reached(hosts?: number): void {
    if (hosts !== undefined) this.hosts = hosts;
    this.lostAt_ms = null;
    this.backoff.reset();
  }

  /**
   * The registered connection was lost: a random time within the spread window, which starts once
   * the controllers have elected (FAILOVER_ELECTION_LEAD_MS, or the spread when that is shorter).
   */
  afterLoss(): number {
    const min_ms = this.opts.reconnectMin_ms ?? RECONNECT_MS_MIN_DEFAULT;
    const longest_ms = this.opts.reconnectSpread_ms ?? RECONNECT_SPREAD_MS_DEFAULT;
    const hosts_ms = this.hosts === null ? longest_ms : this.hosts * RECONNECT_SPREAD_MS_PER_HOST;
    const spread_ms = Math.max(min_ms, Math.min(longest_ms, hosts_ms));
    this.lostAt_ms = this.opts.now();
    this.backoff.reset();
    return Math.min(FAILOVER_ELECTION_LEAD_MS, spread_ms) + Math.round(this.opts.random() * spread_ms);
  }

  /** The registration was refused: the longest back-off. */
  afterRefusal(): number {
    this.backoff.toMax();
    return this.backoff.next();
  }

  /**
   * A dial that reached no leader (unreachable, no leader known, no answer): within
   * FAILOVER_WINDOW_MS of the loss, between half FAILOVER_RETRY_MS and all of it; else the back-off.
   */
  afterFailedDial(): number {
    const lost = this.lostAt_ms;
    // Never longer than the back-off's own maximum (a worker configured to dial sooner does).
    const retry_ms = Math.min(FAILOVER_RETRY_MS, this.opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT);
    if (lost !== null && this.opts.now() - lost < FAILOVER_WINDOW_MS)
      return Math.round(retry_ms * (0.5 + 0.5 * this.opts.random()));
    return this.backoff.next();
  }
}
