// The mixed-load benchmark's load (mixed.bench.ts): the counts, latencies per minute and errors of
// each kind of operation, and the paced loops that call them at a steady rate.

import { ApiError } from '../cli/client.js';
import { quantile } from '../harness/stats.js';

/** A paced loop that falls this far behind its schedule starts again from now (and counts it late). */
const LATE_RESET_MS = 1_000;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Counts, latencies per minute and errors by code of one kind of operation. */
export class OpStats {
  readonly latencies: number[][];
  readonly errors = new Map<string, number>();
  count = 0;

  /** `minuteOf` gives the minute of the run (0 to minutes - 1) of a performance.now() time. */
  constructor(
    minutes: number,
    private readonly minuteOf: (t: number) => number,
  ) {
    this.latencies = Array.from({ length: minutes }, () => []);
  }

  /** Runs `f`, timing it; a failure is counted by its code and not thrown. */
  async time<T>(f: () => Promise<T>): Promise<T | undefined> {
    const t = performance.now();
    try {
      const r = await f();
      this.count++;
      this.latencies[this.minuteOf(t)]!.push(performance.now() - t);
      return r;
    } catch (err) {
      this.error(err);
      return undefined;
    }
  }

  error(err: unknown): void {
    const code = err instanceof ApiError ? err.code : `exception: ${(err as Error).message}`;
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  errorCount(): number {
    return [...this.errors.values()].reduce((a, b) => a + b, 0);
  }

  all(): number[] {
    return this.latencies.flat().sort((a, b) => a - b);
  }

  summary(seconds: number): Record<string, unknown> {
    const all = this.all();
    return {
      count: this.count,
      perSecond: this.count / seconds,
      p50_ms: quantile(all, 0.5),
      p99_ms: quantile(all, 0.99),
      errors: Object.fromEntries(this.errors),
    };
  }
}

/**
 * `loops` loops that together call `body` `perSecond` times a second (each loop one call at a time,
 * its calls spaced evenly, the loops staggered) until `end`; returns how often a loop fell behind.
 */
export async function paced(
  perSecond: number,
  loops: number,
  end: number,
  body: (loop: number) => Promise<void>,
): Promise<number> {
  const every_ms = (loops / perSecond) * 1000;
  let late = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      let next = t0 + (i * every_ms) / loops;
      while (next < end) {
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
        await body(i);
        next += every_ms;
        if (performance.now() - next > LATE_RESET_MS) {
          late++;
          next = performance.now();
        }
      }
    }),
  );
  return late;
}
