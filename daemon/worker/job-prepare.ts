// What one run (job-run.ts) resolves before any of its layers starts: the tasks limit, the
// execution user (identity.ts), the working directory, the launcher's argv (launch.ts, with a job
// script in its place: job-script.ts), the output files; and the environment of each layer (env.ts).

import { resolve } from 'node:path';
import type { Logger } from '../log.js';
import type { StartInfo } from '../worker-protocol.js';
import { type Env, type ExecIdentity, FIXED_PATH, innerEnv, type JobEnd, outerEnv } from './env.js';
import { resolveExecIdentity, type UserLookupOptions } from './identity.js';
import { jobArgv, type Launchers } from './launch.js';
import type { Layer } from './layer-process.js';
import { checkTasks, ulimitScript } from './limits.js';
import type { DirectJob } from './direct-job.js';
import { outputPath, scriptRun } from './job-script.js';

/** What a run knows once its user, working directory, command and output files are resolved. */
export interface Prepared {
  readonly identity: ExecIdentity;
  readonly cwd: string;
  readonly argv: string[];
  readonly out: string;
  readonly err: string;
  /** The file a job script is written to (job-script.ts); null: the job is a command. */
  readonly scriptFile: string | null;
  /** The stdout file (absolute) and the owner it must have (null: not checked): what `peek` reads. */
  readonly output: { readonly file: string; readonly uid: number | null };
}

/** The parts of the run's options `prepareRun` uses. */
export interface PrepareOptions {
  readonly host: string;
  readonly log: Logger;
  readonly launchers: Launchers;
  readonly asRoot: boolean;
  readonly userLookup?: UserLookupOptions;
}

/** The environment of a layer: outer for the profile's, inner (with the job's env) for the job's. */
export function layerEnv(
  info: StartInfo,
  host: string,
  p: Pick<Prepared, 'identity' | 'cwd'>,
  layer: Layer,
  end: JobEnd | null | 'not-run' = null,
): Env {
  const built =
    layer === 'profile pre-exec' || layer === 'profile post-exec'
      ? outerEnv(info, p.identity, host, p.cwd, end)
      : innerEnv(info, p.identity, host, p.cwd, end);
  return built.env;
}

/**
 * The job layer for the launcher to run without its wrapper shell (direct-job.ts): when the wrapper
 * would write no job script and the layer switches no identity, and it would set no ulimit unless
 * `withLimits` (the launcher's native spawner sets rlimits; Node's spawn cannot). `fused`: the set-up
 * checks are the job layer's own (no pre-exec).
 */
export function directJob(info: StartInfo, p: Prepared, fused: boolean, withLimits = false): DirectJob | undefined {
  if (p.scriptFile !== null || p.identity.switchUser) return undefined;
  const job = { cwd: p.cwd, out: p.out, err: p.err, argv: p.argv, fused };
  if (ulimitScript(info.limits) === '') return job;
  if (!withLimits) return undefined;
  const { cpu_s, memory_bytes } = info.limits;
  return {
    ...job,
    limits: { ...(cpu_s === undefined ? {} : { cpu_s }), ...(memory_bytes === undefined ? {} : { memory_bytes }) },
  };
}

/** Before any layer: the tasks limit, the execution user, the launcher's argv; a LaunchError (thrown) if one fails. */
export async function prepareRun(info: StartInfo, opts: PrepareOptions): Promise<Prepared> {
  checkTasks(info);
  const identity = await resolveExecIdentity(info.user, opts.host, opts.asRoot, opts.userLookup);
  const cwd = info.cwd === '' ? identity.home : info.cwd;
  const dropped = innerEnv(info, identity, opts.host, cwd, null).dropped;
  if (dropped.length > 0) {
    opts.log.warn(
      'dropped reserved XCE_ variables from the job or profile env (they should have been refused at submit)',
      { jobId: info.jobId, names: dropped },
    );
  }
  const { runs, scriptFile } = scriptRun(info, opts.host);
  const path = layerEnv(info, opts.host, { identity, cwd }, 'job')['PATH'] ?? FIXED_PATH;
  const argv = jobArgv(runs, opts.launchers, path, opts.host);
  const out = outputPath(info.stdout, info.jobId, 'out');
  const output = { file: resolve(cwd, out), uid: identity.switchUser || opts.asRoot ? identity.uid : null };
  return { identity, cwd, argv, out, err: outputPath(info.stderr, info.jobId, 'err'), scriptFile, output };
}
