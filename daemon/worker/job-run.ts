// One run of one job on this host, in layers:
//
//   profile pre-exec → job pre-exec → job → job post-exec → profile post-exec
//
// The profile's layer (outer) runs in a clean environment, the job's layer (inner) adds the job's
// env (env.ts). Every layer runs as the execution user (identity.ts), in its own process group,
// in the job's working directory, through `/bin/sh -c`. Only the layers that exist are started: a
// run without any pre-exec does its set-up checks in the job's own process (one process for the
// run), and the job counts as started once they passed.
//
// Failures and what runs after them (LSF-like; each post-exec is the bracket of its pre-exec):
// - before any layer (tasks limit, unknown user, missing MPI launcher, working directory or output
//   files not usable by the user): `launch-error`, nothing runs.
// - profile pre-exec fails: `launch-error` naming the layer; nothing else runs.
// - job pre-exec fails: `launch-error` naming the layer; the job and job post-exec do not run, the
//   profile post-exec does (its pre-exec succeeded, so it cleans up).
// - the job fails, is killed, or hits a limit: both post-execs run, with XCE_JOB_EXIT_CODE and
//   XCE_JOB_SIGNAL; the status is `finished` with the job's exit code or signal.
// - a post-exec fails: reported in `postExecError`; the job's exit code is unchanged.
// A kill (SIGTERM to the current layer's group, SIGKILL after a grace) skips the layers not begun
// and runs the post-execs as above; a forced kill (worker shutdown) runs no further layer.
// Suspend sends SIGSTOP to the current layer's group (and to a layer started while suspended),
// resume SIGCONT; the runtime limit's clock stops meanwhile (runtime-clock.ts). A kill of a
// suspended run continues it first, so that its SIGTERM is delivered.
// The `finished` / `launch-error` outcome is given after the last post-exec ended.
// This file owns that sequence and its outcome; each layer's process (spawn, wrappers, timeout,
// kill, failure reasons) is layer-process.ts's; what is resolved before any layer, job-prepare.ts's.

import type { StartInfo } from '../worker-protocol.js';
import { type Env, FIXED_PATH, type JobEnd } from './env.js';
import type { UserLookupOptions } from './identity.js';
import { directJob, layerEnv, type Prepared, prepareRun } from './job-prepare.js';
import type { Launchers } from './launch.js';
import { LaunchError } from './launch-error.js';
import {
  isPostExec,
  jobWrapper,
  type Layer,
  type LayerEnd,
  type LayerOptions,
  LayerSpawner,
  layerFailure,
  PREFLIGHT,
  wrapperFailure,
} from './layer-process.js';
import { cpuReason, runtimeReason } from './limits.js';
import type { LayerChild } from './layer-child.js';
import { sharedLauncher } from './launcher.js';
import { RuntimeClock } from './runtime-clock.js';
import { outputPath, removeScript } from './job-script.js';

export { outputPath };

export { LAYER_OUTPUT_TAIL_BYTES, REASON_DETAIL_CHARS_MAX, WRAPPER_FAILED_EXIT, type Layer } from './layer-process.js';

export type Phase = 'setup' | 'job' | 'teardown';

export interface JobRunOptions extends LayerOptions {
  readonly launchers: Launchers;
  /** The worker runs as root: switch to the submitter. Otherwise jobs run as the worker's user. */
  readonly asRoot: boolean;
  readonly now: () => number;
  readonly userLookup?: UserLookupOptions;
}

export type RunOutcome =
  | {
      readonly kind: 'finished';
      readonly exitCode: number | null;
      readonly signal: string | null;
      readonly reason?: string;
      readonly postExecError?: string;
      readonly time_ms: number;
    }
  | {
      readonly kind: 'launch-error';
      readonly reason: string;
      readonly postExecError?: string;
      readonly time_ms: number;
    };

/** Where a run is, for the worker's state file (a restarted worker adopts or reports it). */
export interface Progress {
  readonly phase: Phase;
  /** Process group of the layer running now (null between layers). */
  readonly pgid: number | null;
  readonly procStart: string | null;
  /** Set once the job layer ended. */
  readonly end: JobEnd | null;
  readonly jobReason: string | null;
}

export interface RunHooks {
  onStarted(pid: number, time_ms: number): void;
  /** The run's process group was stopped or continued (suspend / resume). */
  onSignalled?(kind: 'suspended' | 'resumed', time_ms: number): void;
  onProgress?(p: Progress): void;
}

