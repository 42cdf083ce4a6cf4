// The retention soak (issue 12): millions of jobs submitted, dispatched, started and finished through
// the state machine in process, as the leader would produce the facts (submit from client sessions,
// dispatch with the frozen record, started and finished from a simulated worker), with finished jobs
// leaving the state by CleanFacts chosen as the leader's retention loop chooses them
// (statemachine/retention.ts `cleanCandidates` every 500 ms of simulated time, retention 60 s), and
// their records written to a real accounting store (daemon/accounting/) in a temporary directory.
// Simulated time: 500 submits per simulated second, each job running 5 to 15 simulated seconds.
//
// Measured: the heap after a full GC and the snapshot's size every 1% of the jobs; per million jobs
// (per fifth of them when fewer than 5 million) the rate of applied submits (submits per second of
// apply time), the rate of the whole in-process pipeline, the leader's clean scan; at the end the
// time of `xceadmin accounting report` over the whole history on the code path the API uses
// (daemon/accounting/report.ts on a reopened store), in total and --by user|app|queue.
//
//   npm run bench:soak -- [--jobs N] [--out DIR]
//
// Results: DIR/soak-<jobs>.json and DIR/soak-<jobs>.svg (default DIR benchmarks/results/tmp/, ignored
// by git). Figures in benchmarks/README.md ("Retention soak").

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

import { AccountingStore } from '../daemon/accounting/store.js';
import { accountingReport, type ReportBy } from '../daemon/accounting/report.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody, JobSpec } from '../statemachine/facts.js';
import { liveMerge } from '../statemachine/jobs.js';
import { cleanCandidates } from '../statemachine/retention.js';
import { snapshot } from '../statemachine/snapshot.js';
import { emptyState, type ControllerState, type Job } from '../statemachine/state.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import { caseJobSpec } from './case-job.js';
import { soakChart, type SoakSample as Sample } from './soak-chart.js';

const cl = parseCommandLine(
  'soak.bench',
  'npm run bench:soak -- [--jobs N] [--out DIR]\n' +
    '  --jobs N    jobs submitted and finished (default 200,000; the issue asks for 5,000,000)\n' +
    '  --out DIR   where the JSON and SVG go (default benchmarks/results/tmp/)',
  stringOptions('jobs', 'out'),
);
const JOBS = cl.whole('jobs', 200_000, 1_000);
const OUT_DIR = cl.values.out ?? join('benchmarks', 'results', 'tmp');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) cl.fail('run node with --expose-gc (npm run bench:soak does)');

const T0_MS = Date.UTC(2026, 0, 5, 0, 0, 0);
const SUBMITS_PER_S = 500;
const TICK_MS = 100;
const SUBMITS_PER_TICK = (SUBMITS_PER_S * TICK_MS) / 1000;
const RETENTION_S = 60;
const CLEAN_INTERVAL_MS = 500; // daemon/retention-loop.ts CLEAN_INTERVAL_MS
/** The accounting store's writes are awaited every this many CleanFacts (the snapshotter's flush). */
const FLUSH_EVERY_CLEANS = 20;
const SAMPLES = 100;
const SEGMENT_JOBS = JOBS >= 5_000_000 ? 1_000_000 : Math.ceil(JOBS / 5);
const CLIENTS = 1000;
const HOSTS = ['n1', 'n2', 'n3'];
const MIB = 1024 * 1024;

/** Who submits what: users, profiles and queues mixed so that the report has several rows. */
const WHO = [
  { user: 'alice', profile: 'python', queue: 'normal' },
  { user: 'alice', profile: 'serial', queue: 'night' },
  { user: 'bob', profile: 'serial', queue: 'normal' },
  { user: 'bob', profile: 'python', queue: 'night' },
  { user: 'carol', profile: 'serial', queue: 'normal' },
] as const;

function spec(i: number): JobSpec {
  return caseJobSpec(i, { resreq: null, tasks: 1, jobName: `soak-${i}` });
}

interface Segment {
  readonly fromJob: number;
  readonly toJob: number;
  /** Submits per second of time spent in apply of SubmitFacts (decode + apply). */
  readonly submitApplyRate_per_s: number;
  /** Jobs per second of the whole in-process pipeline (the four facts, the leader's work, cleans), store waits excluded. */
  readonly pipelineRate_per_s: number;
  /** Jobs per CPU-second of this process (GC threads and the store's writes included): steadier on a shared machine. */
  readonly cpuRate_per_s: number;
  /** Jobs per second of wall time, the waits for the accounting store included. */
  readonly wallRate_per_s: number;
  readonly storeWait_s: number;
  /** The leader's scan for due jobs (cleanCandidates): mean and max per call. */
  readonly cleanScanMean_ms: number;
  readonly cleanScanMax_ms: number;
}

