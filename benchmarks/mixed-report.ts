// The mixed-load benchmark's figures (mixed.bench.ts): per minute of the run the submit latency and
// each controller's heaps, RSS, CPU and jobs; the steady-heap check; and the report it prints.

import { loadavg } from 'node:os';
import { median, quantile } from '../harness/stats.js';
import type { FullGc } from './gc-trace.js';
import type { OpStats } from './mixed-ops.js';
import type { Sample } from './proc-sampler.js';

const log = (s: string): void => void process.stdout.write(`${s}\n`);
export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '-';

/** The samples with t in [from_ms, to_ms) of one controller's `pick`. */
function inWindow<S extends { readonly t_ms: number }>(
  samples: readonly S[],
  id: number,
  from_ms: number,
  to_ms: number,
  pick: (s: S) => Record<number, number>,
): number[] {
  return samples
    .filter((s) => s.t_ms >= from_ms && s.t_ms < to_ms && pick(s)[id] !== undefined)
    .map((s) => pick(s)[id]!);
}

export interface RunSamples {
  readonly ids: readonly number[];
  /** The sampler's samples (ms since it started). */
  readonly samples: readonly Sample[];
  /** The heap after each full collection (ms since the load started). */
  readonly live: readonly FullGc[];
}

/** Each minute's figures; `loadPerMinute` holds the load average taken at the end of each minute. */
export function perMinuteFigures(
  minutes: number,
  { ids, samples, live }: RunSamples,
  submitOps: readonly OpStats[],
  loadPerMinute: readonly number[],
) {
  return Array.from({ length: minutes }, (_, m) => {
    const lat = submitOps.flatMap((o) => o.latencies[m]!).sort((a, b) => a - b);
    const [from_ms, to_ms] = [m * 60_000, (m + 1) * 60_000];
    const per = (f: (id: number) => number): Record<number, number> => Object.fromEntries(ids.map((id) => [id, f(id)]));
    return {
      minute: m + 1,
      submits: lat.length,
      p50_ms: quantile(lat, 0.5),
      p99_ms: quantile(lat, 0.99),
      liveHeap_mib: per((id) => median(inWindow(live, id, from_ms, to_ms, (x) => x.mib))),
      heap_mib: per((id) => median(inWindow(samples, id, from_ms, to_ms, (x) => x.heap_mib))),
      rss_mib: per((id) => median(inWindow(samples, id, from_ms, to_ms, (x) => x.rss_mib))),
      jobs: per((id) => median(inWindow(samples, id, from_ms, to_ms, (x) => x.jobs))),
      cpu: per((id) => {
        const v = inWindow(samples, id, from_ms, to_ms, (x) => x.cpu);
        return v.reduce((a, b) => a + b, 0) / v.length;
      }),
      loadavg1: loadPerMinute[m] ?? loadavg()[0]!,
    };
  });
}

/** One minute of the run: submits and their latency; per controller the medians of the minute (CPU: the mean). */
export type MinuteFigures = ReturnType<typeof perMinuteFigures>[number];

export interface HeapCheck {
  /** The heap after full collections (else the heap in use). */
  readonly useLive: boolean;
  /** The early window [a0, a1) and the late one [b0, b1). */
  readonly windows_ms: readonly [number, number, number, number];
  readonly controllers: ReadonlyArray<{
    controller: number;
    early_mib: number;
    late_mib: number;
    ratio: number;
    pass: boolean;
  }>;
}

/** The steady-heap check: per controller, the late window's median heap at most `ratioMax` times the early one's. */
export function heapCheck(run_ms: number, minutes: number, ratioMax: number, r: RunSamples): HeapCheck {
  const { ids, samples, live } = r;
  // The steady-heap windows: minute 2 and the last minute, or the second and last thirds of a short run.
  const [a0, a1, b0, b1] =
    minutes >= 3
      ? [60_000, 120_000, run_ms - 60_000, run_ms]
      : [run_ms / 3, (2 * run_ms) / 3, (2 * run_ms) / 3, run_ms];
  // The heap after the full collections in the window; in a window without one, after the last one
  // before its end (what the process kept then). Without any (--no-gc-trace), the noisy heap in use.
  const liveIn = (id: number, from_ms: number, to_ms: number): number[] => {
    const inside = inWindow(live, id, from_ms, to_ms, (x) => x.mib);
    const before = inWindow(live, id, 0, from_ms, (x) => x.mib);
    return inside.length > 0 ? inside : before.slice(-1);
  };
  const useLive = ids.every((id) => liveIn(id, a0, a1).length > 0 && liveIn(id, b0, b1).length > 0);
  const heapOf = (id: number, from_ms: number, to_ms: number): number =>
    useLive ? median(liveIn(id, from_ms, to_ms)) : median(inWindow(samples, id, from_ms, to_ms, (x) => x.heap_mib));
  const controllers = ids.map((id) => {
    const a = heapOf(id, a0, a1);
    const b = heapOf(id, b0, b1);
    return { controller: id, early_mib: a, late_mib: b, ratio: b / a, pass: b <= a * ratioMax };
  });
  return { useLive, windows_ms: [a0, a1, b0, b1], controllers };
}