export class JobRun {
  readonly done: Promise<RunOutcome>;
  private killReason: string | null = null;
  private forced = false;
  private readonly layers: LayerSpawner;
  private progress: Progress = { phase: 'setup', pgid: null, procStart: null, end: null, jobReason: null };
  /** The job layer's pid once it started. */
  pid: number | null = null;
  /** The stdout file (absolute) and the owner it must have (null: not checked), once prepared: what `peek` reads. */
  output: { readonly file: string; readonly uid: number | null } | null = null;
  startedAt: number | null = null;
  /** Suspended (SIGSTOP) and not resumed. */
  suspended = false;
  /** The job layer's runtime limit, while the job layer runs. */
  private runtime: RuntimeClock | null = null;

  constructor(
    readonly info: StartInfo,
    private readonly opts: JobRunOptions,
    private readonly hooks: RunHooks,
  ) {
    this.layers = new LayerSpawner(opts, {
      spawned: (pgid, procStart) => {
        // A layer started while the run is suspended is stopped at once, as the one before it was.
        if (this.suspended) this.layers.signalCurrent('SIGSTOP');
        this.setProgress({ pgid, procStart });
      },
      mustStop: (layer) => this.killReason !== null && (this.forced || !isPostExec(layer)),
    });
    this.done = this.run().catch((err: unknown) => {
      // A bug, not a job's failure: still give the controller a terminal status.
      opts.log.error('job run failed unexpectedly', { jobId: info.jobId, run: info.run, error: err as Error });
      return {
        kind: 'launch-error',
        reason: `xcecd on host ${opts.host} failed: ${(err as Error).message}`,
        time_ms: opts.now(),
      } as const;
    });
  }

  /** Processes this run has started so far (one per layer, the set-up checks included). */
  get processes(): number {
    return this.layers.spawned;
  }

  /** Kills the run: the current layer's group gets SIGTERM, then SIGKILL after the grace. `force`: post-execs are killed and skipped too. */
  kill(reason: string, force = false): void {
    if (this.killReason === null) this.killReason = reason;
    if (force) this.forced = true;
    this.layers.killCurrent(force); // without force, cleanup runs to its end (bounded by the hook timeout)
    if (this.suspended) this.continueRun(); // a stopped group gets its SIGTERM only once continued
  }

  /** `jobs suspend`: SIGSTOP to the current layer's group; the runtime limit's clock stops. */
  suspend(): void {
    if (this.suspended || this.killReason !== null) return;
    this.suspended = true;
    this.layers.signalCurrent('SIGSTOP');
    this.runtime?.pause();
    this.hooks.onSignalled?.('suspended', this.opts.now());
  }

  /** `jobs resume`: SIGCONT to the current layer's group; the runtime limit's clock goes on. */
  resume(): void {
    if (!this.suspended) return;
    this.continueRun();
    this.hooks.onSignalled?.('resumed', this.opts.now());
  }

  private continueRun(): void {
    this.suspended = false;
    this.layers.signalCurrent('SIGCONT');
    this.runtime?.resume();
  }

  private setProgress(p: Partial<Progress>): void {
    this.progress = { ...this.progress, ...p };
    this.hooks.onProgress?.(this.progress);
  }

