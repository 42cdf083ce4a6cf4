// The worker's record of its runs across its own restart: where each run is (the executor's
// progress), the state file that keeps it with the un-acked statuses, and the runs adopted from
// before a restart (still running: polled until they end, killed on request; the others reported).

import type { Logger } from '../log.js';
import type { RunningJob, StatusFrame } from '../worker-protocol.js';
import { setLongTimeout } from '../long-timer.js';
import { type JobEvent, runKey } from './executor.js';
import type { Progress } from './job-run.js';
import { processAlive, signalGroup } from './proc.js';
import { type SavedRun, StateFile, type WorkerState, type WorkerStateToSave } from './state-file.js';

/** How often adopted jobs (from before a worker restart) are checked for having ended. */
export const ADOPTED_POLL_MS = 1_000;

export const EXIT_UNKNOWN_REASON = 'exit status unknown: xcecd restarted while the job ran (post-execs not run)';

export interface RunBookOptions {
  readonly host: string;
  /** Where the state file lives; null: remember nothing across a restart (tests). */
  readonly stateDir: string | null;
  readonly killGrace_ms: number;
  readonly now: () => number;
}

interface Adopted {
  readonly saved: SavedRun;
  killReason: string | null;
}

export class RunBook {
  private readonly state: StateFile | null;
  private readonly progress = new Map<string, SavedRun>();
  private readonly adopted = new Map<string, Adopted>();
  private pollTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: RunBookOptions,
    private readonly log: Logger,
    /** Reports what became of a run the executor does not run (an adopted one, or one found at restore). */
    private readonly report: (e: JobEvent) => void,
  ) {
    this.state = opts.stateDir === null ? null : new StateFile(opts.stateDir);
  }

  /** Adopted runs still running. */
  get adoptedCount(): number {
    return this.adopted.size;
  }

  isAdopted(jobId: number, run: number): boolean {
    return this.adopted.has(runKey(jobId, run));
  }

  adoptedRunning(): RunningJob[] {
    const out: RunningJob[] = [];
    for (const a of this.adopted.values()) {
      const s = a.saved;
      out.push({
        jobId: s.jobId,
        run: s.run,
        ...(s.pid !== null ? { pid: s.pid } : {}),
        ...(s.startedAt !== null ? { startedAt: s.startedAt } : {}),
      });
    }
    return out;
  }

  start(): void {
    if (this.adopted.size > 0) this.pollTimer = setInterval(() => this.pollAdopted(), ADOPTED_POLL_MS);
  }

  close(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }

  /** Where a run of the executor is now (null: it ended). */
  onProgress(key: string, p: Progress | null, info: { jobId: number; run: number } | null): void {
    if (p === null || info === null) {
      this.progress.delete(key);
      return;
    }
    const prev = this.progress.get(key);
    this.progress.set(key, {
      jobId: info.jobId,
      run: info.run,
      phase: p.phase,
      pgid: p.pgid,
      procStart: p.procStart,
      end: p.end,
      jobReason: p.jobReason,
      pid: p.phase === 'job' ? p.pgid : (prev?.pid ?? null),
      startedAt: p.phase === 'job' && prev?.phase !== 'job' ? this.opts.now() : (prev?.startedAt ?? null),
    });
  }

  /** Writes the state file now (nothing without one); a failure is logged, not thrown. */
  save(statuses: () => StatusFrame[], recentJson: () => Buffer[]): void {
    if (this.state === null) return;
    try {
      this.state.save(this.stateOf(statuses(), recentJson()));
    } catch (err) {
      this.saveFailed(err);
    }
  }

  /** Writes the state file without blocking on the disk (StateFile.saveAsync); a failure is logged, not thrown. */
  async saveAsync(statuses: () => StatusFrame[], recentJson: () => Buffer[]): Promise<void> {
    if (this.state === null) return;
    try {
      await this.state.saveAsync(this.stateOf(statuses(), recentJson()));
    } catch (err) {
      this.saveFailed(err);
    }
  }

  /** `recentJson`: the recent keys as the bytes of a JSON array (Executor.recentJson). */
  private stateOf(statuses: StatusFrame[], recentJson: Buffer[]): WorkerStateToSave {
    return {
      version: 1,
      host: this.opts.host,
      statuses,
      runs: [...this.progress.values(), ...[...this.adopted.values()].map((a) => a.saved)],
      recentJson,
    };
  }

  private saveFailed(err: unknown): void {
    this.log.error('cannot save the worker state file: statuses not yet acked would be lost by a restart', {
      path: this.state?.path,
      error: err as Error,
    });
  }

  /** The state file of this host, when there is one. */
  load(): WorkerState | null {
    return this.state === null ? null : this.state.load(this.opts.host);
  }

  /** Runs from the state file: a job still running is adopted; what became of the others is reported. */
  restoreRuns(runs: readonly SavedRun[], remember: (key: string) => void): void {
    for (const r of runs) {
      const k = runKey(r.jobId, r.run);
      remember(k);
      const alive = r.pgid !== null && processAlive(r.pgid, r.procStart);
      if (r.phase === 'job' && alive) {
        this.adopted.set(k, { saved: r, killReason: null });
        this.log.info('adopted a job still running from before the restart', {
          jobId: r.jobId,
          run: r.run,
          pid: r.pgid,
        });
        continue;
      }
      if (alive) signalGroup(r.pgid as number, 'SIGKILL');
      this.report(lostRunEvent(r, this.opts.now()));
    }
  }

  /** Kills an adopted run; false when (jobId, run) is not one. */
  killAdopted(jobId: number, run: number, reason: string): boolean {
    const a = this.adopted.get(runKey(jobId, run));
    if (a === undefined) return false;
    this.kill(a, reason);
    return true;
  }

  killAll(reason: string): void {
    for (const a of this.adopted.values()) this.kill(a, reason);
  }

  private kill(a: Adopted, reason: string): void {
    if (a.killReason !== null || a.saved.pgid === null) return;
    a.killReason = reason;
    const pgid = a.saved.pgid;
    signalGroup(pgid, 'SIGTERM');
    setLongTimeout(() => signalGroup(pgid, 'SIGKILL'), this.opts.killGrace_ms).unref();
  }

  private pollAdopted(): void {
    for (const [k, a] of this.adopted) {
      const s = a.saved;
      if (s.pgid !== null && processAlive(s.pgid, s.procStart)) continue;
      this.adopted.delete(k);
      this.report({
        kind: 'finished',
        jobId: s.jobId,
        run: s.run,
        exitCode: null,
        signal: null,
        reason: a.killReason ?? EXIT_UNKNOWN_REASON,
        time_ms: this.opts.now(),
      });
    }
    if (this.adopted.size === 0) clearInterval(this.pollTimer);
  }
}

/** What a restarted worker reports for a run it found in the state file and cannot adopt. */
function lostRunEvent(r: SavedRun, time_ms: number): JobEvent {
  if (r.phase === 'setup')
    return {
      kind: 'launch-error',
      jobId: r.jobId,
      run: r.run,
      reason: 'xcecd restarted before the job started',
      time_ms,
    };
  if (r.phase === 'teardown' && r.end !== null)
    return {
      kind: 'finished',
      jobId: r.jobId,
      run: r.run,
      exitCode: r.end.exitCode,
      signal: r.end.signal,
      ...(r.jobReason !== null ? { reason: r.jobReason } : {}),
      postExecError: 'post-exec interrupted: xcecd restarted',
      time_ms,
    };
  return {
    kind: 'finished',
    jobId: r.jobId,
    run: r.run,
    exitCode: null,
    signal: null,
    reason: EXIT_UNKNOWN_REASON,
    time_ms,
  };
}
