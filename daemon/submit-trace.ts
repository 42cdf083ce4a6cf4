// The opt-in per-hop trace of submits (benchmarks/submit-trace.bench.ts reads it). Off unless the
// environment names a directory in XCE_TRACE_DIR: then `submitTrace` is null and every call site is
// one null check. On, each xcectld appends lines to `<dir>/trace-<pid>.log`:
//   node <id>                                       (once, when the core opens)
//   <hop> <first> <last> <peer> <t_us>              (the core's hops, controller/ports.ts TraceHop)
//   api <index> <recv> <start> <parsed> <proposed> <answer> <jobId>   (a request that proposed)
// Times are CLOCK_MONOTONIC microseconds (`process.hrtime`), the same clock in every process on
// the machine, so hops of one entry can be compared across the three controllers and the client.
// Lines are buffered and written every 200 ms and at exit (a SIGKILLed daemon loses at most the
// last 200 ms).

import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TraceHop, TracePort } from './controller/ports.js';

/** The environment variable naming the trace directory. */
export const TRACE_DIR_ENV = 'XCE_TRACE_DIR';
const FLUSH_MS = 200;

/** Monotonic microseconds, comparable across the processes of one machine. */
export function traceNow_us(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** One API request's times, carried through its async chain (AsyncLocalStorage). */
export interface ApiTraceContext {
  readonly recv_us: number;
  readonly start_us: number;
  readonly parsed_us: number;
  proposed_us: number;
  index: number;
}

export class SubmitTrace implements TracePort {
  private lines: string[] = [];
  private readonly file: string;
  private readonly requests = new AsyncLocalStorage<ApiTraceContext>();

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, `trace-${process.pid}.log`);
    setInterval(() => this.flush(), FLUSH_MS).unref();
    process.on('exit', () => this.flush());
  }

  /** The node id of this process, written once so that the reader can tell the files apart. */
  node(id: number): void {
    this.lines.push(`node ${id}`);
  }

  hop(hop: TraceHop, first: number, last: number, peer: number): void {
    const t = traceNow_us();
    this.lines.push(`${hop} ${first} ${last} ${peer} ${t}`);
    if (hop === 'propose') {
      // Proposed from an API request's async chain: that request now knows its entry.
      const ctx = this.requests.getStore();
      if (ctx !== undefined) {
        ctx.index = first;
        ctx.proposed_us = t;
      }
    }
  }

  /** Runs `fn` (serving one API request) with its trace context. */
  request<T>(ctx: ApiTraceContext, fn: () => T): T {
    return this.requests.run(ctx, fn);
  }

  /** The request in whose async chain this runs is being answered: one `api` line if it proposed. */
  answered(result: unknown): void {
    const ctx = this.requests.getStore();
    if (ctx === undefined || ctx.index === 0) return;
    const jobId = typeof result === 'object' && result !== null && 'jobId' in result ? String(result.jobId) : '-';
    this.lines.push(
      `api ${ctx.index} ${ctx.recv_us} ${ctx.start_us} ${ctx.parsed_us} ${ctx.proposed_us} ${traceNow_us()} ${jobId}`,
    );
  }

  private flush(): void {
    if (this.lines.length === 0) return;
    const text = this.lines.join('\n') + '\n';
    this.lines = [];
    appendFileSync(this.file, text);
  }
}

/** The process's trace: null unless XCE_TRACE_DIR names a directory. */
export const submitTrace: SubmitTrace | null = (() => {
  const dir = process.env[TRACE_DIR_ENV];
  return dir !== undefined && dir !== '' ? new SubmitTrace(dir) : null;
})();
