// The retention soak's pipeline (soak.bench.ts): jobs through the state machine in process, with the
// facts the leader would produce: a submit from one of CLIENTS client sessions, the dispatch with its
// frozen record, started and finished from a simulated worker; every CLEAN_INTERVAL_MS of simulated
// time the leader's retention round (statemachine/retention.ts `cleanCandidates`) in one CleanFact,
// the removed records to a real accounting store in a temporary directory. It counts the time of
// what the bench measures (submit apply, clean scans, store waits) per segment.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { AccountingStore } from '../daemon/accounting/store.js';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody, JobSpec } from '../statemachine/facts.js';
import { liveMerge } from '../statemachine/jobs.js';
import { cleanCandidates } from '../statemachine/retention.js';
import { emptyState, type ControllerState, type Job } from '../statemachine/state.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import { caseJobSpec } from './case-job.js';

export const T0_MS = Date.UTC(2026, 0, 5, 0, 0, 0);
export const SUBMITS_PER_S = 500;
const TICK_MS = 100;
export const SUBMITS_PER_TICK = (SUBMITS_PER_S * TICK_MS) / 1000;
export const RETENTION_S = 60;
const CLEAN_INTERVAL_MS = 500; // daemon/retention-loop.ts CLEAN_INTERVAL_MS
/** The accounting store's writes are awaited every this many CleanFacts (the snapshotter's flush). */
const FLUSH_EVERY_CLEANS = 20;
const CLIENTS = 1000;
const HOSTS = ['n1', 'n2', 'n3'];

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

export const nowNs = (): bigint => process.hrtime.bigint();

export class Soak {
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
  /** Apply time of the SubmitFacts of the current tick, and of each tick of the segment (ns). */
  tickSubmitNs = 0n;
  readonly tickSubmit: number[] = [];
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
    const applyNs = nowNs() - t;
    this.submitNs += applyNs;
    this.tickSubmitNs += applyNs;
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
    this.tickSubmit.length = 0;
    this.cleanScans = 0;
  }
}
