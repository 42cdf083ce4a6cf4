// One layer's process: how it is spawned (as the execution user through switch.ts, in its own
// process group, through the shell wrappers below), watched (output tail, timeout, pipes), killed
// (SIGTERM to the group, SIGKILL after the grace), and how its failure is named in a reason.

import type { Logger } from '../log.js';
import type { StartInfo } from '../worker-protocol.js';
import type { Env, ExecIdentity } from './env.js';
import { LaunchError } from './launch-error.js';
import { layerSpawn, type LayerSpawn } from './switch.js';
import { ulimitScript } from './limits.js';
import { TailBuffer } from './proc.js';
import { type ChildEvents, type LayerChild, SET_UP_PASSED_FD, type SpawnLayer } from './layer-child.js';
import { sharedLauncher } from './launcher.js';
import { type DirectJob, LAUNCH_MARK, WRAPPER_FAILED_EXIT } from './direct-job.js';
import { formatDuration } from '../../model/units.js';
import { type LongTimeout, setLongTimeout } from '../long-timer.js';

/** Output of a pre/post-exec kept to name the failure (the last line goes into the reason). */
export const LAYER_OUTPUT_TAIL_BYTES = 4096;
export const REASON_DETAIL_CHARS_MAX = 200;
export { WRAPPER_FAILED_EXIT } from './direct-job.js';

export type Layer = 'profile pre-exec' | 'job pre-exec' | 'job' | 'job post-exec' | 'profile post-exec';

export function isPostExec(layer: Layer): boolean {
  return layer === 'job post-exec' || layer === 'profile post-exec';
}

export interface LayerOptions {
  readonly host: string;
  readonly log: Logger;
  /**
   * util-linux `setpriv` (root only): switches uid/gid AND sets the user's supplementary groups
   * (`--init-groups`). Null: Node's spawn uid/gid, which drops supplementary groups.
   */
  readonly setpriv: string | null;
  readonly killGrace_ms: number;
  /** A pre/post-exec running longer than this is killed (and counts as failed). */
  readonly hookTimeout_ms: number;
  /**
   * Every job layer through its wrapper shell, even one the launcher could exec without it
   * (direct-job.ts); the tests run the same jobs both ways.
   */
  readonly jobWrapperAlways?: boolean;
  /** How a layer's process is started: through this worker's launcher process (default), or `spawnDirect`. */
  readonly spawnLayer?: SpawnLayer;
  /**
   * A job layer with a memory or cpu limit may run without its wrapper: `spawnLayer` sets rlimits
   * (the native spawner, native-child.ts). Default: whether this worker's launcher uses it.
   */
  readonly directLimits?: boolean;
}

/** What the run tells the spawner, and is told by it. */
export interface LayerWatch {
  /** A layer's process started (its group and start time), except the job layer when it has its own onSpawn. */
  spawned(pgid: number | null, procStart: string | null): void;
  /** Whether a layer that has just started must be terminated at once (the run is being killed). */
  mustStop(layer: Layer): boolean;
}

export interface LayerEnd {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly spawnError: string | null;
  readonly timedOut: boolean;
  /** Killed because its launcher died (launcher.ts), saying so; null otherwise. */
  readonly lost: string | null;
  readonly tail: TailBuffer;
}

const HOOK_WRAPPER = `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}cannot enter the working directory $XCE_CWD as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }; exec /bin/sh -c "$1"`;

/**
 * The set-up checks, run as the user before any layer: the working directory, and the stdout and
 * stderr files (`out` and `err` name the shell variables holding them). `true` is a regular
 * built-in: its failed redirection does not end the shell, and no subshell is forked for it.
 */
