// Turns `xcecli jobs submit` flags into the job's own values (a JobSpec). Nothing is merged here:
// the controller applies the profile's essentials and the additive rule.

import { ENV_VARS_MAX, envCountMessage, envNameProblem } from '../model/job-limits.js';
import { JobValueError, jobSpecOf } from '../model/job-own-values.js';
import { TASKS_MAX, type JobChanges, type JobSpec } from '../api/protocol.js';
import { positiveInteger, UsageError } from './numeric-flags.js';

export { UsageError };

export interface SubmitFlags {
  app?: string;
  queue?: string;
  name?: string;
  tasks?: string;
  resreq?: string;
  env?: string[];
  limit?: string[];
  preExec?: string;
  postExec?: string;
  cwd?: string;
  output?: string;
  error?: string;
  dependency?: string;
  depNever?: string;
}

const LIMIT_KEYS = ['runtime', 'memory', 'cpu', 'tasks'] as const;

function pairs(list: readonly string[] | undefined, flag: string): Array<[string, string]> {
  return (list ?? []).map((item) => {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} "${item}": expected NAME=VALUE`);
    return [item.slice(0, eq), item.slice(eq + 1)];
  });
}

export function buildJobSpec(flags: SubmitFlags, command: readonly string[], cwd: string): JobSpec {
  if (command.length === 0)
    throw new UsageError('no command given: put it after --, e.g. `xcecli jobs submit --app python -- echo hello`');
  const job: { -readonly [K in keyof JobSpec]: JobSpec[K] } = { command: [...command], cwd: flags.cwd ?? cwd };
  if (flags.app !== undefined) job.app = flags.app;
  if (flags.queue !== undefined) job.queue = flags.queue;
  if (flags.name !== undefined) job.name = flags.name;
  if (flags.dependency !== undefined) {
    if (flags.dependency.trim() === '') throw new UsageError('-w: the dependency expression is empty');
    job.dependency = flags.dependency;
  }
  if (flags.depNever !== undefined) {
    if (flags.depNever !== 'pend' && flags.depNever !== 'kill')
      throw new UsageError(`--dep-never must be pend or kill, got ${JSON.stringify(flags.depNever)}`);
    if (flags.dependency === undefined) throw new UsageError('--dep-never needs a dependency (-w)');
    job.dependencyNever = flags.depNever;
  }
  if (flags.tasks !== undefined) job.tasks = positiveInteger('-n', flags.tasks, TASKS_MAX);
  if (flags.resreq !== undefined) job.resreq = flags.resreq;
  const env = pairs(flags.env, '--env');
  if (env.length > 0) {
    const out: Record<string, string> = {};
    if (env.length > ENV_VARS_MAX) throw new UsageError(`--env: ${envCountMessage(env.length)}`);
    for (const [k, v] of env) {
      const problem = envNameProblem(k);
      if (problem !== null) throw new UsageError(`--env "${k}": ${problem}`);
      if (k in out) throw new UsageError(`--env ${k} is given twice`);
      out[k] = v;
    }
    job.env = out;
  }
  const limits = pairs(flags.limit, '--limit');
  if (limits.length > 0) {
    const out: { runtime?: string; memory?: string; cpu?: string; tasks?: number } = {};
    for (const [k, v] of limits) {
      if (!(LIMIT_KEYS as readonly string[]).includes(k))
        throw new UsageError(`--limit ${k}: unknown limit; use one of ${LIMIT_KEYS.join(', ')}`);
      if (k === 'tasks') {
        out.tasks = positiveInteger('--limit tasks', v);
      } else out[k as 'runtime' | 'memory' | 'cpu'] = v;
    }
    job.limits = out;
  }
  if (flags.preExec !== undefined) job.preExec = flags.preExec;
  if (flags.postExec !== undefined) job.postExec = flags.postExec;
  if (flags.output !== undefined) job.stdout = flags.output;
  if (flags.error !== undefined) job.stderr = flags.error;
  // The controller's own conversion (units, limits), so that a typo fails here, naming the flag.
  try {
    jobSpecOf(job);
  } catch (e) {
    if (e instanceof JobValueError)
      throw new UsageError(
        `${e.field.startsWith('limits.') ? `--limit ${e.field.slice('limits.'.length)}` : e.field === 'tasks' ? '-n' : e.field}: ${e.message}`,
      );
    throw e;
  }
  return job;
}

/** `jobs modify` flags as the changes of a `jobs.modify` request (the options submit shares, checked alike). */
export function modifyChanges(flags: SubmitFlags): JobChanges {
  const job = buildJobSpec(flags, ['-'], '/');
  const out: { -readonly [K in keyof JobChanges]: JobChanges[K] } = {};
  if (job.app !== undefined) out.app = job.app;
  if (job.queue !== undefined) out.queue = job.queue;
  if (job.name !== undefined) out.name = job.name;
  if (job.tasks !== undefined) out.tasks = job.tasks;
  if (job.resreq !== undefined) out.resreq = job.resreq;
  if (job.env !== undefined) out.env = job.env;
  if (job.limits !== undefined) out.limits = job.limits;
  if (Object.keys(out).length === 0)
    throw new UsageError('nothing to change: give at least one of --app, -q, -J/--name, -n, -R, -e, -l');
  return out;
}
