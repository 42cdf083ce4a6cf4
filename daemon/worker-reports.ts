// What the leader makes of a worker's report (a status or an ack) before it acts on it: who may
// report on a run (judgeReport), what a report from a host that does not run the job costs
// (ForeignReports: dropped, counted, logged once), and the JobStatus a status frame proposes.

import type { Logger } from './log.js';
import type { StatusFrame } from './worker-protocol.js';
import type { HubContext } from './hub-context.js';
import type { FactBody, JobStatus, JobStatusFact } from '../statemachine/facts.js';
import type { ControllerState } from '../statemachine/state.js';

/** (host, job, run) reports from a host that does not run the job, remembered so that each is logged once. */
export const FOREIGN_REPORTS_LOGGED_MAX = 4_096;

/**
 * Who may report on (job, run), as the applied state tells:
 *  - `head`: `host` is the head host of the job's current run;
 *  - `foreign`: the run is the job's current one, dispatched to another host (`head`);
 *  - `stale`: a run that can never be current again (an older run, or the current one after a
 *    requeue or restart): apply would ignore it;
 *  - `unknown`: a job or run this state has not applied yet (a new leader still applying its log).
 */
export type ReportJudgement =
  | { readonly kind: 'head' }
  | { readonly kind: 'foreign'; readonly head: string }
  | { readonly kind: 'stale' }
  | { readonly kind: 'unknown' };

/** Who may report on (jobId, run) by the applied `state` (see ReportJudgement). */
export function judgeReport(state: ControllerState, host: string, jobId: number, run: number): ReportJudgement {
  const job = state.jobs.get(jobId);
  if (job === undefined) return jobId < state.nextJobId ? { kind: 'stale' } : { kind: 'unknown' };
  if (run > job.runNumber) return { kind: 'unknown' };
  if (run < job.runNumber || job.record === null) return { kind: 'stale' };
  const head = job.record.hosts[0]?.host;
  if (head === undefined) return { kind: 'stale' };
  return head === host ? { kind: 'head' } : { kind: 'foreign', head };
}

/** Reports from a host that does not run the job's current run: dropped, counted, logged once per (host, job, run, kind). */
export class ForeignReports {
  /** Statuses dropped because their host does not run the job's current run. */
  statuses = 0;
  /** Start/kill acks dropped because their host does not run the job's current run. */
  acks = 0;
  /** Foreign reports already logged (`host job.run kind`), oldest first. */
  private readonly logged = new Set<string>();

  constructor(private readonly log: Logger) {}

  drop(what: 'status' | 'ack', host: string, head: string, jobId: number, run: number, kind: string): void {
    if (what === 'status') this.statuses++;
    else this.acks++;
    const key = `${host} ${jobId}.${run} ${what} ${kind}`;
    if (this.logged.has(key)) return;
    this.logged.add(key);
    while (this.logged.size > FOREIGN_REPORTS_LOGGED_MAX)
      this.logged.delete(this.logged.values().next().value as string);
    this.log.warn(`dropped ${what === 'ack' ? 'an ack' : 'a status'} from a host that does not run the job`, {
      host,
      headHost: head,
      job: jobId,
      run,
      kind,
      reason: `job ${jobId} run ${run} is dispatched to host ${head}, not to host ${host}`,
    });
  }
}

/** The JobStatus a worker's status frame proposes (a JobStatusFact). */
export function jobStatusOf(f: StatusFrame): JobStatus {
  if (f.kind === 'started') return { type: 'started', pid: f.pid ?? 0, timeMs: f.time_ms };
  if (f.kind === 'suspended' || f.kind === 'resumed') return { type: f.kind, timeMs: f.time_ms };
  if (f.kind === 'launch-error')
    return { type: 'launchError', reason: f.reason ?? 'the worker could not launch the job' };
  const reason = [f.reason, f.postExecError ? `post-exec: ${f.postExecError}` : undefined].filter(Boolean).join('; ');
  return {
    type: 'finished',
    exitCode: f.exitCode ?? (f.signal ? 128 : 255),
    signal: f.signal ?? null,
    reason: reason === '' ? null : reason,
    timeMs: f.time_ms,
  };
}

/** Statuses per fact: a flush of more is proposed as several facts. */
export const STATUSES_PER_FACT_MAX = 1_024;

/**
 * Head hosts' statuses proposed together: those that arrive in one turn of the event loop (from
 * every worker, and every status of a `reports` frame) as one fact, a BatchFact when there are
 * several; the statuses of each fact are `applied` or `failed` together.
 */
export class StatusBatches {
  private queue: StatusFrame[] = [];

  constructor(
    private readonly ctx: Pick<HubContext, 'propose' | 'log'>,
    /** Each with the statuses of one proposal (one fact), in the order they came. */
    private readonly on: {
      applied(frames: readonly StatusFrame[]): void;
      failed(frames: readonly StatusFrame[]): void;
    },
  ) {}

  add(f: StatusFrame): void {
    this.queue.push(f);
    if (this.queue.length === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    const frames = this.queue;
    this.queue = [];
    for (let i = 0; i < frames.length; i += STATUSES_PER_FACT_MAX)
      this.propose(frames.slice(i, i + STATUSES_PER_FACT_MAX));
  }

  private propose(frames: readonly StatusFrame[]): void {
    const facts: JobStatusFact[] = frames.map((f) => ({
      kind: 'status',
      jobId: f.jobId,
      runNumber: f.run,
      status: jobStatusOf(f),
    }));
    const body: FactBody = facts.length === 1 ? facts[0]! : { kind: 'batch', dispatches: [], statuses: facts };
    this.ctx.propose(body).then(
      () => this.on.applied(frames),
      (err: Error) => {
        this.on.failed(frames);
        this.ctx.log.debug('statuses not committed; the workers will re-send them', {
          statuses: frames.length,
          error: err.message,
        });
      },
    );
  }
}