const nowNs = (): bigint => process.hrtime.bigint();
const ms = (ns: bigint): number => Number(ns) / 1e6;
const round = (x: number, d = 1): number => Math.round(x * 10 ** d) / 10 ** d;

class Soak {
  readonly state: ControllerState = emptyState();
  private index = 0;
  private timeMs = T0_MS;
  private readonly seqs = new Array<number>(CLIENTS).fill(0);
  /** Jobs running, by the simulated second they finish in. */
  private readonly finishing = new Map<number, number[]>();
  private cleans = 0;
  readonly storeDir = mkdtempSync(join(tmpdir(), 'xce-soak-'));
  store!: AccountingStore;
  // per-segment counters
  submitNs = 0n;
  storeWaitNs = 0n;
  cleanScanNs = 0n;
  cleanScanMaxNs = 0n;
  cleanScans = 0;
  declined = 0;

  fact(body: FactBody, client: number | null = null): ApplyResult {
    const sequence = client === null ? 0 : ++this.seqs[client]!;
    const clientId = client === null ? null : `c-${client.toString(16).padStart(24, '0')}`;
    return apply(this.state, encodeFact({ clientId, sequence, timeMs: this.timeMs, body }), ++this.index);
  }

  async open(): Promise<void> {
    this.store = await AccountingStore.open(this.storeDir);
    const files = testClusterFiles({ slots: 10_000, xceExtra: `finished_job_retention: ${RETENTION_S}s\n` });
    const r = this.fact({ kind: 'config', files, user: null });
    if (r.kind !== 'configApplied') throw new Error(`the soak's configuration is refused: ${JSON.stringify(r)}`);
  }

  /** Job i: submitted by its session, dispatched by the leader, started by the simulated worker. */
  submitAndStart(i: number): void {
    const who = WHO[i % WHO.length]!;
    const t = nowNs();
    const r = this.fact(
      { kind: 'submit', ...who, spec: spec(i), profileRequested: null, dependency: null, dependencyKill: false },
      i % CLIENTS,
    );
    this.submitNs += nowNs() - t;
    if (r.kind !== 'submitted') throw new Error(`submit ${i} refused: ${JSON.stringify(r)}`);
    const job = this.state.jobs.get(r.jobId)!;
    const m = liveMerge(this.state.config!.cluster, job.profile, job.spec);
    if (!m.ok) throw new Error(m.reason);
    const placement = [{ host: HOSTS[i % HOSTS.length]!, tasks: m.effective.tasks }];
    const d = this.fact({
      kind: 'dispatch',
      jobId: job.id,
      runNumber: 1,
      placement,
      record: buildDispatchRecord(m.effective, m.hash, placement),
      schedulerHash: m.hash,
    });
    if (d.kind !== 'dispatched') throw new Error(`dispatch of job ${job.id} declined: ${JSON.stringify(d)}`);
    this.fact({
      kind: 'status',
      jobId: job.id,
      runNumber: 1,
      status: { type: 'started', pid: 1000 + (i % 60_000), timeMs: this.timeMs },
    });
    const endS = Math.floor(this.timeMs / 1000) + 5 + (i % 11);
    let at = this.finishing.get(endS);
    if (at === undefined) this.finishing.set(endS, (at = []));
    at.push(job.id);
  }

  /** The simulated worker reports the jobs whose run ends by now: every 7th exits 1 (EXIT). */
  finishDue(): void {
    const s = Math.floor(this.timeMs / 1000);
    const ids = this.finishing.get(s);
    if (ids === undefined) return;
    this.finishing.delete(s);
    for (const id of ids) {
      const exitCode = id % 7 === 0 ? 1 : 0;
      const status = { type: 'finished' as const, exitCode, signal: null, reason: null, timeMs: this.timeMs };
      this.fact({ kind: 'status', jobId: id, runNumber: 1, status });
    }
  }

