// Sustained mixed load (issue 14): three real `xcectld` on 127.0.0.1, a fleet of simulated worker
// hosts (host-fleet.ts: real `/worker` connections, the jobs simulated) and optionally real `xcecd`
// workers, and for `--minutes` all of these at once:
//   - submitters at a steady rate: plain jobs, job arrays (`-J mixK[1-50]`) and dependencies
//     (`-w done(ID)`, `-w ended(mixK[*])`);
//   - readers (admin, who sees every job): `jobs.list`, `jobs.show` of a recent job, `hosts.list`, `cluster.status`;
//   - watchers: `XceClient.watch` on recent jobs until they end. The API has no server-side watch
//     or subscription: the client's watch polls `jobs.show` (linearizable) every 500 ms;
//   - the hosts: dispatches (starts), `started` and `finished` statuses, acks;
//   - retention: `finished_job_retention` is `--retention-s` (30 s), so the leader's CleanFacts run all along.
// Every `--sample-s` each controller's CPU and RSS (/proc) and JS heap in use and jobs (/metrics) are
// sampled, and its live heap is read after every full collection of its own (the controllers run
// with `--trace-gc`: gc-trace.ts).
// Reports op counts and rates, submit p50/p99 per minute, errors by code, and the steady-heap check:
// per controller, the median live heap (after its full collections) of the last minute at most
// HEAP_STEADY_RATIO times that of the second minute (runs under 3 minutes compare the last third with
// the second; a window without a full collection takes the last one before its end; with
// `--no-gc-trace`, the heap in use). JSON to `--out`, the chart (heaps and RSS over time, submit latency per minute) to
// `--svg`, both under the ignored benchmarks/results/tmp/ by default.
//
//   npm run bench:mixed -- [--minutes 10] [--hosts 200] [--workers 2] [--submit-rate 40] ...

import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { median, quantile } from '../harness/stats.js';
import { parseLogLevel } from '../daemon/log.js';
import { ApiError } from '../cli/client.js';
import type { JobSpec } from '../api/protocol.js';
import { workerHost } from '../testing/e2e.js';
import { FleetProcs, simHostsYaml } from './fleet-procs.js';
import { ClusterSampler, metricValue, scrape } from './proc-sampler.js';
import { mixedChart } from './mixed-chart.js';
import { GcTrace, TRACE_GC_FLAG } from './gc-trace.js';

const PREFIX = 'sim';
/** The steady-heap criterion: the last minute's median heap at most this times the second minute's. */
const HEAP_STEADY_RATIO = 1.1;
/** A paced loop that falls this far behind its schedule starts again from now (and counts it late). */
const LATE_RESET_MS = 1_000;
/** Every ARRAY_EVERY-th submit is a job array; every DEP_EVERY-th depends on the client's previous job. */
const ARRAY_EVERY = 25;
const DEP_EVERY = 10;
/** Recently submitted plain jobs the readers and watchers pick from. */
const RECENT_MAX = 512;
const WATCH_INTERVAL_MS = 500;
/** How long after the load stops the bench waits for the jobs left to end. */
const DRAIN_MS = 60_000;
/** Slots of each real worker (node01, node02). */
const WORKER_SLOTS = 4;