function setUpChecks(out: string, err: string): string {
  return [
    `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}working directory $XCE_CWD does not exist or is not accessible to user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
    `{ true >>"${out}"; } 2>/dev/null || { echo "${LAUNCH_MARK}cannot write the stdout file ${out} as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
    `{ true >>"${err}"; } 2>/dev/null || { echo "${LAUNCH_MARK}cannot write the stderr file ${err} as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }`,
  ].join('; ');
}

/** The set-up checks as a layer of their own (a run with a pre-exec): `$1` and `$2` are the stdout and stderr files. */
export const PREFLIGHT = setUpChecks('$1', '$2');

/**
 * The job layer's wrapper: cwd, limits, output files, then exec the job's argv. `withSetUp` (a run
 * without any pre-exec): the set-up checks first, in the same process, then one byte on
 * SET_UP_PASSED_FD, which is closed before the job is exec'd; a run whose wrapper exits without
 * that byte failed its set-up, and the job never started.
 */
export function jobWrapper(info: StartInfo, withSetUp = false): string {
  // A job script (job-script.ts): the argument after out and err is its file, written from standard input, privately, never through an existing name.
  const script =
    info.script === null || info.script === undefined
      ? ''
      : `(umask 077; set -C; cat >"$script") 2>/dev/null || { echo "${LAUNCH_MARK}cannot write the job script $script as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }; `;
  const enter = withSetUp
    ? `${setUpChecks('$out', '$err')}; ${script}printf s >&${SET_UP_PASSED_FD}; exec ${SET_UP_PASSED_FD}>&-; `
    : `cd -- "$XCE_CWD" 2>/dev/null || { echo "${LAUNCH_MARK}cannot enter the working directory $XCE_CWD as user $USER" >&2; exit ${WRAPPER_FAILED_EXIT}; }; ${script}`;
  return (
    `out=$1; err=$2; shift 2; ` +
    (script === '' ? '' : 'script=$1; shift; ') +
    enter +
    ulimitScript(info.limits) +
    `exec >>"$out" 2>>"$err" </dev/null || exit ${WRAPPER_FAILED_EXIT}; exec "$@"`
  );
}

/** How a layer's standard input and pipes are set up (layer-child.ts's SpawnRequest). */
export interface LayerIo {
  readonly stdin: string | null;
  readonly readStdout: boolean;
  readonly setUpFd: boolean;
  /** The job layer as its wrapper would run it, for the launcher to run without the wrapper (direct-job.ts). */
  readonly direct?: DirectJob;
}

/** The job layer's own handlers: once its process runs, and once its set-up checks passed. */
export interface JobLayerHooks {
  spawned(child: LayerChild, pid: number, procStart: string | null): void;
  setUp?(): void;
}

/** Starts and watches one run's layers, one at a time. */
export class LayerSpawner {
  private current: { child: LayerChild; layer: Layer; spawned: boolean } | null = null;
  private graceTimer: LongTimeout | null = null;
  /** Processes this run has started (each layer is one: setpriv and the shell exec in place). */
  spawned = 0;

  constructor(
    private readonly opts: LayerOptions,
    private readonly watch: LayerWatch,
  ) {}

  /** Terminates the current layer; without `force` a post-exec runs to its end (bounded by the hook timeout). */
  killCurrent(force: boolean): void {
    const cur = this.current;
    if (cur === null) return;
    if (!force && isPostExec(cur.layer)) return;
    this.terminate(cur.child);
  }

  /** Sends `signal` to the current layer's process group (suspend: SIGSTOP, resume: SIGCONT); false when none runs. */
  signalCurrent(signal: 'SIGSTOP' | 'SIGCONT'): boolean {
    const cur = this.current;
    if (cur === null || !cur.spawned) return false;
    cur.child.signal(signal);
    return true;
  }

  /** SIGTERM to the child's group, SIGKILL after the grace. */
  terminate(child: LayerChild): void {
    child.signal('SIGTERM');
    this.graceTimer?.clear();
    this.graceTimer = setLongTimeout(() => child.signal('SIGKILL'), this.opts.killGrace_ms);
  }

  /** Runs a pre/post-exec; null when it succeeded, else the reason naming the layer. */
  async runHook(identity: ExecIdentity, layer: Layer, script: string, env: Env): Promise<string | null> {
    const r = await this.runLayer(
      identity,
      layer,
      ['/bin/sh', '-c', HOOK_WRAPPER, 'xce-hook', script],
      env,
      this.opts.hookTimeout_ms,
      { stdin: null, readStdout: true, setUpFd: false },
    );
    return (
      wrapperFailure(r, this.opts.host) ?? (r.exitCode === 0 ? null : layerFailure(layer, r, this.opts.hookTimeout_ms))
    );
  }

  runLayer(
    identity: ExecIdentity,
    layer: Layer,
    argv: string[],
    env: Env,
    timeout_ms: number | null,
    io: LayerIo,
    jobHooks?: JobLayerHooks,
  ): Promise<LayerEnd> {
    const tail = new TailBuffer(LAYER_OUTPUT_TAIL_BYTES);
    const how = this.plan(identity, layer, argv, env);
    if (typeof how === 'string') return Promise.resolve(notStarted(how, tail));
    const spawnLayer = this.opts.spawnLayer ?? sharedLauncher().spawn;
    return new Promise<LayerEnd>((resolve) => {
      this.spawned++;
      let settled = false;
      let timedOut = false;
      let timer: LongTimeout | null = null;
      const finish = (end: Omit<LayerEnd, 'tail' | 'timedOut'>): void => {
        if (settled) return;
        settled = true;
        timer?.clear();
        this.graceTimer?.clear();
        this.graceTimer = null;
        this.current = null;
        resolve({ ...end, timedOut, tail });
      };
      const cur = {
        child: null as unknown as LayerChild, // set below, before any event can come (events are asynchronous)
        layer,
        spawned: false,
      };
      const events: ChildEvents = {
        spawned: (pid, procStart) => {
          cur.spawned = true;
          if (jobHooks === undefined) this.watch.spawned(pid, procStart);
          else jobHooks.spawned(cur.child, pid, procStart);
          if (this.watch.mustStop(layer)) this.terminate(cur.child);
          if (timeout_ms !== null)
            timer = setLongTimeout(() => {
              timedOut = true;
              this.terminate(cur.child);
            }, timeout_ms);
        },
        failed: (message) => finish({ exitCode: null, signal: null, spawnError: message, lost: null }),
        output: (chunk) => tail.push(chunk),
        setUp: () => jobHooks?.setUp?.(),
        ended: (exitCode, signal, lost) => {
          if (lost !== null) this.opts.log.warn('a layer was killed: the process launcher died', { layer });
          finish({ exitCode, signal, spawnError: null, lost });
        },
      };
      try {
        // Without the wrapper only where nothing was switched: the launcher opens the output files as itself.
        const direct = how.ids === null && how.file === argv[0] ? io.direct : undefined;
        const req = { file: how.file, args: how.args, env: how.env, ids: how.ids, ...io, direct };
        cur.child = spawnLayer(req, events);
      } catch (err) {
        // Node's spawn rejects the request outright (a bad argument): the layer fails to start.
        return finish({ exitCode: null, signal: null, spawnError: (err as Error).message, lost: null });
      }
      if (!settled) this.current = cur;
    });
  }

  /** The process to start (switch.ts), or why the layer cannot start. */
  private plan(identity: ExecIdentity, layer: Layer, argv: string[], env: Env): LayerSpawn | string {
    // The layer's environment reaches only a process that already runs as the layer's user
    // (switch.ts): never setpriv or anything else exec'd as root.
    let how: LayerSpawn;
    try {
      how = layerSpawn(identity, this.opts.setpriv, argv, env);
    } catch (err) {
      // An environment the switch cannot carry: the layer fails to start, naming why.
      if (err instanceof LaunchError) return err.reason;
      throw err;
    }
    if (how.dropped.length > 0)
      this.opts.log.warn('a layer running as root does not get the loader variables it set', {
        layer,
        dropped: how.dropped,
      });
    return how;
  }
}

function notStarted(reason: string, tail: TailBuffer): LayerEnd {
  return { exitCode: null, signal: null, spawnError: reason, timedOut: false, lost: null, tail };
}

/** The reason a wrapper printed (`xce-launch: ...`) or a spawn error, naming the host; null otherwise. */
export function wrapperFailure(r: LayerEnd, host: string): string | null {
  if (r.spawnError !== null) return `cannot start a process on host ${host}: ${r.spawnError}`;
  if (r.exitCode !== WRAPPER_FAILED_EXIT) return null;
  const line = r.tail
    .text()
    .split('\n')
    .find((l) => l.startsWith(LAUNCH_MARK));
  return line === undefined ? null : `${line.slice(LAUNCH_MARK.length).trim()} on host ${host}`;
}

/** Why a layer failed: its timeout, its signal or its exit code, with the last line of its output. */
export function layerFailure(layer: string, r: LayerEnd, timeout_ms: number | null): string {
  const detail = r.tail.lastLine(REASON_DETAIL_CHARS_MAX);
  const suffix = detail === '' ? '' : ` (output: ${detail})`;
  if (r.timedOut && timeout_ms !== null)
    return `${layer} did not finish within ${formatDuration(Math.ceil(timeout_ms / 1000))} and was killed${suffix}`;
  if (r.lost !== null) return `${layer} was ${r.lost}${suffix}`;
  if (r.signal !== null) return `${layer} was killed by ${r.signal}${suffix}`;
  return `${layer} exited with code ${r.exitCode ?? 'unknown'}${suffix}`;
}
