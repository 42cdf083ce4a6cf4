// A run's runtime limit as a clock that stops while the run is suspended (`jobs suspend`) and goes
// on from where it was at resume: suspended time does not count against the limit (as Slurm's time
// limit). A limit of any length: 30d is beyond setTimeout's range (long-timer.ts).

import { type LongTimeout, setLongTimeout } from '../long-timer.js';

export class RuntimeClock {
  private left_ms: number;
  /** When the clock last started; null while stopped. */
  private since: number | null = null;
  private timer: LongTimeout | null = null;

  constructor(
    limit_ms: number,
    private readonly now: () => number,
    private readonly fire: () => void,
    running: boolean,
  ) {
    this.left_ms = limit_ms;
    if (running) this.resume();
  }

  /** Stops the clock (the run is suspended). */
  pause(): void {
    if (this.since === null) return;
    this.timer?.clear();
    this.timer = null;
    this.left_ms = Math.max(0, this.left_ms - (this.now() - this.since));
    this.since = null;
  }

  /** Starts it again with what was left. */
  resume(): void {
    if (this.since !== null) return;
    this.since = this.now();
    this.timer = setLongTimeout(this.fire, this.left_ms);
  }

  clear(): void {
    this.timer?.clear();
    this.timer = null;
    this.since = null;
  }
}
