// One run of one job on this host, in layers:
//
//   profile pre-exec → job pre-exec → job → job post-exec → profile post-exec
//
// The profile's layer (outer) runs in a clean environment, the job's layer (inner) adds the job's
// env (env.ts). Every layer runs as the execution user (identity.ts), in its own process group,
// in the job's working directory, through `/bin/sh -c`.
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
// The `finished` / `launch-error` outcome is given after the last post-exec ended.

import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process';
import type { Logger } from '../log.js';
import type { StartInfo } from '../worker-protocol.js';
import { type Env, type ExecIdentity, FIXED_PATH, innerEnv, type JobEnd, outerEnv } from './env.js';
import { resolveExecIdentity, type UserLookupOptions } from './identity.js';
import { jobArgv, type Launchers } from './launch.js';
import { LaunchError } from './launch-error.js';
import { layerSpawn, type LayerSpawn } from './switch.js';
import { checkTasks, cpuReason, runtimeReason, ulimitScript } from './limits.js';
import { procStartTicks, signalGroup, TailBuffer } from './proc.js';
import { formatDuration } from '../../model/units.js';
import { type LongTimeout, setLongTimeout } from '../long-timer.js';

/** Output of a pre/post-exec kept to name the failure (the last line goes into the reason). */
export const LAYER_OUTPUT_TAIL_BYTES = 4096;
export const REASON_DETAIL_CHARS_MAX = 200;
/** After a layer's process exits, how long to wait for its pipes to close (a grandchild may hold them). */
const PIPE_CLOSE_WAIT_MS = 500;
/** Exit code of the wrappers when they cannot set the job up; they print an `xce-launch: ` line first. */
export const WRAPPER_FAILED_EXIT = 254;
const LAUNCH_MARK = 'xce-launch: ';

export type Layer = 'profile pre-exec' | 'job pre-exec' | 'job' | 'job post-exec' | 'profile post-exec';
export type Phase = 'setup' | 'job' | 'teardown';

export interface JobRunOptions {
  readonly host: string;
  readonly log: Logger;
  readonly launchers: Launchers;
  /** The worker runs as root: switch to the submitter. Otherwise jobs run as the worker's user. */
  readonly asRoot: boolean;
  /**
   * util-linux `setpriv` (root only): switches uid/gid AND sets the user's supplementary groups
   * (`--init-groups`). Null: Node's spawn uid/gid, which drops supplementary groups.
   */
  readonly setpriv: string | null;
  readonly killGrace_ms: number;
  /** A pre/post-exec running longer than this is killed (and counts as failed). */
  readonly hookTimeout_ms: number;
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
  onProgress?(p: Progress): void;
}

interface LayerEnd {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly spawnError: string | null;
  readonly timedOut: boolean;
  readonly tail: TailBuffer;
}

const HOOK_WRAPPER = `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}cannot enter the working directory $XCE_CWD as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }; exec /bin/sh -c "$1"`;

