// Timers for durations that jobs and configurations set (a runtime limit, a hook timeout, a kill
// grace). Node's setTimeout takes at most 2^31-1 ms (24.8 days): a longer delay is taken as 1 ms,
// so a job with `--limit runtime=30d` was killed at once. A LongTimeout waits in steps of at most
// TIMER_STEP_MS_MAX, re-arming until the whole delay has passed; it never caps the delay.
//
// The steps are counted, not measured against a clock: a delay within the range is one plain
// setTimeout, exactly as before, and a fake clock (node:test's mock timers) drives it the same way.

/** The longest delay Node's timers take as given (2^31-1 ms, about 24.8 days). */
export const TIMER_STEP_MS_MAX = 2 ** 31 - 1;

export class LongTimeout {
  private handle: NodeJS.Timeout | null = null;
  private left_ms: number;
  private unrefed = false;
  private cleared = false;

  /** `delay_ms` below zero is taken as zero (as setTimeout does); Infinity never fires. */
  constructor(
    private readonly fn: () => void,
    delay_ms: number,
  ) {
    if (Number.isNaN(delay_ms)) throw new RangeError('a timer delay must be a number of milliseconds, not NaN');
    this.left_ms = Math.max(0, delay_ms);
    this.arm();
  }

  private arm(): void {
    const step_ms = Math.min(this.left_ms, TIMER_STEP_MS_MAX);
    this.left_ms -= step_ms;
    this.handle = setTimeout(() => {
      this.handle = null;
      if (this.cleared) return;
      if (this.left_ms > 0) this.arm();
      else this.fn();
    }, step_ms);
    if (this.unrefed) this.handle.unref();
  }

  /** Stops it; the callback will not run. Clearing twice, or after it fired, does nothing. */
  clear(): void {
    this.cleared = true;
    if (this.handle !== null) clearTimeout(this.handle);
    this.handle = null;
  }

  /** Lets the process exit while it waits (as Timeout.unref). */
  unref(): this {
    this.unrefed = true;
    this.handle?.unref();
    return this;
  }
}

/** setTimeout for any duration: `fn` runs once `delay_ms` has passed, however long that is. */
export function setLongTimeout(fn: () => void, delay_ms: number): LongTimeout {
  return new LongTimeout(fn, delay_ms);
}
