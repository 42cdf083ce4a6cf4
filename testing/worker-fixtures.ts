// Fixtures for the worker's tests and benchmarks: a job's StartInfo and JobRun options with plain
// defaults, scratch directories a job run as another user can write, and a bounded wait.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { createLogger, type Logger } from '../daemon/log.js';
import type { StartInfo } from '../daemon/worker-protocol.js';
import { FIXED_PATH } from '../daemon/worker/env.js';
import { workerIsRoot } from '../daemon/worker/identity.js';
import { Executor } from '../daemon/worker/executor.js';
import { JobRun, type JobRunOptions, type RunOutcome } from '../daemon/worker/job-run.js';
import { DEFAULT_LAUNCHERS, findExecutable } from '../daemon/worker/launch.js';
import type { LinkHandler } from '../daemon/worker/link-contract.js';

/** A logger that writes nowhere. */
export function silentLog(component = 'test'): Logger {
  return createLogger({ component }, { sink: { write: () => undefined } });
}

/** A leader link's handler that runs nothing and ignores every frame; `over` replaces some of it. */
export function idleLinkHandler(over: Partial<LinkHandler> = {}): LinkHandler {
  return {
    running: () => [],
    onRegistered: () => undefined,
    onStart: () => undefined,
    onUnreadableStart: () => undefined,
    onKill: () => undefined,
    onSignal: () => undefined,
    onStatusAck: () => undefined,
    onPeek: () => undefined,
    ...over,
  };
}

/** A serial job of the current user on host h1 (one task), with no profile, env, hooks or limits. */
export function startInfo(cwd: string, over: Partial<StartInfo> = {}): StartInfo {
  return {
    jobId: 1,
    run: 1,
    user: userInfo().username,
    queue: 'normal',
    profile: null,
    profileLabel: null,
    mode: 'direct',
    launchType: 'serial',
    command: ['true'],
    cwd,
    stdout: null,
    stderr: null,
    tasks: 1,
    hosts: [{ host: 'h1', tasks: 1 }],
    profileEnv: [],
    jobEnv: [],
    profilePreExec: null,
    profilePostExec: null,
    jobPreExec: null,
    jobPostExec: null,
    limits: {},
    ...over,
  };
}

/** JobRun options of a worker on host h1; it switches identity (setpriv where installed) when it runs as root. */
export function jobRunOptions(over: Partial<JobRunOptions> = {}): JobRunOptions {
  const root = workerIsRoot();
  return {
    host: 'h1',
    log: silentLog(),
    launchers: { openmpi: 'mpirun', mpich: 'mpirun' },
    asRoot: root,
    setpriv: root ? findExecutable('setpriv', FIXED_PATH) : null,
    killGrace_ms: 500,
    hookTimeout_ms: 10_000,
    now: Date.now,
    ...over,
  };
}

/** An Executor of `host` never asked to run a job: its recent runs and state-file bytes, with the clock at 0. */
export function idleExecutor(host: string, jobsMax: number): Executor {
  const opts = { host, log: silentLog(), setpriv: null, killGrace_ms: 1000, hookTimeout_ms: 1000 };
  return new Executor({ ...opts, launchers: DEFAULT_LAUNCHERS, asRoot: false, now: () => 0, jobsMax }, () => undefined);
}

/** A fresh directory below the system's temporary one, with the given mode (0o777: a job run as `nobody` writes here). */
export function scratchDir(prefix: string, mode = 0o777): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(d, mode);
  return d;
}

/** Runs `body` with a fresh scratch directory (mode 0o777) and removes the directory after it. */
export async function inScratchDir<T>(prefix: string, body: (dir: string) => Promise<T>): Promise<T> {
  const dir = scratchDir(prefix);
  try {
    return await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Polls `cond` every 10 ms; throws `timed out waiting for <what>` after `timeout_ms`. */
export async function waitFor(what: string, cond: () => boolean, timeout_ms = 5_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Shell lines that print what a job sees of its start: its argv, working directory, environment,
 * stdin, and the flags of its stdout and stderr. The tests that compare two ways of starting a job
 * run them as `sh -c` and add the lines their way needs (descriptors, limits, session).
 */
export const JOB_VIEW_PROBE: readonly string[] = [
  'tr "\\0" " " </proc/$$/cmdline; echo',
  'pwd',
  'env | grep -v "^_=" | sort',
  'cat; echo "stdin done"',
  'grep ^flags /proc/self/fdinfo/1',
  'grep ^flags /proc/self/fdinfo/2 >&2',
];

/** A job run to its end, as the tests that compare two ways of starting a job read it. */
export interface RanJob {
  readonly outcome: RunOutcome;
  /** The job's command line when the worker was told it started (`\0` between words; `<ended>`: it had already ended); null: it never started. */
  readonly cmdline: string | null;
  /** Its stdout and stderr files (`xce-<id>.out`/`.err` in its cwd, which reads `<cwd>`); `<none>` when absent. */
  readonly out: string;
  readonly err: string;
}

/** Runs `info` with `opts` to its end; `whileRunning` is called once it started. */
export async function runJob(
  info: StartInfo,
  opts: JobRunOptions,
  whileRunning?: (r: JobRun) => void,
): Promise<RanJob> {
  let cmdline: string | null = null;
  const r = new JobRun(info, opts, {
    onStarted: (pid) => {
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        cmdline = '<ended>'; // a job that ended at once
      }
      whileRunning?.(r);
    },
  });
  const outcome = await r.done;
  const read = (f: string): string => {
    try {
      return readFileSync(join(info.cwd, f), 'utf8').replaceAll(info.cwd, '<cwd>');
    } catch {
      return '<none>';
    }
  };
  return { outcome, cmdline, out: read(`xce-${info.jobId}.out`), err: read(`xce-${info.jobId}.err`) };
}

/** Start infos whose set-up fails (in `dir`), each with the wording the failure must have, whichever way the job is started. */
export function setUpFailureCases(dir: string): Array<[Partial<StartInfo>, RegExp]> {
  return [
    [
      { cwd: join(dir, 'missing') },
      /^working directory .*missing does not exist or is not accessible to user .+ on host h1$/,
    ],
    [{ stdout: join(dir, 'no-dir', 'o.txt') }, /^cannot write the stdout file .*no-dir\/o.txt as user .+ on host h1$/],
    [{ stderr: join(dir, 'no-dir', 'e.txt') }, /^cannot write the stderr file .*no-dir\/e.txt as user .+ on host h1$/],
  ];
}
