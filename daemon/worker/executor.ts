// The worker's set of runs: starts a StartInfo at most once per (jobId, run), bounds how many run
// at once, kills on request, and turns each run's events into job events for the agent.

import type { RunningJob, StartInfo } from '../worker-protocol.js';
import { JobRun, type JobRunOptions, type Progress, type RunOutcome } from './job-run.js';
import { setLongTimeout } from '../long-timer.js';
import { RecentJson } from './recent-json.js';

/** More concurrent runs than this on one host is refused (a launch error), whatever the slots say. */
export const JOBS_RUNNING_MAX_DEFAULT = 1024;
/** The most `--jobs-max` may say: a `register` listing them all stays far below the frame limit. */
export const JOBS_RUNNING_MAX_LIMIT = 8192;
/** (jobId, run) keys remembered after a run ended, so a late duplicate `start` is not run again. */
export const RECENT_RUNS_MAX = 16_384;

export type JobEvent =
  | {
      readonly kind: 'started';
      readonly jobId: number;
      readonly run: number;
      readonly pid: number;
      readonly time_ms: number;
    }
  | {
      /** The run's process group was stopped (SIGSTOP) or continued (SIGCONT): `jobs suspend` / `resume`. */
      readonly kind: 'suspended' | 'resumed';
      readonly jobId: number;
      readonly run: number;
      readonly time_ms: number;
    }
  | ({ readonly jobId: number; readonly run: number } & RunOutcome);

export interface ExecutorOptions extends JobRunOptions {
  readonly jobsMax: number;
}

export type StartOutcome =
  { readonly outcome: 'accepted' | 'duplicate' } | { readonly outcome: 'refused'; readonly reason: string };

export function runKey(jobId: number, run: number): string {
  return `${jobId}.${run}`;
}

export class Executor {
  private readonly runs = new Map<string, JobRun>();
  private readonly recent = new Set<string>();
  /** `recent` as the bytes of a JSON array, for the state file's saves (recent-json.ts). */
  private readonly recentText = new RecentJson();
  private readonly progress = new Map<string, Progress>();
  private accepting = true;

  constructor(
    private readonly opts: ExecutorOptions,
    private readonly onEvent: (e: JobEvent) => void,
    private readonly onProgress: (key: string, p: Progress | null, info: StartInfo | null) => void = () => undefined,
  ) {}

  get size(): number {
    return this.runs.size;
  }

  /** Whether this (jobId, run) is running or ran here recently (or is known from the state file). */
  knows(jobId: number, run: number): boolean {
    const k = runKey(jobId, run);
    return this.runs.has(k) || this.recent.has(k);
  }

  /** Marks keys as already run (restored from the state file after a worker restart). */
  remember(keys: Iterable<string>): void {
    for (const k of keys) this.rememberOne(k);
  }

  recentKeys(): string[] {
    return [...this.recent];
  }

  /** The bytes of `JSON.stringify(this.recentKeys())`, in pieces, without stringifying every key each time. */
  recentJson(): Buffer[] {
    return this.recentText.bytes();
  }

  private rememberOne(k: string): void {
    const moved = this.recent.delete(k);
    this.recent.add(k);
    if (moved) this.recentText.reset(this.recent);
    else this.recentText.added(k);
    while (this.recent.size > RECENT_RUNS_MAX) {
      const oldest = this.recent.values().next().value as string;
      this.recent.delete(oldest);
      this.recentText.dropped(oldest);
    }
  }

  start(info: StartInfo): StartOutcome {
    const k = runKey(info.jobId, info.run);
    if (this.runs.has(k) || this.recent.has(k)) return { outcome: 'duplicate' };
    if (!this.accepting) return this.refuse(info, `xcecd on host ${this.opts.host} is shutting down`);
    if (this.runs.size >= this.opts.jobsMax)
      return this.refuse(info, `host ${this.opts.host} already runs ${this.runs.size} jobs, its limit`);
    const r = new JobRun(info, this.opts, {
      onStarted: (pid, time_ms) => this.onEvent({ kind: 'started', jobId: info.jobId, run: info.run, pid, time_ms }),
      onSignalled: (kind, time_ms) => this.onEvent({ kind, jobId: info.jobId, run: info.run, time_ms }),
      onProgress: (p) => {
        this.progress.set(k, p);
        this.onProgress(k, p, info);
      },
    });
    this.runs.set(k, r);
    void r.done.then((outcome) => {
      this.runs.delete(k);
      this.progress.delete(k);
      this.rememberOne(k);
      this.onEvent({ jobId: info.jobId, run: info.run, ...outcome });
      this.onProgress(k, null, null);
    });
    return { outcome: 'accepted' };
  }

  private refuse(info: StartInfo, reason: string): StartOutcome {
    return this.refuseStart(info.jobId, info.run, reason);
  }

  /**
   * Refuses a run without starting anything (a start this host cannot take, even one whose frame it
   * could not read past the job id): a launch-error event, and the run is remembered, so a re-sent
   * start is a duplicate.
   */
  refuseStart(jobId: number, run: number, reason: string): StartOutcome {
    this.rememberOne(runKey(jobId, run));
    this.onEvent({ kind: 'launch-error', jobId, run, reason, time_ms: this.opts.now() });
    return { outcome: 'refused', reason };
  }

  /** The stdout file of a run going on here (what `peek` reads), or null when it is not running here or not prepared yet. */
  outputOf(jobId: number, run: number): { readonly file: string; readonly uid: number | null } | null {
    return this.runs.get(runKey(jobId, run))?.output ?? null;
  }

  kill(jobId: number, run: number, reason: string, force = false): boolean {
    const r = this.runs.get(runKey(jobId, run));
    if (r === undefined) return false;
    r.kill(reason, force);
    return true;
  }

  /** Suspends (SIGSTOP) or resumes (SIGCONT) a run; false when it does not run here. */
  signal(jobId: number, run: number, action: 'suspend' | 'resume'): boolean {
    const r = this.runs.get(runKey(jobId, run));
    if (r === undefined) return false;
    if (action === 'suspend') r.suspend();
    else r.resume();
    return true;
  }

  running(): RunningJob[] {
    const out: RunningJob[] = [];
    for (const r of this.runs.values()) {
      out.push({
        jobId: r.info.jobId,
        run: r.info.run,
        ...(r.pid !== null ? { pid: r.pid } : {}),
        ...(r.startedAt !== null ? { startedAt: r.startedAt } : {}),
        ...(r.suspended ? { suspended: true } : {}),
      });
    }
    return out;
  }

  /**
   * Stops taking jobs and kills every run; their post-execs run, until `force_ms` has passed: then
   * whatever still runs (a slow post-exec) is killed and the remaining post-execs are skipped.
   */
  async shutdown(reason: string, force_ms: number): Promise<void> {
    this.accepting = false;
    const all = [...this.runs.values()];
    for (const r of all) r.kill(reason);
    const timer = setLongTimeout(() => {
      for (const r of all) r.kill(reason, true);
    }, force_ms);
    await Promise.all(all.map((r) => r.done));
    timer.clear();
  }
}