const PREFLIGHT = [
  `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}working directory $XCE_CWD does not exist or is not accessible to user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
  `( : >>"$1" ) 2>/dev/null || { echo "${LAUNCH_MARK}cannot write the stdout file $1 as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
  `( : >>"$2" ) 2>/dev/null || { echo "${LAUNCH_MARK}cannot write the stderr file $2 as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
].join('; ');

function jobWrapper(info: StartInfo): string {
  return (
    `out=$1; err=$2; shift 2; ` +
    `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}cannot enter the working directory $XCE_CWD as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }; ` +
    ulimitScript(info.limits) +
    `exec >>"$out" 2>>"$err" </dev/null || exit ${WRAPPER_FAILED_EXIT}; exec "$@"`
  );
}

/** `xce-%J.out` with `%J` replaced by the job id; null → the default name. */
export function outputPath(template: string | null, jobId: number, ext: 'out' | 'err'): string {
  return (template ?? `xce-%J.${ext}`).replaceAll('%J', String(jobId));
}

export class JobRun {
  readonly done: Promise<RunOutcome>;
  private killReason: string | null = null;
  private forced = false;
  private current: { child: ChildProcess; layer: Layer } | null = null;
  private graceTimer: LongTimeout | null = null;
  private progress: Progress = { phase: 'setup', pgid: null, procStart: null, end: null, jobReason: null };
  /** The job layer's pid once it started. */
  pid: number | null = null;
  startedAt: number | null = null;

  constructor(
    readonly info: StartInfo,
    private readonly opts: JobRunOptions,
    private readonly hooks: RunHooks,
  ) {
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

  /** Kills the run: the current layer's group gets SIGTERM, then SIGKILL after the grace. `force`: post-execs are killed and skipped too. */
  kill(reason: string, force = false): void {
    if (this.killReason === null) this.killReason = reason;
    if (force) this.forced = true;
    const cur = this.current;
    if (cur === null) return;
    if (!force && (cur.layer === 'job post-exec' || cur.layer === 'profile post-exec')) return; // cleanup runs to its end (bounded by the hook timeout)
    this.terminate(cur.child);
  }

  private terminate(child: ChildProcess): void {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const pid = child.pid;
    signalGroup(pid, 'SIGTERM');
    this.graceTimer?.clear();
    this.graceTimer = setLongTimeout(() => signalGroup(pid, 'SIGKILL'), this.opts.killGrace_ms);
  }

  private setProgress(p: Partial<Progress>): void {
    this.progress = { ...this.progress, ...p };
    this.hooks.onProgress?.(this.progress);
  }

  private async run(): Promise<RunOutcome> {
    const { info, opts } = this;
    const now = opts.now;
    let identity: ExecIdentity;
    let argv: string[];
    try {
      checkTasks(info);
      identity = await resolveExecIdentity(info.user, opts.host, opts.asRoot, opts.userLookup);
    } catch (err) {
      if (err instanceof LaunchError) return { kind: 'launch-error', reason: err.reason, time_ms: now() };
      throw err;
    }
    const cwd = info.cwd === '' ? identity.home : info.cwd;
    const envFor = (layer: Layer, end: JobEnd | null | 'not-run'): Env => {
      const built =
        layer === 'profile pre-exec' || layer === 'profile post-exec'
          ? outerEnv(info, identity, opts.host, cwd, end)
          : innerEnv(info, identity, opts.host, cwd, end);
      return built.env;
    };
    const dropped = innerEnv(info, identity, opts.host, cwd, null).dropped;
    if (dropped.length > 0) {
      opts.log.warn(
        'dropped reserved XCE_ variables from the job or profile env (they should have been refused at submit)',
        { jobId: info.jobId, names: dropped },
      );
    }
    try {
      argv = jobArgv(info, opts.launchers, envFor('job', null)['PATH'] ?? FIXED_PATH, opts.host);
    } catch (err) {
      if (err instanceof LaunchError) return { kind: 'launch-error', reason: err.reason, time_ms: now() };
      throw err;
    }
    const out = outputPath(info.stdout, info.jobId, 'out');
    const errPath = outputPath(info.stderr, info.jobId, 'err');

    // Set-up checks as the user: working directory, output files.
    if (this.killReason !== null) return this.killedBeforeStart();
    const pre = await this.runLayer(
      identity,
      'job',
      ['/bin/sh', '-c', PREFLIGHT, 'xce-preflight', out, errPath],
      { PATH: FIXED_PATH, XCE_CWD: cwd, USER: identity.name },
      opts.hookTimeout_ms,
      ['ignore', 'ignore', 'pipe'],
    );
    if (this.killReason !== null) return this.killedBeforeStart();
    const preFail =
      wrapperFailure(pre, opts.host) ??
      (pre.exitCode === 0 ? null : layerFailure('job set-up', pre, opts.hookTimeout_ms));
    if (preFail !== null) return { kind: 'launch-error', reason: preFail, time_ms: now() };

    // profile pre-exec
    if (this.killReason !== null) return this.killedBeforeStart();
    if (info.profilePreExec !== null) {
      const r = await this.runHook(identity, 'profile pre-exec', info.profilePreExec, envFor('profile pre-exec', null));
      if (this.killReason !== null) return this.killedBeforeStart();
      if (r !== null) return { kind: 'launch-error', reason: r, time_ms: now() };
    }
    const postErrors: string[] = [];
    const teardown = async (end: JobEnd | 'not-run', jobEntered: boolean): Promise<void> => {
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
        const r = await this.runHook(identity, layer, script, envFor(layer, end));
        if (r !== null) postErrors.push(r);
      }
    };
    const withPost = <T extends RunOutcome>(o: T): T =>
      postErrors.length > 0 ? { ...o, postExecError: postErrors.join('; ') } : o;

    // job pre-exec
    if (info.jobPreExec !== null) {
      const r = await this.runHook(identity, 'job pre-exec', info.jobPreExec, envFor('job pre-exec', null));
      if (this.killReason !== null || r !== null) {
        await teardown('not-run', r === null); // the job post-exec is the bracket of a job pre-exec that succeeded
        if (this.killReason !== null) return withPost(this.killedBeforeStart());
        return withPost({ kind: 'launch-error', reason: r as string, time_ms: now() });
      }
    }
    if (this.killReason !== null) {
      await teardown('not-run', true);
      return withPost(this.killedBeforeStart());
    }

    // the job
    let runtimeHit = false;
    // A limit of any length: 30d is beyond setTimeout's range (long-timer.ts).
    let runtimeTimer: LongTimeout | null = null;
    const job = await this.runLayer(
      identity,
      'job',
      ['/bin/sh', '-c', jobWrapper(info), 'xce-job', out, errPath, ...argv],
      envFor('job', null),
      null,
      ['ignore', 'ignore', 'pipe'],
      (child) => {
        const pid = child.pid as number;
        this.pid = pid;
        this.startedAt = now();
        this.setProgress({ phase: 'job', pgid: pid, procStart: procStartTicks(pid) });
        this.hooks.onStarted(pid, this.startedAt);
        if (info.limits.runtime_s !== undefined) {
          runtimeTimer = setLongTimeout(() => {
            runtimeHit = true;
            if (this.killReason === null) this.killReason = runtimeReason(info.limits.runtime_s as number);
            this.terminate(child);
          }, info.limits.runtime_s * 1000);
        }
      },
    );
    (runtimeTimer as LongTimeout | null)?.clear();
    if (job.spawnError !== null) {
      await teardown('not-run', true);
      return withPost({
        kind: 'launch-error',
        reason: `cannot start the job on host ${opts.host}: ${job.spawnError}`,
        time_ms: now(),
      });
    }
    const end: JobEnd = { exitCode: job.exitCode, signal: job.signal };
    let reason: string | undefined;
    if (runtimeHit) reason = runtimeReason(info.limits.runtime_s as number);
    else if (this.killReason !== null) reason = this.killReason;
    else if (job.signal === 'SIGXCPU' && info.limits.cpu_s !== undefined) reason = cpuReason(info.limits.cpu_s);
    else if (job.signal === 'SIGKILL' && info.limits.cpu_s !== undefined)
      reason = `${cpuReason(info.limits.cpu_s)} (killed at the hard limit)`;
    else reason = wrapperFailure(job, opts.host) ?? undefined;
    this.setProgress({ end, jobReason: reason ?? null });
    await teardown(end, true);
    return withPost({
      kind: 'finished',
      exitCode: end.exitCode,
      signal: end.signal,
      ...(reason !== undefined ? { reason } : {}),
      time_ms: now(),
    });
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

  /** Runs a pre/post-exec; null when it succeeded, else the reason naming the layer. */
  private async runHook(identity: ExecIdentity, layer: Layer, script: string, env: Env): Promise<string | null> {
    const r = await this.runLayer(
      identity,
      layer,
      ['/bin/sh', '-c', HOOK_WRAPPER, 'xce-hook', script],
      env,
      this.opts.hookTimeout_ms,
      ['ignore', 'pipe', 'pipe'],
    );
    return (
      wrapperFailure(r, this.opts.host) ?? (r.exitCode === 0 ? null : layerFailure(layer, r, this.opts.hookTimeout_ms))
    );
  }

  private runLayer(
    identity: ExecIdentity,
    layer: Layer,
    argv: string[],
    env: Env,
    timeout_ms: number | null,
    stdio: StdioOptions,
    onSpawn?: (child: ChildProcess) => void,
  ): Promise<LayerEnd> {
    const tail = new TailBuffer(LAYER_OUTPUT_TAIL_BYTES);
    // The layer's environment reaches only a process that already runs as the layer's user
    // (switch.ts): never setpriv or anything else exec'd as root.
    let how: LayerSpawn;
    try {
      how = layerSpawn(identity, this.opts.setpriv, argv, env);
    } catch (err) {
      // An environment the switch cannot carry: the layer fails to start, naming why.
      if (err instanceof LaunchError)
        return Promise.resolve({ exitCode: null, signal: null, spawnError: err.reason, timedOut: false, tail });
      throw err;
    }
    if (how.dropped.length > 0)
      this.opts.log.warn('a layer running as root does not get the loader variables it set', {
        layer,
        dropped: how.dropped,
      });
    const options: Parameters<typeof spawn>[2] = { env: how.env, stdio, detached: true, cwd: '/', ...(how.ids ?? {}) };
    return new Promise<LayerEnd>((resolve) => {
      let settled = false;
      let timedOut = false;
      let timer: LongTimeout | null = null;
      const child = spawn(how.file, how.args, options);
      this.current = { child, layer };
      const finish = (end: Omit<LayerEnd, 'tail' | 'timedOut'>): void => {
        if (settled) return;
        settled = true;
        timer?.clear();
        this.graceTimer?.clear();
        this.graceTimer = null;
        this.current = null;
        resolve({ ...end, timedOut, tail });
      };
      child.stdout?.on('data', (c: Buffer) => tail.push(c));
      child.stderr?.on('data', (c: Buffer) => tail.push(c));
      child.once('error', (err) => finish({ exitCode: null, signal: null, spawnError: err.message }));
      child.once('spawn', () => {
        if (layer !== 'job' || onSpawn === undefined)
          this.setProgress({
            pgid: child.pid ?? null,
            procStart: child.pid === undefined ? null : procStartTicks(child.pid),
          });
        onSpawn?.(child);
        if (this.killReason !== null && (this.forced || (layer !== 'job post-exec' && layer !== 'profile post-exec')))
          this.terminate(child);
        if (timeout_ms !== null) {
          timer = setLongTimeout(() => {
            timedOut = true;
            this.terminate(child);
          }, timeout_ms);
        }
      });
      child.once('exit', (code, signal) => {
        // Whatever the layer left behind in its group goes with it.
        if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
        const done = (): void => finish({ exitCode: code, signal: signal, spawnError: null });
        if (
          (child.stdout === null || child.stdout.readableEnded) &&
          (child.stderr === null || child.stderr.readableEnded)
        )
          return done();
        const wait = setTimeout(done, PIPE_CLOSE_WAIT_MS);
        child.once('close', () => {
          clearTimeout(wait);
          done();
        });
      });
    });
  }
}

function wrapperFailure(r: LayerEnd, host: string): string | null {
  if (r.spawnError !== null) return `cannot start a process on host ${host}: ${r.spawnError}`;
  if (r.exitCode !== WRAPPER_FAILED_EXIT) return null;
  const line = r.tail
    .text()
    .split('\n')
    .find((l) => l.startsWith(LAUNCH_MARK));
  return line === undefined ? null : `${line.slice(LAUNCH_MARK.length).trim()} on host ${host}`;
}

function layerFailure(layer: string, r: LayerEnd, timeout_ms: number | null): string {
  const detail = r.tail.lastLine(REASON_DETAIL_CHARS_MAX);
  const suffix = detail === '' ? '' : ` (output: ${detail})`;
  if (r.timedOut && timeout_ms !== null)
    return `${layer} did not finish within ${formatDuration(Math.ceil(timeout_ms / 1000))} and was killed${suffix}`;
  if (r.signal !== null) return `${layer} was killed by ${r.signal}${suffix}`;
  return `${layer} exited with code ${r.exitCode ?? 'unknown'}${suffix}`;
}