  /** The leader's retention round: the due jobs in one CleanFact, their records to the store. */
  async clean(): Promise<void> {
    const t = nowNs();
    const ids = cleanCandidates(this.state, this.timeMs);
    const scan = nowNs() - t;
    this.cleanScanNs += scan;
    if (scan > this.cleanScanMaxNs) this.cleanScanMaxNs = scan;
    this.cleanScans++;
    if (ids.length === 0) return;
    const removed: Job[] = [];
    const index = this.index + 1;
    const r = apply(
      this.state,
      encodeFact({ clientId: null, sequence: 0, timeMs: this.timeMs, body: { kind: 'clean', jobIds: ids } }),
      ++this.index,
      removed,
    );
    if (r.kind !== 'cleaned' || r.count !== ids.length) throw new Error(`clean at ${index}: ${JSON.stringify(r)}`);
    this.store.record(index, this.timeMs, removed);
    if (++this.cleans % FLUSH_EVERY_CLEANS === 0) await this.flush();
  }

  async flush(): Promise<void> {
    const t = nowNs();
    await this.store.flushedThrough(this.index);
    this.storeWaitNs += nowNs() - t;
  }

  /** Advances simulated time by one tick: finishes, and a clean round every CLEAN_INTERVAL_MS. */
  async tick(): Promise<void> {
    this.timeMs += TICK_MS;
    this.finishDue();
    if ((this.timeMs - T0_MS) % CLEAN_INTERVAL_MS === 0) await this.clean();
  }

  get simTimeMs(): number {
    return this.timeMs;
  }

  /** Lets every job run out and leave (the state ends with no finished job). */
  async drain(): Promise<void> {
    const until = this.timeMs + (16 + RETENTION_S + 1) * 1000;
    while (this.timeMs < until) await this.tick();
    await this.flush();
  }

  resetSegment(): void {
    this.submitNs = this.storeWaitNs = this.cleanScanNs = this.cleanScanMaxNs = 0n;
    this.cleanScans = 0;
  }
}

function sample(s: Soak, jobs: number): Sample {
  gc!();
  const mem = process.memoryUsage();
  const t = nowNs();
  const bytes = snapshot(s.state);
  const snapshot_ms = ms(nowNs() - t);
  return {
    jobs,
    heap_mib: round(mem.heapUsed / MIB),
    rss_mib: round(mem.rss / MIB),
    snapshot_mib: round(bytes.length / MIB, 2),
    snapshot_ms: round(snapshot_ms),
    jobsInState: s.state.jobs.size,
    jobsCleaned: s.state.jobsCleaned,
  };
}

async function timeReport(store: AccountingStore, sinceMs: number, untilMs: number, by: ReportBy | null) {
  const t = nowNs();
  const rows = await accountingReport(store, sinceMs, untilMs, by);
  return { by: by ?? '(total)', ms: round(ms(nowNs() - t)), rows };
}

/** Submits JOBS jobs, sampling heap and snapshot every 1% and closing a segment every SEGMENT_JOBS. */
async function run(s: Soak): Promise<{ samples: Sample[]; segments: Segment[]; run_s: number }> {
  const samples: Sample[] = [sample(s, 0)];
  const segments: Segment[] = [];
  const sampleEvery = Math.max(1, Math.floor(JOBS / SAMPLES));
  const started = nowNs();
  let segStart = nowNs();
  let segFrom = 0;
  let sampleNs = 0n;
  let segCpu = process.cpuUsage();
  let sampleCpuS = 0;
  for (let i = 0; i < JOBS;) {
    for (let k = 0; k < SUBMITS_PER_TICK && i < JOBS; k++) s.submitAndStart(i++);
    await s.tick();
    if (i % sampleEvery === 0 || i === JOBS) {
      const t = nowNs();
      const c = process.cpuUsage();
      if (samples[samples.length - 1]!.jobs !== i) samples.push(sample(s, i));
      sampleNs += nowNs() - t;
      const dc = process.cpuUsage(c);
      sampleCpuS += (dc.user + dc.system) / 1e6;
    }
    if (i - segFrom >= SEGMENT_JOBS || i === JOBS) {
      const cpu = process.cpuUsage(segCpu);
      const seg = segmentOf(s, segFrom, i, nowNs() - segStart - sampleNs, (cpu.user + cpu.system) / 1e6 - sampleCpuS);
      segments.push(seg);
      process.stderr.write(`soak: ${JSON.stringify({ ...seg, last: samples[samples.length - 1] })}\n`);
      s.resetSegment();
      segFrom = i;
      segStart = nowNs();
      segCpu = process.cpuUsage();
      sampleNs = 0n;
      sampleCpuS = 0;
    }
  }
  return { samples, segments, run_s: round(ms(nowNs() - started) / 1000) };
}