  /** The sequence: set-up, profile pre-exec, job pre-exec, the job, the post-execs (see the file's head). */
  private async run(): Promise<RunOutcome> {
    const { info, opts } = this;
    const p = await this.prepare();
    if ('kind' in p) return p;
    // Without a pre-exec, the set-up checks run in the job's own process: one process for the run.
    const fused = info.profilePreExec === null && info.jobPreExec === null;
    if (!fused) {
      const setUpFailed = await this.setUp(p);
      if (setUpFailed !== null) return setUpFailed;
    } else if (this.killReason !== null) return this.killedBeforeStart();
    const postErrors: string[] = [];
    const withPost = <T extends RunOutcome>(o: T): T =>
      postErrors.length > 0 ? { ...o, postExecError: postErrors.join('; ') } : o;

    // job pre-exec
    if (info.jobPreExec !== null) {
      const r = await this.layers.runHook(p.identity, 'job pre-exec', info.jobPreExec, this.envFor(p, 'job pre-exec'));
      if (this.killReason !== null || r !== null) {
        await this.teardown(p, 'not-run', r === null, postErrors); // the job post-exec is the bracket of a job pre-exec that succeeded
        if (this.killReason !== null) return withPost(this.killedBeforeStart());
        return withPost({ kind: 'launch-error', reason: r as string, time_ms: opts.now() });
      }
    }
    if (this.killReason !== null) {
      await this.teardown(p, 'not-run', true, postErrors);
      return withPost(this.killedBeforeStart());
    }

    // the job
    const { job, runtimeHit } = await this.runJob(p, fused);
    if (job.spawnError !== null) {
      await this.teardown(p, 'not-run', true, postErrors);
      return withPost({
        kind: 'launch-error',
        reason: `cannot start the job on host ${opts.host}: ${job.spawnError}`,
        time_ms: opts.now(),
      });
    }
    if (this.pid === null) {
      // Fused set-up: the checks failed in the job's process, or it was killed before they passed.
      if (this.killReason !== null) return this.killedBeforeStart();
      const reason = wrapperFailure(job, opts.host) ?? layerFailure('job set-up', job, opts.hookTimeout_ms);
      return { kind: 'launch-error', reason, time_ms: opts.now() };
    }
    const end: JobEnd = { exitCode: job.exitCode, signal: job.signal };
    const reason = this.jobReason(job, runtimeHit);
    this.setProgress({ end, jobReason: reason ?? null });
    await this.teardown(p, end, true, postErrors);
    return withPost({
      kind: 'finished',
      exitCode: end.exitCode,
      signal: end.signal,
      ...(reason !== undefined ? { reason } : {}),
      time_ms: opts.now(),
    });
  }

  /** Before any layer: the user, cwd, argv and output files (job-prepare.ts); a launch error if one fails. */
  private async prepare(): Promise<Prepared | RunOutcome> {
    try {
      const p = await prepareRun(this.info, this.opts);
      this.output = p.output;
      return p;
    } catch (err) {
      if (err instanceof LaunchError) return { kind: 'launch-error', reason: err.reason, time_ms: this.opts.now() };
      throw err;
    }
  }

  /** Whether a job with limits may skip its wrapper: its spawner sets rlimits (LayerOptions.directLimits). */
  private directLimits(): boolean {
    return this.opts.directLimits ?? (this.opts.spawnLayer === undefined && sharedLauncher().native !== null);
  }

  /** The environment of a layer: outer for the profile's, inner (with the job's env) for the job's. */
  private envFor(p: Prepared, layer: Layer, end: JobEnd | null | 'not-run' = null): Env {
    return layerEnv(this.info, this.opts.host, p, layer, end);
  }

  /** Set-up checks as the user (working directory, output files), then the profile pre-exec; null when both passed. */
  private async setUp(p: Prepared): Promise<RunOutcome | null> {
    const { info, opts } = this;
    if (this.killReason !== null) return this.killedBeforeStart();
    const pre = await this.layers.runLayer(
      p.identity,
      'job',
      ['/bin/sh', '-c', PREFLIGHT, 'xce-preflight', p.out, p.err],
      { PATH: FIXED_PATH, XCE_CWD: p.cwd, USER: p.identity.name },
      opts.hookTimeout_ms,
      { stdin: null, readStdout: false, setUpFd: false },
    );
    if (this.killReason !== null) return this.killedBeforeStart();
    const preFail =
      wrapperFailure(pre, opts.host) ??
      (pre.exitCode === 0 ? null : layerFailure('job set-up', pre, opts.hookTimeout_ms));
    if (preFail !== null) return { kind: 'launch-error', reason: preFail, time_ms: opts.now() };

    // profile pre-exec
    if (this.killReason !== null) return this.killedBeforeStart();
    if (info.profilePreExec !== null) {
      const r = await this.layers.runHook(
        p.identity,
        'profile pre-exec',
        info.profilePreExec,
        this.envFor(p, 'profile pre-exec'),
      );
      if (this.killReason !== null) return this.killedBeforeStart();
      if (r !== null) return { kind: 'launch-error', reason: r, time_ms: opts.now() };
    }
    return null;
  }

