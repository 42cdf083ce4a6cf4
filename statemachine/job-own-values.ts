// A job's own values as a client sends them (`-R`, `-n`, `--env`, `--limit`, `--pre-exec`,
// `--post-exec`: strings with units) → the normalised JobOwnValues the merge and the submit fact use.
// Refuses malformed input with a typed error naming the field; the additive rule itself is merge's.

import type { EnvVar, JobOwnValues, Limits } from './profile-types.js';
import { parseResReq, ResReqSyntaxError } from './resreq.js';
import { parseDuration, parseSize, UnitSyntaxError } from './units.js';

export const JOB_ENV_VARS_MAX = 1024;
export const JOB_ENV_VALUE_CHARS_MAX = 64 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface JobOwnValuesInput {
  readonly resreq?: string | null;
  readonly tasks?: number | null;
  readonly env?: Readonly<Record<string, string>> | null;
  readonly limits?: {
    readonly runtime?: string | number;
    readonly memory?: string | number;
    readonly cpu?: string | number;
    readonly tasks?: number;
  } | null;
  readonly pre_exec?: string | null;
  readonly post_exec?: string | null;
}

export class JobValueError extends Error {
  override readonly name = 'JobValueError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export function jobOwnValues(input: JobOwnValuesInput): JobOwnValues {
  let resreq: JobOwnValues['resreq'] = null;
  if (input.resreq !== undefined && input.resreq !== null && input.resreq.trim() !== '') {
    try {
      resreq = parseResReq(input.resreq);
    } catch (e) {
      if (e instanceof ResReqSyntaxError) throw new JobValueError('resreq', e.message);
      throw e;
    }
  }
  const tasks = input.tasks ?? null;
  if (tasks !== null && (!Number.isInteger(tasks) || tasks < 1)) throw new JobValueError('tasks', `a task count is a whole number of at least 1, not ${tasks}`);

  const env: EnvVar[] = [];
  const entries = Object.entries(input.env ?? {});
  if (entries.length > JOB_ENV_VARS_MAX) throw new JobValueError('env', `a job may set at most ${JOB_ENV_VARS_MAX} environment variables`);
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name)) throw new JobValueError('env', `environment variable name "${name}" is not valid: use letters, digits and "_", not starting with a digit`);
    if (typeof value !== 'string') throw new JobValueError('env', `environment variable ${name} must have a string value`);
    if (value.length > JOB_ENV_VALUE_CHARS_MAX) throw new JobValueError('env', `environment variable ${name} is longer than ${JOB_ENV_VALUE_CHARS_MAX} characters`);
    env.push({ name, value });
  }
  env.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const limits: { -readonly [K in keyof Limits]: Limits[K] } = {};
  const l = input.limits ?? {};
  const unit = (field: string, v: string | number, parse: (s: string) => number): number => {
    let n: number;
    try {
      n = typeof v === 'number' ? v : parse(v);
    } catch (e) {
      if (e instanceof UnitSyntaxError) throw new JobValueError(field, e.message);
      throw e;
    }
    if (!Number.isSafeInteger(n) || n <= 0) throw new JobValueError(field, `${field} must be larger than zero`);
    return n;
  };
  if (l.runtime !== undefined) limits.runtime_s = unit('limits.runtime', l.runtime, parseDuration);
  if (l.memory !== undefined) limits.memory_bytes = unit('limits.memory', l.memory, parseSize);
  if (l.cpu !== undefined) limits.cpu_s = unit('limits.cpu', l.cpu, parseDuration);
  if (l.tasks !== undefined) limits.tasks = unit('limits.tasks', l.tasks, Number);

  const str = (s: string | null | undefined): string | null => (s === undefined || s === null || s === '' ? null : s);
  return { resreq, tasks, env, limits, preExec: str(input.pre_exec), postExec: str(input.post_exec) };
}
