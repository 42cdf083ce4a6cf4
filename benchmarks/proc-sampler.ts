// Samples the controllers of a TestCluster while a benchmark runs: CPU time and RSS of each
// process from /proc (no help from the process), the JS heap and the scheduler's pass histogram
// from its /metrics, and which controller leads. Every sample is kept, for the charts.

import { readFileSync } from 'node:fs';
import type { TestCluster } from '../harness/cluster.js';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const USER_HZ = 100;
const SCRAPE_TIMEOUT_MS = 2_000;

export interface Sample {
  /** ms since the sampler started. */
  readonly t_ms: number;
  readonly leader: number;
  /** Per controller id: CPU % over the last interval (100 = one core), RSS and heap in MiB. */
  readonly cpu: Record<number, number>;
  readonly rss_mib: Record<number, number>;
  readonly heap_mib: Record<number, number>;
  /** Per controller: jobs in its state (`xce_jobs`, every state). */
  readonly jobs: Record<number, number>;
}

/** The scheduler-pass histogram of one controller's /metrics (cumulative since it started). */
export interface PassHistogram {
  readonly count: number;
  readonly sum_s: number;
  /** Upper bound (s) → passes at most that long. */
  readonly buckets: ReadonlyArray<readonly [number, number]>;
}

/** CPU seconds (user + system) of a process, or null when it is gone. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return null;
  }
}

/** Resident memory of a process in MiB, or null when it is gone. */
export function rssMib(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** One metric's value in Prometheus text (the first series whose name and labels match). */
export function metricValue(text: string, name: string, labels = ''): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels !== '' && !rest.includes(labels)) continue;
    const v = Number(rest.slice(rest.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) return v;
  }
  return null;
}

/** The sum of every series of one metric in Prometheus text (0 when it has none). */
export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) {
    const v = Number(m[1]);
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

export function passHistogram(text: string): PassHistogram {
  const buckets: Array<[number, number]> = [];
  for (const m of text.matchAll(/^xce_scheduler_pass_seconds_bucket\{le="([^"]+)"[^}]*\} (\S+)$/gm))
    buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  return {
    count: metricValue(text, 'xce_scheduler_pass_seconds_count') ?? 0,
    sum_s: metricValue(text, 'xce_scheduler_pass_seconds_sum') ?? 0,
    buckets,
  };
}

/** Passes between two scrapes: how many, mean, and the bucket bound under which fraction q fell. */
export function passesBetween(
  a: PassHistogram,
  b: PassHistogram,
  qs: readonly number[] = [0.5, 0.99],
): { passes: number; mean_ms: number; quantiles_ms: number[] } {
  const passes = b.count - a.count;
  const mean_ms = passes > 0 ? ((b.sum_s - a.sum_s) / passes) * 1000 : NaN;
  const quantiles_ms = qs.map((q) => {
    for (const [le, n] of b.buckets) {
      const before = a.buckets.find((x) => x[0] === le)?.[1] ?? 0;
      if (n - before >= q * passes) return le * 1000;
    }
    return NaN;
  });
  return { passes, mean_ms, quantiles_ms };
}

export async function scrape(cluster: TestCluster, id: number): Promise<string | null> {
  try {
    return await cluster.getText(id, '/metrics', SCRAPE_TIMEOUT_MS);
  } catch {
    return null;
  }
}

export class ClusterSampler {
  readonly samples: Sample[] = [];
  private readonly t0 = performance.now();
  private last = new Map<number, { cpu_s: number; at_ms: number }>();
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  /** The leader at the last sample (0 while none is known). */
  leader = 0;

  constructor(
    private readonly cluster: TestCluster,
    private readonly every_ms: number,
  ) {}

  /** ms since the sampler started. */
  now(): number {
    return performance.now() - this.t0;
  }

  start(): void {
    this.timer = setInterval(() => void this.sample(), this.every_ms);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const at_ms = this.now();
      const cpu: Record<number, number> = {};
      const rss: Record<number, number> = {};
      const heap: Record<number, number> = {};
      const jobs: Record<number, number> = {};
      for (const [id, p] of this.cluster.controllers) {
        const pid = p.proc.pid;
        const s = pid === undefined ? null : cpuSeconds(pid);
        const m = pid === undefined ? null : rssMib(pid);
        if (s === null || m === null) continue;
        const prev = this.last.get(id);
        if (prev !== undefined && at_ms > prev.at_ms)
          cpu[id] = ((s - prev.cpu_s) / ((at_ms - prev.at_ms) / 1000)) * 100;
        this.last.set(id, { cpu_s: s, at_ms });
        rss[id] = m;
      }
      await Promise.all(
        [...this.cluster.controllers.keys()].map(async (id) => {
          const text = await scrape(this.cluster, id);
          const used = text === null ? null : metricValue(text, 'xce_process_nodejs_heap_size_used_bytes');
          if (used !== null) heap[id] = used / 1024 ** 2;
          if (text !== null) jobs[id] = metricSum(text, 'xce_jobs');
        }),
      );
      this.leader = await this.cluster.leader();
      this.samples.push({ t_ms: at_ms, leader: this.leader, cpu, rss_mib: rss, heap_mib: heap, jobs });
    } finally {
      this.busy = false;
    }
  }

  /**
   * Mean CPU %, RSS and heap of the leader (whichever controller led at each sample; samples with
   * no leader are left out) over the samples from `from_ms` to `to_ms`.
   */
  mean(from_ms: number, to_ms = Infinity): { cpu: number; rss_mib: number; heap_mib: number } {
    const s = this.samples.filter((x) => x.t_ms >= from_ms && x.t_ms <= to_ms && x.leader > 0);
    const avg = (f: (x: Sample) => number | undefined): number => {
      const v = s.map(f).filter((x): x is number => x !== undefined);
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
    };
    return {
      cpu: avg((x) => x.cpu[x.leader]),
      rss_mib: avg((x) => x.rss_mib[x.leader]),
      heap_mib: avg((x) => x.heap_mib[x.leader]),
    };
  }
}
