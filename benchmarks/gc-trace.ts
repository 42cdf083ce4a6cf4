// The live JS heap of a daemon, from its own garbage collector: started with `--trace-gc`, V8 prints a
// line per collection, and after a Mark-Compact (a full collection) the heap in use is what the
// process keeps. The heap in use that /metrics reports rises and falls with the garbage not yet
// collected (in the mixed-load bench it swung between 35 and 90 MiB within a minute), so a leak
// shows only in the heap after the full collections. Nothing is asked of the daemon: forcing a full
// collection through its inspector instead stalled a loaded leader past its election timeout.

import type { Readable } from 'node:stream';

/** The node flag that makes a daemon print its collections (TestCluster: XCE_TEST_NODE_ARGS). */
export const TRACE_GC_FLAG = '--trace-gc';
// `[pid:0xISOLATE]  1234 ms: Mark-Compact 52.8 (70.3) -> 7.2 (40.8) MB, ...` (V8's MB are MiB).
const MARK_COMPACT_RE =
  /^\[\d+:(0x[0-9a-f]+)\]\s+\d+ ms: Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \([\d.]+\) MB/;

/** The heap after one full collection of one controller. */
export interface FullGc {
  readonly t_ms: number;
  readonly mib: Record<number, number>;
}

/**
 * Collects the full collections of several daemons from their stdout. A daemon's worker threads (the
 * controller's password hashing) print theirs too, each under its own isolate: only the main
 * isolate's count, taken as the one with the largest heap.
 */
export class GcTrace {
  private readonly seen: Array<{ t_ms: number; id: number; isolate: string; mib: number }> = [];

  /** `now` gives the time of each point (the bench's clock). */
  constructor(private readonly now: () => number) {}

  watch(id: number, stdout: Readable): void {
    let rest = '';
    stdout.on('data', (d: Buffer) => {
      const lines = (rest + d.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const m = MARK_COMPACT_RE.exec(line);
        if (m) this.seen.push({ t_ms: this.now(), id, isolate: m[1]!, mib: Number(m[2]) });
      }
    });
  }

  /** The main isolate's full collections of every daemon, in the order they came. */
  points(): FullGc[] {
    const main = new Map<number, { isolate: string; mib: number }>();
    for (const p of this.seen) if (p.mib > (main.get(p.id)?.mib ?? -1)) main.set(p.id, p);
    return this.seen
      .filter((p) => main.get(p.id)!.isolate === p.isolate)
      .map((p) => ({ t_ms: p.t_ms, mib: { [p.id]: p.mib } }));
  }
}