  /** The post-execs after the job (or instead of it): each failure or skip goes to `postErrors`. */
  private async teardown(
    p: Prepared,
    end: JobEnd | 'not-run',
    jobEntered: boolean,
    postErrors: string[],
  ): Promise<void> {
    const { info } = this;
    this.setProgress({ phase: 'teardown', pgid: null, procStart: null, end: end === 'not-run' ? null : end });
    const steps: Array<[Layer, string | null]> = [
      ['job post-exec', jobEntered ? info.jobPostExec : null],
      ['profile post-exec', info.profilePostExec],
    ];
    for (const [layer, script] of steps) {
      if (script === null) continue;
      if (this.forced) {
        postErrors.push(`${layer} not run: ${this.killReason ?? 'worker shutting down'}`);
        continue;
      }
      const r = await this.layers.runHook(p.identity, layer, script, this.envFor(p, layer, end));
      if (r !== null) postErrors.push(r);
    }
  }

  /**
   * The job layer, under its runtime limit; whether that limit ended it. `withSetUp`: the set-up
   * checks run first in the same process, and the job counts as started once they passed (the
   * wrapper's byte on SET_UP_PASSED_FD), not when the process is spawned.
   */
  private async runJob(p: Prepared, withSetUp: boolean): Promise<{ job: LayerEnd; runtimeHit: boolean }> {
    const { info, opts } = this;
    let runtimeHit = false;
    let child: LayerChild | null = null;
    let spawned: { pid: number; procStart: string | null } | null = null;
    const started = (): void => {
      const { pid, procStart } = spawned as { pid: number; procStart: string | null };
      this.pid = pid;
      this.startedAt = opts.now();
      this.setProgress({ phase: 'job', pgid: pid, procStart });
      this.hooks.onStarted(pid, this.startedAt);
      if (info.limits.runtime_s !== undefined) {
        const fire = (): void => {
          runtimeHit = true;
          if (this.killReason === null) this.killReason = runtimeReason(info.limits.runtime_s as number);
          this.layers.terminate(child as LayerChild);
          if (this.suspended) this.continueRun();
        };
        this.runtime = new RuntimeClock(info.limits.runtime_s * 1000, opts.now, fire, !this.suspended);
      }
    };
    const scriptArg = p.scriptFile === null ? [] : [p.scriptFile]; // the wrapper's `$script`
    const job = await this.layers.runLayer(
      p.identity,
      'job',
      ['/bin/sh', '-c', jobWrapper(info, withSetUp), 'xce-job', p.out, p.err, ...scriptArg, ...p.argv],
      this.envFor(p, 'job'),
      null,
      // The wrapper writes what it reads to the script file (a failed write is its own reason, on stderr).
      {
        stdin: p.scriptFile === null ? null : (info.script ?? ''),
        readStdout: false,
        setUpFd: withSetUp,
        direct: this.opts.jobWrapperAlways === true ? undefined : directJob(info, p, withSetUp, this.directLimits()),
      },
      {
        spawned: (c, pid, procStart) => {
          child = c;
          spawned = { pid, procStart };
          if (!withSetUp) return started();
          this.setProgress({ pgid: pid, procStart });
        },
        // The set-up byte comes before the layer's end (layer-child.ts), even from a job that ends at once.
        setUp: () => {
          if (this.pid === null && spawned !== null) started();
        },
      },
    );
    this.runtime?.clear();
    this.runtime = null;
    if (p.scriptFile !== null) await removeScript(p.scriptFile, opts.log);
    return { job, runtimeHit };
  }

  /** Why the job ended, when not by itself: its runtime or CPU limit, a kill, or its wrapper's failure. */
  private jobReason(job: LayerEnd, runtimeHit: boolean): string | undefined {
    const { info } = this;
    if (runtimeHit) return runtimeReason(info.limits.runtime_s as number);
    if (job.lost !== null) return `the job was ${job.lost}`;
    if (this.killReason !== null) return this.killReason;
    if (job.signal === 'SIGXCPU' && info.limits.cpu_s !== undefined) return cpuReason(info.limits.cpu_s);
    if (job.signal === 'SIGKILL' && info.limits.cpu_s !== undefined)
      return `${cpuReason(info.limits.cpu_s)} (killed at the hard limit)`;
    return wrapperFailure(job, this.opts.host) ?? undefined;
  }

  private killedBeforeStart(): RunOutcome {
    return {
      kind: 'finished',
      exitCode: null,
      signal: null,
      reason: `killed before the job started: ${this.killReason ?? ''}`,
      time_ms: this.opts.now(),
    };
  }
}
