// A job's own values, converted in one place: a client's strings (`-R`, `-n`, `--env`, `--limit
// runtime=1h`, `--pre-exec`, ...: the API's JobSpec, api/protocol.ts) → the JobSpec a SubmitFact
// carries (units converted, env sorted, empty strings unset; `-R` kept as written) → the
// JobOwnValues the merge takes (`-R` parsed). The API, the state machine, the scheduler, the tests
// and the benchmarks all go through here. Malformed input is refused with a typed error naming the
// field; the additive rule is merge's, admission is admission.ts's.

import type { JobSpec } from './job-spec.js';
import { envProblem, taskCountProblem } from './job-limits.js';
import { limitValueProblem, type LimitKey } from './limit-values.js';
import type { EnvVar, JobOwnValues, Limits, ParsedResReq } from './profile-types.js';
import { parseResReq, ResReqSyntaxError } from './resreq.js';
import { parseDuration, parseSize, UnitSyntaxError } from './units.js';

/** Parsed resource requirements kept by text (parsing is pure, so the cache changes no result). */
export const RESREQ_CACHE_ENTRIES_MAX = 10_000;

/** A job's values as a client sends them; structurally the API's JobSpec (api/protocol.ts). */
export interface JobValuesInput {
  readonly resreq?: string | null;
  readonly tasks?: number | null;
  readonly env?: Readonly<Record<string, string>> | null;
  readonly limits?: {
    readonly runtime?: string | number;
    readonly memory?: string | number;
    readonly cpu?: string | number;
    readonly tasks?: number;
  } | null;
  readonly preExec?: string | null;
  readonly postExec?: string | null;
  readonly command?: readonly string[];
  readonly cwd?: string | null;
  readonly stdout?: string | null;
  readonly stderr?: string | null;
  readonly name?: string | null;
  readonly script?: string | null;
}

export class JobValueError extends Error {
  override readonly name = 'JobValueError';
  constructor(
    /** Where, in the client's terms: `env`, `limits.runtime`, `tasks`, `resreq`. */
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const byName = (a: EnvVar, b: EnvVar): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const unset = (s: string | null | undefined): string | null => (s === undefined || s === null || s === '' ? null : s);

/** The client's values → the SubmitFact's JobSpec. Throws JobValueError; `-R` is not parsed here. */
export function jobSpecOf(input: JobValuesInput): JobSpec {
  const tasks = input.tasks ?? null;
  const tasksProblem = tasks === null ? null : taskCountProblem(tasks);
  if (tasksProblem !== null) throw new JobValueError('tasks', tasksProblem);

  const env: EnvVar[] = [];
  for (const [name, value] of Object.entries(input.env ?? {})) {
    if (typeof value !== 'string')
      throw new JobValueError('env', `environment variable ${name} must have a string value`);
    env.push({ name, value });
  }
  env.sort(byName);
  const bad = envProblem(env);
  if (bad !== null) throw new JobValueError(bad.field, bad.message);

  const limits: { -readonly [K in keyof Limits]: Limits[K] } = {};
  const l = input.limits ?? {};
  // Each limit as the worker will honour it exactly, or refused (limit-values.ts): never adjusted.
  const unit = (key: LimitKey, field: string, v: string | number, parse: (s: string) => number): number => {
    let n: number;
    try {
      n = typeof v === 'number' ? v : parse(v);
    } catch (e) {
      if (e instanceof UnitSyntaxError) throw new JobValueError(field, e.message);
      throw e;
    }
    const problem = limitValueProblem(key, n);
    if (problem !== null) throw new JobValueError(field, problem);
    return n;
  };
  if (l.runtime !== undefined) limits.runtime_s = unit('runtime_s', 'limits.runtime', l.runtime, parseDuration);
  if (l.memory !== undefined) limits.memory_bytes = unit('memory_bytes', 'limits.memory', l.memory, parseSize);
  if (l.cpu !== undefined) limits.cpu_s = unit('cpu_s', 'limits.cpu', l.cpu, parseDuration);
  if (l.tasks !== undefined) limits.tasks = unit('tasks', 'limits.tasks', l.tasks, Number);

  return {
    resreq: input.resreq === undefined || input.resreq === null || input.resreq.trim() === '' ? null : input.resreq,
    tasks,
    env,
    limits,
    preExec: unset(input.preExec),
    postExec: unset(input.postExec),
    command: [...(input.command ?? [])],
    cwd: input.cwd ?? null,
    stdoutPath: input.stdout ?? null,
    stderrPath: input.stderr ?? null,
    jobName: input.name ?? null,
    script: input.script === undefined || input.script === null || input.script === '' ? null : input.script,
  };
}

const resreqCache = new Map<string, ParsedResReq>();

/** A SubmitFact's JobSpec → the job's own values in the form merge takes. Throws ResReqSyntaxError for a bad `-R`. */
export function ownValues(spec: JobSpec): JobOwnValues {
  let resreq: ParsedResReq | null = null;
  const text = spec.resreq;
  if (text !== null && text.trim() !== '') {
    const cached = resreqCache.get(text);
    if (cached !== undefined) resreq = cached;
    else {
      resreq = parseResReq(text);
      if (resreqCache.size >= RESREQ_CACHE_ENTRIES_MAX) resreqCache.clear();
      resreqCache.set(text, resreq);
    }
  }
  return {
    resreq,
    tasks: spec.tasks,
    env: spec.env,
    limits: spec.limits,
    preExec: spec.preExec,
    postExec: spec.postExec,
  };
}

/** Both steps at once (tests, benchmarks): a client's values → JobOwnValues. Throws JobValueError. */
export function jobOwnValues(input: JobValuesInput): JobOwnValues {
  const spec = jobSpecOf(input);
  try {
    return ownValues(spec);
  } catch (e) {
    if (e instanceof ResReqSyntaxError) throw new JobValueError('resreq', e.message);
    throw e;
  }
}
