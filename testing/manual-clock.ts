// A clock for the API admission's unit tests (daemon/api-admission.ts AdmissionClock): time moves
// only when the test says, timers fire on `advance`, and deferred work runs turn by turn.

import type { AdmissionClock } from '../daemon/api-admission.js';

/** Timers and turns driven by the test. */
export class ManualClock implements AdmissionClock {
  t = 1_000_000;
  spent = 0;
  private timers: Array<{ at: number; fn: () => void; done: boolean }> = [];
  private deferred: Array<() => void> = [];
  now(): number {
    return this.t;
  }
  elapsed(): number {
    return this.spent;
  }
  after(ms: number, fn: () => void): { cancel(): void } {
    const x = { at: this.t + ms, fn, done: false };
    this.timers.push(x);
    return { cancel: () => void (x.done = true) };
  }
  defer(fn: () => void): void {
    this.deferred.push(fn);
  }
  get pending(): number {
    return this.deferred.length;
  }
  advance(ms: number): void {
    this.t += ms;
    for (const x of [...this.timers]) {
      if (!x.done && x.at <= this.t) {
        x.done = true;
        x.fn();
      }
    }
  }
  /** Runs one scheduler turn, then lets the requests it started settle (microtasks and I/O callbacks). */
  async turn(): Promise<void> {
    for (const fn of this.deferred.splice(0)) fn();
    await new Promise((r) => setImmediate(r));
  }
  /** Turns until nothing more is scheduled, letting requests settle in between (bounded). */
  async settle(maxTurns = 1_000): Promise<number> {
    let n = 0;
    for (; n < maxTurns; n++) {
      await new Promise((r) => setImmediate(r));
      if (this.deferred.length === 0) break;
      await this.turn();
    }
    return n;
  }
}
