// The job layer without its wrapper shell. A job with no job script, no ulimit and no identity
// switch needs of the wrapper (layer-process.ts jobWrapper) only its set-up checks, its `cd`, its
// output redirections and its `exec "$@"`: the launcher does those itself here and execs the job's
// own program, so the job costs one exec instead of two (each exec of a dynamically linked program
// is a loader start, about 0.6 ms of CPU on the 2-core VM, measured in benchmarks/README.md).
//
// What the job sees is what the wrapper gave it: the same working directory, the same output
// files opened the same way (append, created 0666 minus the umask), standard input from /dev/null,
// argv[0] as written, and PWD/OLDPWD as dash's `cd` from / exports them. What the wrapper would do
// differently is left to the wrapper (`fallback`): a command not found or not executable (the shell's
// own 127/126 and message), a file that is neither ELF nor `#!` (the shell runs it as a script),
// an output path that is neither a regular file nor /dev/null (a FIFO would block the launcher), a
// relative PATH entry.
// A job with a memory or cpu limit runs so only through the native spawner (native-spawner.ts),
// which sets the rlimits as `ulimit` does and opens the output files itself; Node's spawn cannot.
// Imports only node: modules and spawn-protocol.ts: the launcher process (launcher-main.ts) loads it.

import { accessSync, closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import type { NativeSpawnRequest, SpawnLimits } from './spawn-protocol.js';

/** Exit code of the wrappers when they cannot set the job up; they print a LAUNCH_MARK line first. */
export const WRAPPER_FAILED_EXIT = 254;
/** The mark of a wrapper's own failure line on its standard error. */
export const LAUNCH_MARK = 'xce-launch: ';

/** The job layer as the wrapper would run it: the launcher may run it without the wrapper. */
export interface DirectJob {
  /** The working directory (the wrapper's XCE_CWD). */
  readonly cwd: string;
  /** The output files as the wrapper's `$out` and `$err` (relative ones to `cwd`). */
  readonly out: string;
  readonly err: string;
  /** The job's own argv (after the wrapper's `exec "$@"`). */
  readonly argv: readonly string[];
  /** The set-up checks are this layer's (no pre-exec ran them before): their wording when they fail. */
  readonly fused: boolean;
  /** The job's rlimits (job-prepare.ts sets them only for a worker whose launcher uses the native spawner). */
  readonly limits?: SpawnLimits;
}

/** How to start the job: its program with its output files open, the wrapper's failure, or the wrapper itself. */
export type DirectPlan =
  /** The job exec'd as its own program: what xce-spawn is sent (NativeSpawnRequest), or Node's spawn is given. */
  | (NativeSpawnRequest & {
      readonly kind: 'exec';
      /**
       * Open descriptors of the stdout and stderr files, for the child's 1 and 2; the caller closes
       * them. Null: the native spawner opens them (its `unwritable` event is `outputFailed`).
       */
      readonly fds: readonly [number, number] | null;
    })
  | { readonly kind: 'set-up-failed'; readonly line: string }
  | { readonly kind: 'fallback' };

const FALLBACK: DirectPlan = { kind: 'fallback' };
/** `>>`: write-only, append, create 0666 (minus the umask); non-blocking so that a FIFO cannot hold the launcher. */
const PROBE_FLAGS =
  constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOCTTY;
/** /dev/null's device number (major 1, minor 3): the one device opened here, as it never blocks. */
const DEV_NULL_RDEV = (1 << 8) | 3;
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_NOCTTY;

/**
 * The job's program, its output files and its environment; every check the wrapper would make, as the
 * same user. `native`: the native spawner starts it (it opens the output files and can set limits).
 */
export function planDirectJob(job: DirectJob, env: Readonly<Record<string, string>>, native = false): DirectPlan {
  const limits = job.limits ?? {};
  if (!native && (limits.cpu_s !== undefined || limits.memory_bytes !== undefined)) return FALLBACK;
  const user = env.USER ?? '';
  const cwd = posix.resolve('/', job.cwd);
  if (!isSearchableDir(cwd))
    return failed(
      job.fused
        ? `working directory ${job.cwd} does not exist or is not accessible to user ${user}`
        : `cannot enter the working directory ${job.cwd} as user ${user}`,
    );
  const command = job.argv[0];
  if (command === undefined || command === '') return FALLBACK;
  const file = resolveCommand(command, cwd, env.PATH);
  if (file === null || !isExecFormat(file)) return FALLBACK;
  const paths = { out: posix.resolve(cwd, job.out), err: posix.resolve(cwd, job.err) };
  const fds = native ? null : openOutputs(job, env, paths);
  if (fds !== null && !Array.isArray(fds)) return fds;
  return {
    kind: 'exec',
    file,
    argv0: command,
    args: job.argv.slice(1),
    cwd,
    // What dash's `cd` from / exports to the program it then execs.
    env: { ...env, OLDPWD: '/', PWD: cwd },
    ...paths,
    limits,
    fds,
  };
}

/** Both output files open, `>>`-style, stdout first (the wrapper's order); else what the wrapper would do. */
function openOutputs(
  job: DirectJob,
  env: Readonly<Record<string, string>>,
  paths: { out: string; err: string },
): [number, number] | DirectPlan {
  const out = openAppend(paths.out);
  if (typeof out !== 'number') return out === 'fallback' ? FALLBACK : outputFailed(job, env, 'stdout');
  const err = openAppend(paths.err);
  if (typeof err !== 'number') {
    closeSync(out);
    return err === 'fallback' ? FALLBACK : outputFailed(job, env, 'stderr');
  }
  return [out, err];
}

/** The wrapper's set-up failure for an output file it cannot open for writing. */
export function outputFailed(
  job: DirectJob,
  env: Readonly<Record<string, string>>,
  which: 'stdout' | 'stderr',
): Extract<DirectPlan, { kind: 'set-up-failed' }> {
  return failed(`cannot write the ${which} file ${which === 'stdout' ? job.out : job.err} as user ${env.USER ?? ''}`);
}

function failed(message: string): Extract<DirectPlan, { kind: 'set-up-failed' }> {
  return { kind: 'set-up-failed', line: `${LAUNCH_MARK}${message}\n` };
}

function isSearchableDir(path: string): boolean {
  return isAccessible(path, 'dir');
}

/**
 * The file `exec "$@"` would run (dash's PATH search: the first regular executable file), or null
 * when the wrapper is to find out itself: not found, an unset PATH, or a relative PATH entry first.
 */
export function resolveCommand(command: string, cwd: string, path: string | undefined): string | null {
  if (command.includes('/')) {
    const file = posix.resolve(cwd, command);
    return isExecutableFile(file) ? file : null;
  }
  if (path === undefined) return null;
  for (const dir of path.split(':')) {
    if (!dir.startsWith('/')) return null;
    const file = posix.join(dir, command);
    if (isExecutableFile(file)) return file;
  }
  return null;
}

/** A regular file this process may execute (launch.ts finds an MPI launcher with it too). */
export function isExecutableFile(path: string): boolean {
  return isAccessible(path, 'file');
}

/** A directory this process may enter, or a regular file it may execute (X_OK either way). */
function isAccessible(path: string, kind: 'dir' | 'file'): boolean {
  try {
    const st = statSync(path);
    if (kind === 'dir' ? !st.isDirectory() : !st.isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** An ELF program or a `#!` script: what execve runs. Anything else dash runs as a shell script. */
function isExecFormat(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOCTTY);
  } catch {
    // Executable but not readable (mode 0711): execve runs it; only the format is unknown here.
    return false;
  }
  try {
    const head = Buffer.alloc(4);
    const n = readSync(fd, head, 0, 4, 0);
    return (n >= 2 && head[0] === 0x23 && head[1] === 0x21) || (n === 4 && head.readUInt32BE(0) === 0x7f454c46);
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/**
 * `>>path`: an open descriptor of a regular file, 'failed' when it cannot be opened for writing,
 * 'fallback' when it is neither a regular file nor /dev/null (a FIFO, a tty: the wrapper opens those as the job).
 * The non-blocking probe is reopened through /proc without O_NONBLOCK, so the job's descriptor has
 * exactly the wrapper's flags.
 */
function openAppend(path: string): number | 'failed' | 'fallback' {
  let probe: number;
  try {
    probe = openSync(path, PROBE_FLAGS, 0o666);
  } catch (err) {
    // ENXIO: a FIFO with no reader; the wrapper would wait for one.
    return (err as NodeJS.ErrnoException).code === 'ENXIO' ? 'fallback' : 'failed';
  }
  try {
    const st = fstatSync(probe);
    if (!st.isFile() && !(st.isCharacterDevice() && st.rdev === DEV_NULL_RDEV)) return 'fallback';
    return openSync(`/proc/self/fd/${probe}`, APPEND_FLAGS);
  } catch {
    return 'fallback';
  } finally {
    closeSync(probe);
  }
}
