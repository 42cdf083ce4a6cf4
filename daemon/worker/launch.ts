// Launch types: `serial` runs the command once; `openmpi` and `mpich` run it through the launcher
// configured for this host (`mpirun` by default) with the task count and the placement's host list:
//   openmpi: mpirun -np <tasks> --host h1:4,h2:4 <command...>    (Open MPI: --host name:slots)
//   mpich:   mpirun -np <tasks> -hosts h1:4,h2:4 <command...>    (MPICH Hydra: -hosts name:procs; -np = -n)
// XCE_HOSTS / XCE_TASKS carry the same facts in the environment (env.ts).

import { isAbsolute, join } from 'node:path';
import type { StartInfo } from '../worker-protocol.js';
import { hostList } from './env.js';
import { LaunchError } from './launch-error.js';
import { isExecutableFile } from './direct-job.js';

export const LAUNCHER_DEFAULT = 'mpirun';

/** The launcher command per MPI launch type: a name searched on the job's PATH, or an absolute path. */
export interface Launchers {
  readonly openmpi: string;
  readonly mpich: string;
}

export const DEFAULT_LAUNCHERS: Launchers = { openmpi: LAUNCHER_DEFAULT, mpich: LAUNCHER_DEFAULT };

/** `mpirun` (both types) or `openmpi=/opt/ompi/bin/mpirun,mpich=mpiexec.hydra`. */
export function parseLaunchers(text: string): Launchers {
  const t = text.trim();
  if (t === '') throw new LaunchError('empty --launcher: give a command (mpirun) or openmpi=...,mpich=...');
  if (!t.includes('=')) return { openmpi: t, mpich: t };
  const out: { openmpi: string; mpich: string } = { ...DEFAULT_LAUNCHERS };
  for (const part of t.split(',')) {
    const [k, v] = part.split('=', 2).map((s) => s.trim());
    if ((k !== 'openmpi' && k !== 'mpich') || v === undefined || v === '') {
      throw new LaunchError(`bad --launcher part "${part}": expected openmpi=<command> or mpich=<command>`);
    }
    out[k] = v;
  }
  return out;
}

/** A command's absolute path: itself when absolute, else the first executable match on `pathEnv`; null when none. */
export function findExecutable(command: string, pathEnv: string): string | null {
  if (isAbsolute(command)) return isExecutableFile(command) ? command : null;
  if (command.includes('/')) return null;
  for (const dir of pathEnv.split(':')) {
    if (dir === '') continue;
    const p = join(dir, command);
    if (isExecutableFile(p)) return p;
  }
  return null;
}

/**
 * The job layer's argv. For MPI types the launcher is looked up on `pathEnv` (the job's PATH:
 * the fixed PATH, or the profile's/job's PATH when they set one); LaunchError when it is missing:
 * `launch type openmpi needs mpirun, which is not installed on host h1`.
 */
export function jobArgv(info: StartInfo, launchers: Launchers, pathEnv: string, host: string): string[] {
  if (info.launchType === 'serial') return [...info.command];
  const launcher = launchers[info.launchType];
  const path = findExecutable(launcher, pathEnv);
  if (path === null)
    throw new LaunchError(`launch type ${info.launchType} needs ${launcher}, which is not installed on host ${host}`);
  const hostFlag = info.launchType === 'openmpi' ? '--host' : '-hosts';
  return [path, '-np', String(info.tasks), hostFlag, hostList(info), ...info.command];
}
