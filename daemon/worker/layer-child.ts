// A layer's process as the run sees it (LayerChild), and the direct way to start one: Node's spawn
// in the calling process. The worker uses the direct way only without its launcher (launcher.ts);
// the launcher process uses it for every layer, so both ways behave alike to the last event.
// Imports only node:, proc.ts and direct-job.ts: the launcher (launcher-main.ts) loads this file and stays small.

import { type ChildProcess, spawn, type StdioOptions } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { procStartTicks, signalGroup } from './proc.js';
import { type DirectJob, type DirectPlan, planDirectJob, WRAPPER_FAILED_EXIT } from './direct-job.js';

/** After a layer's process exits, how long to wait for its pipes to close (a grandchild may hold them). */
export const PIPE_CLOSE_WAIT_MS = 500;
/** The descriptor on which the job layer's wrapper says that the set-up checks passed. */
export const SET_UP_PASSED_FD = 3;

/** What to start: the process (switch.ts's plan) and its standard input and pipes. */
export interface SpawnRequest {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Node's uid/gid switch (no setpriv), or null. */
  readonly ids: { readonly uid: number; readonly gid: number } | null;
  /** Written to the process's standard input, then closed; null: no standard input. */
  readonly stdin: string | null;
  /** Whether its standard output is read (a hook's), besides its standard error (always read). */
  readonly readStdout: boolean;
  /** Whether SET_UP_PASSED_FD is a pipe whose first byte says that the set-up checks passed. */
  readonly setUpFd: boolean;
  /** The job layer as its wrapper (file, args) would run it: run without the wrapper where it can be (direct-job.ts). */
  readonly direct?: DirectJob;
}

/** What a layer's process tells, in this order: spawned or failed, then output and set-up, then ended. */
export interface ChildEvents {
  spawned(pid: number, procStart: string | null): void;
  /** It could not be started at all (nothing runs). */
  failed(message: string): void;
  /** A piece of its standard output or error. */
  output(chunk: Buffer): void;
  /** The byte on SET_UP_PASSED_FD. */
  setUp(): void;
  /**
   * It exited (its group was then killed) and its pipes closed or PIPE_CLOSE_WAIT_MS passed.
   * `lost`: it did not end by itself but was killed because its launcher died, saying so.
   */
  ended(exitCode: number | null, signal: string | null, lost: string | null): void;
}

/** A started layer process: its process group is signalled through this. */
export interface LayerChild {
  /** Sends `signal` to its process group, unless it already ended. */
  signal(signal: NodeJS.Signals): void;
}

/** Starts the layer's process; every outcome comes through `events`. */
export type SpawnLayer = (req: SpawnRequest, events: ChildEvents) => LayerChild;

/**
 * Starts a layer's process with Node's spawn in this process (detached: its own session and group).
 * A job layer that may run without its wrapper (`direct`, direct-job.ts) is exec'd as its own
 * program with its output files open, unless the plan leaves it to the wrapper.
 */
export const spawnDirect: SpawnLayer = (req, events) => {
  const plan = req.direct === undefined ? null : planDirectJob(req.direct, req.env);
  if (plan?.kind === 'set-up-failed') return setUpFailed(plan.line, events);
  const child = plan?.kind === 'exec' ? spawnPlanned(plan) : spawnWrapped(req);
  return watchChild(child, req, plan?.kind === 'exec', events);
};

/** The layer through its wrapper (the request's own file and args), Node's spawn, detached. */
export function spawnWrapped(req: SpawnRequest): ChildProcess {
  const stdio: StdioOptions = [
    req.stdin === null ? 'ignore' : 'pipe',
    req.readStdout ? 'pipe' : 'ignore',
    'pipe',
    ...(req.setUpFd ? (['pipe'] as const) : []),
  ];
  return spawn(req.file, req.args, { env: req.env, stdio, detached: true, cwd: '/', ...(req.ids ?? {}) });
}

function spawnPlanned(plan: Extract<DirectPlan, { kind: 'exec' }>): ChildProcess {
  const fds = plan.fds ?? []; // always opened: planned for Node's spawn (not native)
  try {
    return spawn(plan.file, plan.args, {
      argv0: plan.argv0,
      env: plan.env,
      stdio: ['ignore', fds[0], fds[1]],
      detached: true,
      cwd: plan.cwd,
    });
  } finally {
    // The child has its own copies (or was never made).
    for (const fd of fds) closeSync(fd);
  }
}

/** The wrapper's failed set-up without a wrapper: its marked line, then its exit code (as events always come, later). */
export function setUpFailed(line: string, events: ChildEvents): LayerChild {
  setImmediate(() => {
    events.output(Buffer.from(line));
    events.ended(WRAPPER_FAILED_EXIT, null, null);
  });
  return { signal: () => undefined };
}

/** The events of a started process; `direct`: its set-up passed before it was spawned (no set-up pipe). */
export function watchChild(child: ChildProcess, req: SpawnRequest, direct: boolean, events: ChildEvents): LayerChild {
  let exited = false;
  let ended = false;
  const end = (code: number | null, signal: string | null): void => {
    if (ended) return;
    ended = true;
    events.ended(code, signal, null);
  };
  child.stdout?.on('data', (c: Buffer) => events.output(c));
  child.stderr?.on('data', (c: Buffer) => events.output(c));
  const setUp = req.setUpFd && !direct ? (child.stdio[SET_UP_PASSED_FD] as Readable) : null;
  setUp?.once('data', () => events.setUp());
  setUp?.on('error', () => undefined);
  child.once('error', (err) => {
    // Node's spawn reports a process it could not start this way (no pid); nothing else here sends or kills.
    if (child.pid !== undefined || ended) return;
    ended = true;
    events.failed(err.message);
  });
  child.once('spawn', () => {
    const pid = child.pid as number;
    events.spawned(pid, procStartTicks(pid));
    if (direct && req.setUpFd) events.setUp();
    if (child.stdin !== null) {
      // The wrapper writes what it reads to the script file (a failed write is its own reason, on stderr).
      child.stdin.on('error', () => undefined);
      child.stdin.end(req.stdin ?? '');
    }
  });
  child.once('exit', (code, signal) => {
    exited = true;
    // Whatever the layer left behind in its group goes with it.
    if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
    const pipes = [child.stdout, child.stderr, setUp].filter((p): p is Readable => p !== null);
    if (pipes.every((p) => p.readableEnded || p.destroyed)) return end(code, signal);
    const wait = setTimeout(() => end(code, signal), PIPE_CLOSE_WAIT_MS);
    child.once('close', () => {
      clearTimeout(wait);
      end(code, signal);
    });
  });
  return {
    signal(sig) {
      if (exited || child.pid === undefined) return;
      signalGroup(child.pid, sig);
    },
  };
}