/** What the printed report says besides the per-minute figures and the heap check. */
export interface MixedRun {
  readonly run_s: number;
  readonly hosts: number;
  readonly slots: number;
  readonly workers: number;
  readonly retention_s: number;
  readonly loadavgAtStart: readonly number[];
  readonly ops: Readonly<Record<string, OpStats>>;
  readonly jobsSubmitted: number;
  readonly fleet: Readonly<
    Record<'starts' | 'finished' | 'statusAcks' | 'duplicates' | 'kills' | 'registrations', number>
  >;
  readonly watchUpdates: number;
  readonly jobsCleaned: number | null;
  readonly drained: boolean;
  readonly late: readonly [submitters: number, readers: number];
  readonly errors: number;
}

export function printReport(
  r: MixedRun,
  ids: readonly number[],
  perMinute: readonly MinuteFigures[],
  heap: HeapCheck,
  ratioMax: number,
): void {
  const { run_s, late } = r;
  log(
    `\nmixed load for ${fmt(run_s, 1)} s: ${r.hosts} simulated hosts x ${r.slots} slots, ${r.workers} real workers, ` +
      `retention ${r.retention_s} s; load average at start ${r.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')}, at end ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
  );
  log('operation             count     /s    p50 ms    p99 ms  errors');
  for (const [k, v] of Object.entries(r.ops)) {
    const all = v.all();
    log(
      `${k.padEnd(20)} ${String(v.count).padStart(7)} ${fmt(v.count / run_s, 1).padStart(6)} ${fmt(quantile(all, 0.5), 2).padStart(9)} ${fmt(quantile(all, 0.99), 2).padStart(9)}  ${v.errorCount()}${v.errors.size > 0 ? ` (${[...v.errors].map(([c, n]) => `${c}: ${n}`).join(', ')})` : ''}`,
    );
  }
  const fr = r.fleet;
  log(
    `jobs submitted ${r.jobsSubmitted} (${fmt(r.jobsSubmitted / run_s, 1)}/s); on the simulated hosts: ${fr['starts']} dispatched, ${fr['finished']} finished, ` +
      `${fr['statusAcks']} statuses acked, ${fr['duplicates']} duplicate starts, ${fr['kills']} kills, ${fr['registrations']} re-registrations; ` +
      `watch updates ${r.watchUpdates}; jobs cleaned by retention ${fmt(r.jobsCleaned ?? NaN)}; drained: ${r.drained ? 'yes' : 'NO'}; ` +
      `paced loops late: ${late[0]} submit, ${late[1]} read`,
  );
  log(
    `minute  submits  p50 ms  p99 ms  load   ${ids.map((id) => `live/used/RSS/CPU%/jobs c${id}`.padEnd(30)).join('')}`,
  );
  for (const m of perMinute)
    log(
      `${String(m.minute).padStart(6)} ${String(m.submits).padStart(8)} ${fmt(m.p50_ms, 2).padStart(7)} ${fmt(m.p99_ms, 2).padStart(7)} ${m.loadavg1.toFixed(1).padStart(5)}   ` +
        ids
          .map((id) =>
            `${fmt(m.liveHeap_mib[id]!, 1)}/${fmt(m.heap_mib[id]!)}/${fmt(m.rss_mib[id]!)}/${fmt(m.cpu[id]!)}/${fmt(m.jobs[id]!)}`.padEnd(
              30,
            ),
          )
          .join(''),
    );
  const window_s = (x: number): string => `${fmt(x / 1000)} s`;
  const [a0, a1, b0, b1] = heap.windows_ms;
  log(
    `steady heap: the median ${heap.useLive ? 'heap after a full collection' : 'heap in use'} of [${window_s(b0)}, ${window_s(b1)}) at most ${ratioMax}x that of [${window_s(a0)}, ${window_s(a1)}), per controller:`,
  );
  for (const h of heap.controllers)
    log(
      `  controller ${h.controller}: ${fmt(h.early_mib, 1)} -> ${fmt(h.late_mib, 1)} MiB (${fmt(h.ratio, 3)}x) ${h.pass ? 'PASS' : 'FAIL'}`,
    );
  log(`steady heap: ${heap.controllers.every((h) => h.pass) ? 'PASS' : 'FAIL'}; errors: ${r.errors}`);
}