const cl = parseCommandLine(
  'mixed.bench',
  'npm run bench:mixed -- [--minutes 10] [--hosts 200] [--slots 8] [--workers 2] [--submit-rate 40] ' +
    '[--submitters 8] [--query-rate 20] [--readers 4] [--watchers 4] [--array-size 50] [--retention-s 30] ' +
    '[--sample-s 2] [--no-gc-trace] [--runtime-ms-min 500] [--runtime-ms-max 3000] [--log-level warn] [--out FILE] [--svg FILE]\n' +
    '  --minutes N      how long the mixed load runs (1 to 60; 1 for a quick check)\n' +
    '  --hosts N        simulated worker hosts (one fleet process per 1,000)\n' +
    '  --workers N      real xcecd workers as well (0 to 2: node01, node02, 4 slots each, --run-as-self)\n' +
    '  --submit-rate N  submits per second from all submitters (an array counts one)\n' +
    '  --query-rate N   reads per second from all readers (jobs.list, jobs.show, hosts.list, cluster.status)\n' +
    '  --no-gc-trace    controllers without --trace-gc (the steady-heap check then uses the noisy heap in use)',
  {
    ...stringOptions(
      'minutes',
      'hosts',
      'slots',
      'workers',
      'submit-rate',
      'submitters',
      'query-rate',
      'readers',
      'watchers',
      'array-size',
      'retention-s',
      'sample-s',
      'runtime-ms-min',
      'runtime-ms-max',
      'log-level',
      'out',
      'svg',
    ),
    'no-gc-trace': { type: 'boolean' },
  },
);
const MINUTES = cl.whole('minutes', 10, 1, 60);
const HOSTS = cl.whole('hosts', 200, 1, 20_000);
const SLOTS = cl.whole('slots', 8, 1, 1024);
const WORKERS = cl.whole('workers', 2, 0, 2);
const SUBMIT_RATE = cl.whole('submit-rate', 40, 1, 10_000);
const SUBMITTERS = cl.whole('submitters', 8, 1, 256);
const QUERY_RATE = cl.whole('query-rate', 20, 1, 10_000);
const READERS = cl.whole('readers', 4, 1, 256);
const WATCHERS = cl.whole('watchers', 4, 0, 256);
const ARRAY_SIZE = cl.whole('array-size', 50, 1, 10_000);
const RETENTION_S = cl.whole('retention-s', 30, 1, 86_400);
const SAMPLE_MS = cl.whole('sample-s', 2, 1, 60) * 1000;
const GC_TRACE = cl.values['no-gc-trace'] !== true;
const RUNTIME_MIN_MS = cl.whole('runtime-ms-min', 500, 0);
const RUNTIME_MAX_MS = cl.whole('runtime-ms-max', 3_000, RUNTIME_MIN_MS);
const OUT = cl.values.out ?? 'benchmarks/results/tmp/mixed.json';
const SVG = cl.values.svg ?? 'benchmarks/results/tmp/mixed.svg';
const RUN_MS = MINUTES * 60_000;

