// The two environments of a job's layers (spec: "Environment of the outer layer and reserved
// names"). Pure functions: what a layer sees is decided here and nowhere else.
//
//   outer (profile pre-exec, profile post-exec): system values + the profile's env. NEVER the job's
//     env, so a job's PATH, BASH_ENV or LD_PRELOAD cannot subvert the admin's script.
//   inner (job pre-exec, the job, job post-exec): system values + the profile's env + the job's env.
//
// System values: the XCE_* facts of the job, HOME / USER / LOGNAME of the execution user, and a
// fixed PATH. The profile's env may replace PATH (an admin's choice, e.g. a module's bin); the
// XCE_* values are set last and cannot be replaced: the XCE_ prefix is reserved (rejected at submit
// and by config validation), and the worker drops any that still arrive, reporting their names.

import { arrayIdOf, arrayIndexOf, isElementId } from '../../model/job-id.js';
import type { StartInfo } from '../worker-protocol.js';

export const FIXED_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const RESERVED_ENV_PREFIX = 'XCE_';

/** Who a job's layers run as on this host. */
export interface ExecIdentity {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
  /** True when the worker (root) switches to this uid/gid; false when it runs jobs as itself. */
  readonly switchUser: boolean;
}

/** How the job layer ended, for the post-execs' XCE_JOB_EXIT_CODE / XCE_JOB_SIGNAL. */
export interface JobEnd {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

export type Env = Record<string, string>;

export interface BuiltEnv {
  readonly env: Env;
  /** XCE_* names found in the profile's or job's env and dropped (they were reserved at submit). */
  readonly dropped: readonly string[];
}

/** `h1:4,h2:4`: the placement as the MPI launchers' host lists take it. */
export function hostList(info: Pick<StartInfo, 'hosts'>): string {
  return info.hosts.map((h) => `${h.host}:${h.tasks}`).join(',');
}

/**
 * The XCE_* values. `end` is given for the post-execs: XCE_JOB_EXIT_CODE is the exit code, or
 * 128 + the signal number when a signal ended the job (the shell's convention), and empty when
 * the job never ran; XCE_JOB_SIGNAL is the signal's name (`SIGTERM`) or empty.
 */
export function systemValues(info: StartInfo, host: string, cwd: string, end: JobEnd | null | 'not-run'): Env {
  const env: Env = {
    // An array element: its array's id (as LSF's LSB_JOBID) and its index; 0 for a plain job.
    XCE_JOBID: String(isElementId(info.jobId) ? arrayIdOf(info.jobId) : info.jobId),
    XCE_ARRAY_INDEX: String(arrayIndexOf(info.jobId)),
    XCE_RUN: String(info.run),
    XCE_USER: info.user,
    XCE_QUEUE: info.queue,
    XCE_APP: info.profile ?? '',
    XCE_APP_LABEL: info.profileLabel ?? '',
    XCE_HOST: host,
    XCE_HOSTS: hostList(info),
    XCE_TASKS: String(info.tasks),
    XCE_LAUNCH_TYPE: info.launchType,
    XCE_CWD: cwd,
  };
  if (end === 'not-run') {
    env['XCE_JOB_EXIT_CODE'] = '';
    env['XCE_JOB_SIGNAL'] = '';
  } else if (end !== null) {
    env['XCE_JOB_EXIT_CODE'] = String(end.exitCode ?? 128 + signalNumber(end.signal));
    env['XCE_JOB_SIGNAL'] = end.signal ?? '';
  }
  return env;
}

function signalNumber(signal: string | null): number {
  const SIGNALS: Record<string, number> = {
    SIGHUP: 1,
    SIGINT: 2,
    SIGQUIT: 3,
    SIGABRT: 6,
    SIGKILL: 9,
    SIGSEGV: 11,
    SIGPIPE: 13,
    SIGALRM: 14,
    SIGTERM: 15,
    SIGXCPU: 24,
    SIGXFSZ: 25,
  };
  return signal === null ? 0 : (SIGNALS[signal] ?? 0);
}

function base(identity: ExecIdentity): Env {
  return { PATH: FIXED_PATH, HOME: identity.home, USER: identity.name, LOGNAME: identity.name };
}

function addUser(env: Env, vars: StartInfo['profileEnv'], dropped: string[]): void {
  for (const v of vars) {
    if (v.name.startsWith(RESERVED_ENV_PREFIX)) {
      dropped.push(v.name);
      continue;
    }
    env[v.name] = v.value;
  }
}

/** Builds one layer's environment for a job on `host` in `cwd` (`end`: how its job ended, for post-exec). */
type LayerEnv = (
  info: StartInfo,
  identity: ExecIdentity,
  host: string,
  cwd: string,
  end: JobEnd | null | 'not-run',
) => BuiltEnv;

/** The profile's layer: system values + the profile's env; never the job's. */
export const outerEnv: LayerEnv = (info, identity, host, cwd, end) =>
  layered([info.profileEnv], info, identity, host, cwd, end);

/** The job's layer (job pre-exec, job, job post-exec): system values + the profile's env + the job's env. */
export const innerEnv: LayerEnv = (info, identity, host, cwd, end) =>
  layered([info.profileEnv, info.jobEnv], info, identity, host, cwd, end);

/** The base, then each list of user variables in turn (reserved names dropped), then the system values over them. */
function layered(
  userVars: readonly StartInfo['profileEnv'][],
  ...[info, identity, host, cwd, end]: Parameters<LayerEnv>
): BuiltEnv {
  const env = base(identity);
  const dropped: string[] = [];
  for (const vars of userVars) addUser(env, vars, dropped);
  Object.assign(env, systemValues(info, host, cwd, end));
  return { env, dropped };
}
