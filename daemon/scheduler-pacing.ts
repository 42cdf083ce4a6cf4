// When the leader's next scheduling pass may start (scheduler-loop.ts). Passes are coalesced: a
// burst of submits or statuses asks for one pass, not one each, and passes start at least
// SCHEDULER_PASS_INTERVAL_MS_MIN apart. A pass over a large pending set is long (about 110 ms for 100,000
// pending jobs on 2,000 hosts, all on the leader's one event loop), so the gap after a pass also
// grows with its length: passes take at most SCHEDULER_PASS_SHARE_MAX of the leader's time, and submits,
// registrations and heartbeats keep the rest, as Slurm bounds its main scheduler by
// `sched_min_interval` and `max_sched_time`. Pure: the clock's readings are passed in.

/** Passes start at least this far apart, however short. */
export const SCHEDULER_PASS_INTERVAL_MS_MIN = 50;
/** At most this share of the leader's time goes to passes (the gap after a pass of d ms is d x (1/share - 1)). */
export const SCHEDULER_PASS_SHARE_MAX = 0.25;

export class PassPacer {
  /** The earliest the next pass may start. */
  private nextAt_ms = -Infinity;

  /** How long to wait, at `now_ms`, before the next pass may start (0: now). */
  wait_ms(now_ms: number): number {
    return Math.max(0, this.nextAt_ms - now_ms);
  }

  /** A pass ran from `start_ms` to `end_ms`: the next waits for the coalescing interval and the share bound. */
  ran(start_ms: number, end_ms: number): void {
    const duration_ms = Math.max(0, end_ms - start_ms);
    this.nextAt_ms = Math.max(
      start_ms + SCHEDULER_PASS_INTERVAL_MS_MIN,
      end_ms + duration_ms * (1 / SCHEDULER_PASS_SHARE_MAX - 1),
    );
  }

  /** The next pass may start at once (a new leader's first pass). */
  reset(): void {
    this.nextAt_ms = -Infinity;
  }
}