const log = (s: string): void => void process.stdout.write(`${s}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '-';

/** Counts, latencies per minute and errors by code of one kind of operation. */
class OpStats {
  readonly latencies: number[][] = Array.from({ length: MINUTES }, () => []);
  readonly errors = new Map<string, number>();
  count = 0;

  constructor(private readonly minuteOf: (t: number) => number) {}

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
async function paced(
  perSecond: number,
  loops: number,
  end: number,
  body: (loop: number) => Promise<void>,
): Promise<number> {
  const every_ms = (loops / perSecond) * 1000;
  let late = 0;
  const t0 = performance.now();
  loadStart = t0;
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

// The controllers print their collections (TestCluster passes these flags to every daemon it starts).
if (GC_TRACE) process.env['XCE_TEST_NODE_ARGS'] = `${process.env['XCE_TEST_NODE_ARGS'] ?? ''} ${TRACE_GC_FLAG}`.trim();
const cluster = await TestCluster.start({
  controllers: 3,
  schedulerGrace_ms: 1_000,
  controllerLogLevel: parseLogLevel(cl.values['log-level'], 'warn'),
  workers: ['node01', 'node02'].slice(0, WORKERS).map((h) => workerHost(h, WORKER_SLOTS)),
  edit: {
    // The real workers get few slots: their jobs end in milliseconds, so they would otherwise take most of them.
    'hosts.yaml': (t) =>
      simHostsYaml(
        PREFIX,
        HOSTS,
        SLOTS,
      )(t.replace(/name: (node0[12]), slots: \d+/g, `name: $1, slots: ${WORKER_SLOTS}`)),
    'xce.yaml': (t) => t.replace(/^finished_job_retention: .*$/m, `finished_job_retention: ${RETENTION_S}s`),
  },
});
const ids = [...cluster.controllers.keys()];
let fleet: FleetProcs | null = null;
let sampler: ClusterSampler | null = null;
let loadStart = performance.now();
const gcTrace = new GcTrace(() => performance.now() - loadStart);
for (const [id, p] of cluster.controllers) if (GC_TRACE && p.proc.stdout !== null) gcTrace.watch(id, p.proc.stdout);
const result: Record<string, unknown> = {
  minutes: MINUTES,
  hosts: HOSTS,
  slots: SLOTS,
  workers: WORKERS,
  submitRate: SUBMIT_RATE,
  submitters: SUBMITTERS,
  queryRate: QUERY_RATE,
  readers: READERS,
  watchers: WATCHERS,
  arraySize: ARRAY_SIZE,
  retention_s: RETENTION_S,
  loadavgAtStart: loadavg(),
};
const loadPerMinute: number[] = [];
try {
  const f = new FleetProcs(cluster, {
    prefix: PREFIX,
    hosts: HOSTS,
    slots: SLOTS,
    runtimeMin_ms: RUNTIME_MIN_MS,
    runtimeMax_ms: RUNTIME_MAX_MS,
  });
  fleet = f;
  await until('every simulated host registered', () => f.total().registered === HOSTS || undefined, 120_000, 100);
  log(
    `${HOSTS} simulated hosts and ${WORKERS} real workers registered; load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );

  const submitters = await Promise.all(Array.from({ length: SUBMITTERS }, () => cluster.client('alice')));
  const readers = await Promise.all(Array.from({ length: READERS }, () => cluster.client('admin')));
  const watchers = await Promise.all(Array.from({ length: WATCHERS }, () => cluster.client('alice')));
  // Every connection warmed up (leader redirect, JIT) before the clock starts.
  await Promise.all([...submitters, ...readers, ...watchers].map((c) => c.listJobs({ limit: 1 })));

  const s = new ClusterSampler(cluster, SAMPLE_MS);
  sampler = s;
  const t0 = performance.now();
  const end = t0 + RUN_MS;
  const minuteOf = (t: number): number => Math.min(MINUTES - 1, Math.max(0, Math.floor((t - t0) / 60_000)));
  const ops = {
    submit: new OpStats(minuteOf),
    'submit (array)': new OpStats(minuteOf),
    'submit (dependency)': new OpStats(minuteOf),
    'jobs.list': new OpStats(minuteOf),
    'jobs.show': new OpStats(minuteOf),
    'hosts.list': new OpStats(minuteOf),
    'cluster.status': new OpStats(minuteOf),
    watch: new OpStats(minuteOf),
  };
  let watchUpdates = 0;
  let jobsSubmitted = 0;
  let submitCount = 0;
  const recent: number[] = [];
  const lastOf: Array<number | undefined> = [];
  let lastArray: string | null = null;
  const fleet0 = f.total();
  s.start();
  const minuteTimer = setInterval(() => loadPerMinute.push(loadavg()[0]!), 60_000);
  const progress = setInterval(() => {
    const t = f.total();
    log(
      `${((performance.now() - t0) / 1000).toFixed(0)} s: ${jobsSubmitted} jobs submitted, ${t.starts - fleet0.starts} started and ` +
        `${t.finished - fleet0.finished} finished on simulated hosts; heap ${ids.map((id) => fmt(s.samples.at(-1)?.heap_mib[id] ?? NaN)).join(' / ')} MiB; ` +
        `load ${loadavg()[0]!.toFixed(1)}`,
    );
  }, 30_000);

  const base: JobSpec = { command: ['true'], resreq: 'select[ib]', cwd: cluster.dir };
  const submitting = paced(SUBMIT_RATE, SUBMITTERS, end, async (i) => {
    const k = submitCount++;
    const c = submitters[i]!;
    if (k % ARRAY_EVERY === 0) {
      const name = `mix${k}`;
      const r = await ops['submit (array)'].time(() => c.submit({ ...base, name: `${name}[1-${ARRAY_SIZE}]` }));
      if (r !== undefined) {
        jobsSubmitted += ARRAY_SIZE;
        lastArray = name;
      }
      return;
    }
    const prev = lastOf[i];
    const dependency =
      k % ARRAY_EVERY === Math.floor(ARRAY_EVERY / 2) && lastArray !== null
        ? `ended(${lastArray}[*])`
        : k % DEP_EVERY === Math.floor(DEP_EVERY / 2) && prev !== undefined
          ? `done(${prev})`
          : undefined;
    const stats = dependency !== undefined ? ops['submit (dependency)'] : ops.submit;
    const r = await stats.time(() => c.submit(dependency !== undefined ? { ...base, dependency } : base));
    if (r === undefined) return;
    jobsSubmitted++;
    lastOf[i] = r.jobId;
    recent.push(r.jobId);
    if (recent.length > RECENT_MAX) recent.shift();
  });
  const pick = (): number | undefined => recent[Math.floor(Math.random() * recent.length)];
  let readCount = 0;
  const reading = paced(QUERY_RATE, READERS, end, async (i) => {
    const c = readers[i]!;
    const k = readCount++ % 4;
    if (k === 0) await ops['jobs.list'].time(() => c.listJobs());
    else if (k === 1) {
      const id = pick();
      if (id !== undefined) await ops['jobs.show'].time(() => c.showJob(id));
    } else if (k === 2) await ops['hosts.list'].time(() => c.call('hosts.list', {}));
    else await ops['cluster.status'].time(() => c.call('cluster.status', {}));
  });
  const watching = Promise.all(
    watchers.map(async (c, i) => {
      while (performance.now() < end) {
        const id = recent[recent.length - 1 - i];
        if (id === undefined) {
          await sleep(WATCH_INTERVAL_MS);
          continue;
        }
        await ops.watch.time(async () => {
          const w = c.watch(id, { interval_ms: WATCH_INTERVAL_MS, timeout_ms: 120_000 });
          for (;;) {
            const n = await w.next();
            watchUpdates++;
            if (n.done === true) return;
            if (performance.now() >= end) return void (await w.return({}));
          }
        });
      }
    }),
  );
  const late = await Promise.all([submitting, reading]);
  await watching;
  const run_s = (performance.now() - t0) / 1000;
  clearInterval(minuteTimer);
  clearInterval(progress);
  const loadEnd = f.total();

  // The jobs left end (or the bench says how many did not).
  const drained = await until(
    'the jobs left to end',
    async () => {
      const text = await scrape(cluster, await cluster.waitForLeader());
      if (text === null) return undefined;
      const open = ['PEND', 'RUN', 'SUSP'].map((st) => metricValue(text, 'xce_jobs', `state="${st}"`) ?? 0);
      return open.every((n) => n === 0) && f.total().unacked === 0 ? text : undefined;
    },
    DRAIN_MS,
    500,
  ).catch((err: Error) => {
    log(`not drained: ${err.message}`);
    return null;
  });
  s.stop();
  const done = f.total();
  const leader = await cluster.waitForLeader();
  const leaderText = drained ?? (await scrape(cluster, leader)) ?? '';

  // Figures.
  const live = gcTrace.points();
  const opSummary = Object.fromEntries(Object.entries(ops).map(([k, v]) => [k, v.summary(run_s)]));
  const submitOps = [ops.submit, ops['submit (array)'], ops['submit (dependency)']];
  const perMinute = Array.from({ length: MINUTES }, (_, m) => {
    const lat = submitOps.flatMap((o) => o.latencies[m]!).sort((a, b) => a - b);
    const heaps = Object.fromEntries(
      ids.map((id) => [id, median(inWindow(s.samples, id, m * 60_000, (m + 1) * 60_000, (x) => x.heap_mib))]),
    );
    const rss = Object.fromEntries(
      ids.map((id) => [id, median(inWindow(s.samples, id, m * 60_000, (m + 1) * 60_000, (x) => x.rss_mib))]),
    );
    const liveHeap = Object.fromEntries(
      ids.map((id) => [id, median(inWindow(live, id, m * 60_000, (m + 1) * 60_000, (x) => x.mib))]),
    );
    const jobs = Object.fromEntries(
      ids.map((id) => [id, median(inWindow(s.samples, id, m * 60_000, (m + 1) * 60_000, (x) => x.jobs))]),
    );
    const cpu = Object.fromEntries(
      ids.map((id) => {
        const v = inWindow(s.samples, id, m * 60_000, (m + 1) * 60_000, (x) => x.cpu);
        return [id, v.reduce((a, b) => a + b, 0) / v.length];
      }),
    );
    return {
      minute: m + 1,
      submits: lat.length,
      p50_ms: quantile(lat, 0.5),
      p99_ms: quantile(lat, 0.99),
      liveHeap_mib: liveHeap,
      heap_mib: heaps,
      rss_mib: rss,
      jobs,
      cpu,
      loadavg1: loadPerMinute[m] ?? loadavg()[0]!,
    };
  });
  // The steady-heap windows: minute 2 and the last minute, or the second and last thirds of a short run.
  const [a0, a1, b0, b1] =
    MINUTES >= 3
      ? [60_000, 120_000, RUN_MS - 60_000, RUN_MS]
      : [RUN_MS / 3, (2 * RUN_MS) / 3, (2 * RUN_MS) / 3, RUN_MS];
  // The heap after the full collections in the window; in a window without one, after the last one
  // before its end (what the process kept then). Without any (--no-gc-trace), the noisy heap in use.
  const liveIn = (id: number, from_ms: number, to_ms: number): number[] => {
    const inside = inWindow(live, id, from_ms, to_ms, (x) => x.mib);
    const before = inWindow(live, id, 0, from_ms, (x) => x.mib);
    return inside.length > 0 ? inside : before.slice(-1);
  };
  const useLive = ids.every((id) => liveIn(id, a0, a1).length > 0 && liveIn(id, b0, b1).length > 0);
  const heapOf = (id: number, from_ms: number, to_ms: number): number =>
    useLive ? median(liveIn(id, from_ms, to_ms)) : median(inWindow(s.samples, id, from_ms, to_ms, (x) => x.heap_mib));
  const heapCheck = ids.map((id) => {
    const a = heapOf(id, a0, a1);
    const b = heapOf(id, b0, b1);
    return { controller: id, early_mib: a, late_mib: b, ratio: b / a, pass: b <= a * HEAP_STEADY_RATIO };
  });
  const errors = Object.values(ops).reduce((n, o) => n + o.errorCount(), 0);
  Object.assign(result, {
    run_s,
    loadavgAtEnd: loadavg(),
    loadavgPerMinute: loadPerMinute,
    ops: opSummary,
    watchUpdates,
    jobsSubmitted,
    pacedLate: { submitters: late[0], readers: late[1] },
    fleet: {
      starts: loadEnd.starts - fleet0.starts,
      finished: loadEnd.finished - fleet0.finished,
      statusAcks: loadEnd.statusAcks - fleet0.statusAcks,
      duplicates: done.duplicates - fleet0.duplicates,
      kills: done.kills - fleet0.kills,
      registrations: done.registrations - fleet0.registrations,
      afterDrain: done,
    },
    drained: drained !== null,
    jobsCleaned: metricValue(leaderText, 'xce_jobs_cleaned_total'),
    perMinute,
    heapCheck: {
      measure: useLive ? 'heap after each full collection (--trace-gc)' : 'heap in use',
      windows_ms: [a0, a1, b0, b1],
      ratioMax: HEAP_STEADY_RATIO,
      controllers: heapCheck,
    },
    fullCollections: Object.fromEntries(ids.map((id) => [id, live.filter((l) => l.mib[id] !== undefined).length])),
    errors,
  });

  log(
    `\nmixed load for ${fmt(run_s, 1)} s: ${HOSTS} simulated hosts x ${SLOTS} slots, ${WORKERS} real workers, ` +
      `retention ${RETENTION_S} s; load average at start ${(result['loadavgAtStart'] as number[]).map((x) => x.toFixed(1)).join(' ')}, at end ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
  );
  log('operation             count     /s    p50 ms    p99 ms  errors');
  for (const [k, v] of Object.entries(ops)) {
    const all = v.all();
    log(
      `${k.padEnd(20)} ${String(v.count).padStart(7)} ${fmt(v.count / run_s, 1).padStart(6)} ${fmt(quantile(all, 0.5), 2).padStart(9)} ${fmt(quantile(all, 0.99), 2).padStart(9)}  ${v.errorCount()}${v.errors.size > 0 ? ` (${[...v.errors].map(([c, n]) => `${c}: ${n}`).join(', ')})` : ''}`,
    );
  }
  const fr = result['fleet'] as Record<string, number>;
  log(
    `jobs submitted ${jobsSubmitted} (${fmt(jobsSubmitted / run_s, 1)}/s); on the simulated hosts: ${fr['starts']} dispatched, ${fr['finished']} finished, ` +
      `${fr['statusAcks']} statuses acked, ${fr['duplicates']} duplicate starts, ${fr['kills']} kills, ${fr['registrations']} re-registrations; ` +
      `watch updates ${watchUpdates}; jobs cleaned by retention ${fmt(result['jobsCleaned'] as number)}; drained: ${drained !== null ? 'yes' : 'NO'}; ` +
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
  log(
    `steady heap: the median ${useLive ? 'heap after a full collection' : 'heap in use'} of [${window_s(b0)}, ${window_s(b1)}) at most ${HEAP_STEADY_RATIO}x that of [${window_s(a0)}, ${window_s(a1)}), per controller:`,
  );
  for (const h of heapCheck)
    log(
      `  controller ${h.controller}: ${fmt(h.early_mib, 1)} -> ${fmt(h.late_mib, 1)} MiB (${fmt(h.ratio, 3)}x) ${h.pass ? 'PASS' : 'FAIL'}`,
    );
  log(`steady heap: ${heapCheck.every((h) => h.pass) ? 'PASS' : 'FAIL'}; errors: ${errors}`);
  result['samples'] = s.samples;
  result['liveHeap'] = live;
} finally {
  sampler?.stop();
  fleet?.stop();
  await cluster.stop();
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(result, null, 2));
mkdirSync(dirname(SVG), { recursive: true });
const perMinute = (result['perMinute'] ?? []) as Array<{ minute: number; p50_ms: number; p99_ms: number }>;
writeFileSync(SVG, mixedChart(`Mixed load, ${HOSTS} hosts`, sampler?.samples ?? [], gcTrace.points(), ids, perMinute));
log(`wrote ${OUT} and ${SVG}`);
