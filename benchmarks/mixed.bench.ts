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
import { parseLogLevel } from '../daemon/log.js';
import type { JobSpec } from '../api/protocol.js';
import { workerHost } from '../testing/e2e.js';
import { FleetProcs, simHostsYaml } from './fleet-procs.js';
import { ClusterSampler, metricValue, scrape } from './proc-sampler.js';
import { mixedChart } from './mixed-chart.js';
import { OpStats, paced, sleep } from './mixed-ops.js';
import { fmt, heapCheck, perMinuteFigures, printReport } from './mixed-report.js';
import { GcTrace, TRACE_GC_FLAG } from './gc-trace.js';

const PREFIX = 'sim';
/** The steady-heap criterion: the last minute's median heap at most this times the second minute's. */
const HEAP_STEADY_RATIO = 1.1;
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
  const op = (): OpStats => new OpStats(MINUTES, minuteOf);
  const ops = {
    submit: op(),
    'submit (array)': op(),
    'submit (dependency)': op(),
    'jobs.list': op(),
    'jobs.show': op(),
    'hosts.list': op(),
    'cluster.status': op(),
    watch: op(),
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
  loadStart = performance.now(); // the full collections' times count from here
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
  const runSamples = { ids, samples: s.samples, live };
  const perMinute = perMinuteFigures(MINUTES, runSamples, submitOps, loadPerMinute);
  const heap = heapCheck(RUN_MS, MINUTES, HEAP_STEADY_RATIO, runSamples);
  const errors = Object.values(ops).reduce((n, o) => n + o.errorCount(), 0);
  const fleetRun = {
    starts: loadEnd.starts - fleet0.starts,
    finished: loadEnd.finished - fleet0.finished,
    statusAcks: loadEnd.statusAcks - fleet0.statusAcks,
    duplicates: done.duplicates - fleet0.duplicates,
    kills: done.kills - fleet0.kills,
    registrations: done.registrations - fleet0.registrations,
  };
  const jobsCleaned = metricValue(leaderText, 'xce_jobs_cleaned_total');
  Object.assign(result, {
    run_s,
    loadavgAtEnd: loadavg(),
    loadavgPerMinute: loadPerMinute,
    ops: opSummary,
    watchUpdates,
    jobsSubmitted,
    pacedLate: { submitters: late[0], readers: late[1] },
    fleet: { ...fleetRun, afterDrain: done },
    drained: drained !== null,
    jobsCleaned,
    perMinute,
    heapCheck: {
      measure: heap.useLive ? 'heap after each full collection (--trace-gc)' : 'heap in use',
      windows_ms: heap.windows_ms,
      ratioMax: HEAP_STEADY_RATIO,
      controllers: heap.controllers,
    },
    fullCollections: Object.fromEntries(ids.map((id) => [id, live.filter((l) => l.mib[id] !== undefined).length])),
    errors,
  });
  printReport(
    {
      run_s,
      hosts: HOSTS,
      slots: SLOTS,
      workers: WORKERS,
      retention_s: RETENTION_S,
      loadavgAtStart: result['loadavgAtStart'] as number[],
      ops,
      jobsSubmitted,
      fleet: fleetRun,
      watchUpdates,
      jobsCleaned,
      drained: drained !== null,
      late,
      errors,
    },
    ids,
    perMinute,
    heap,
    HEAP_STEADY_RATIO,
  );
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