function segmentOf(s: Soak, fromJob: number, toJob: number, wallNs: bigint, cpu_s: number): Segment {
  const n = toJob - fromJob;
  return {
    fromJob,
    toJob,
    submitApplyRate_per_s: Math.round(n / (ms(s.submitNs) / 1000)),
    pipelineRate_per_s: Math.round(n / (ms(wallNs - s.storeWaitNs) / 1000)),
    cpuRate_per_s: Math.round(n / cpu_s),
    wallRate_per_s: Math.round(n / (ms(wallNs) / 1000)),
    storeWait_s: round(ms(s.storeWaitNs) / 1000),
    cleanScanMean_ms: round(ms(s.cleanScanNs) / Math.max(1, s.cleanScans), 2),
    cleanScanMax_ms: round(ms(s.cleanScanMaxNs), 2),
  };
}

/**
 * `xceadmin accounting report` over the whole history on the API's code path, on the store reopened
 * as a controller opens it at start: in total, --by user|app|queue, again (warm), and over a window
 * whose ends fall inside minutes (read from single job summaries).
 */
async function reports(dir: string, endMs: number) {
  const store = await AccountingStore.open(dir);
  try {
    const stats = await store.stats();
    const byKinds = [];
    for (const by of [null, 'user', 'app', 'queue'] as const)
      byKinds.push(await timeReport(store, T0_MS, endMs + 1, by));
    const again = await timeReport(store, T0_MS, endMs + 1, null);
    const odd = await timeReport(store, T0_MS + 12_345, endMs - 23_456, 'user');
    const totalJobs = byKinds[0]!.rows[0]?.jobs ?? 0;
    if (totalJobs !== JOBS) throw new Error(`the report counts ${totalJobs} jobs, not ${JOBS}`);
    return {
      store: stats,
      report_ms: byKinds.map((r) => ({ by: r.by, ms: r.ms, rows: r.rows.length })),
      reportAgain_ms: again.ms,
      reportOddWindow_ms: odd.ms,
      reportTotal: byKinds[0]!.rows,
    };
  } finally {
    await store.close();
  }
}

async function main(): Promise<void> {
  const s = new Soak();
  try {
    await s.open();
    const { samples, segments, run_s } = await run(s);
    await s.drain();
    const drained = sample(s, JOBS);
    await s.store.close();
    const history = await reports(s.storeDir, s.simTimeMs);
    const first = segments[0]!;
    const last = segments[segments.length - 1]!;
    const result = {
      bench: 'soak',
      jobs: JOBS,
      node: process.version,
      simulated: {
        submitsPerS: SUBMITS_PER_S,
        retention_s: RETENTION_S,
        run_s: '5..15',
        span_s: (s.simTimeMs - T0_MS) / 1000,
      },
      run_s,
      maxHeap_mib: Math.max(...samples.map((x) => x.heap_mib)),
      maxRss_mib: Math.max(...samples.map((x) => x.rss_mib)),
      snapshot_mib: {
        min: Math.min(...samples.slice(1).map((x) => x.snapshot_mib)),
        max: Math.max(...samples.slice(1).map((x) => x.snapshot_mib)),
      },
      submitApplyRateDrop_pct: round((1 - last.submitApplyRate_per_s / first.submitApplyRate_per_s) * 100),
      pipelineRateDrop_pct: round((1 - last.pipelineRate_per_s / first.pipelineRate_per_s) * 100),
      cpuRateDrop_pct: round((1 - last.cpuRate_per_s / first.cpuRate_per_s) * 100),
      loadAverage: loadavg().map((x) => round(x, 2)),
      drained,
      ...history,
    };
    mkdirSync(OUT_DIR, { recursive: true });
    const base = join(OUT_DIR, `soak-${JOBS}`);
    writeFileSync(`${base}.json`, JSON.stringify({ ...result, segments, samples }, null, 2) + '\n');
    writeFileSync(`${base}.svg`, soakChart(JOBS, samples));
    process.stdout.write(`${JSON.stringify({ ...result, segments }, null, 2)}\nwrote ${base}.json and ${base}.svg\n`);
  } finally {
    rmSync(s.storeDir, { recursive: true, force: true });
  }
}

await main();
