// The shape every job value keeps wherever it travels: in a client's request (`/api`, api/protocol.ts),
// in the log (apply, admission.ts) and in the start frame a worker takes (`/worker`,
// daemon/worker-protocol.ts). Each limit and the environment-name rule are defined here once, so
// that nothing admitted at submit can be refused by a worker for its shape (a start a worker
// refuses would leave the job holding its slots).
//
// Lengths count UTF-16 code units (JavaScript string length), as zod's `max` does.

import { z } from 'zod';
import type { JobSpec } from './job-spec.js';
import { LIMIT_NAMES, limitValueProblem } from './limit-values.js';
import type { EnvVar, Limits } from './profile-types.js';

/** Arguments of a job's command line. */
export const COMMAND_ARGS_MAX = 4096;
/** Environment variables a job sets, and a profile sets (each list on its own). */
export const ENV_VARS_MAX = 1024;
/** Characters of an environment variable's name. */
export const ENV_NAME_CHARS_MAX = 256;
/** Characters of one text value: a command argument, an env value, a path, a pre/post-exec, `-R`. */
export const TEXT_CHARS_MAX = 64 * 1024;
/** Bytes (UTF-8) of a job script (`xcecli jobs submit job.sh`), stored with the job and sent to its worker. */
export const SCRIPT_BYTES_MAX = 1024 * 1024;
/** Characters of a name: user, queue, profile, job name. */
export const NAME_CHARS_MAX = 256;
/** Tasks one job may ask for (`-n`); well inside JobSpec.tasks, a UInt32 of schema/facts.capnp. */
export const JOB_TASKS_MAX = 1_000_000;

/** Why `tasks` is not a task count a job may ask for, naming the value and what is allowed; or null. */
export function taskCountProblem(tasks: number): string | null {
  return Number.isSafeInteger(tasks) && tasks >= 1 && tasks <= JOB_TASKS_MAX
    ? null
    : `a task count is a whole number from 1 to ${JOB_TASKS_MAX}, not ${tasks}`;
}

/** An environment variable's name: a letter or `_`, then letters, digits and `_` (POSIX shells). */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why `name` cannot be an environment variable's name, or null when it can. */
export function envNameProblem(name: string): string | null {
  if (name.length > ENV_NAME_CHARS_MAX)
    return `environment variable name "${name.slice(0, 32)}…" is longer than ${ENV_NAME_CHARS_MAX} characters`;
  if (!ENV_NAME_PATTERN.test(name))
    return `environment variable name "${name}" is not valid: use letters, digits and "_", not starting with a digit`;
  return null;
}

/** The zod form of envNameProblem: the one env-name schema of `/api` and `/worker`. */
export const EnvNameSchema = z.string().superRefine((name, ctx) => {
  const problem = envNameProblem(name);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, input: name });
});

/**
 * What a NUL byte in a job's text is refused with. No NUL can reach exec (C strings end at it:
 * Node's spawn throws on one), so a command word, cwd, env value, pre/post-exec or path holding
 * one is refused at submit, naming the field, instead of being accepted and failing at launch.
 */
export const NUL_BYTE_MESSAGE = 'contains a NUL byte';

const hasNul = (s: string): boolean => s.includes('\0');

/** The UTF-8 length of `s` (a lone surrogate counts as the 3 bytes of U+FFFD, as the encoders write it). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Why a job script cannot be stored, or null: its size (UTF-8 bytes) above SCRIPT_BYTES_MAX, or a NUL byte. */
export function scriptProblem(script: string): string | null {
  // A string of more UTF-16 units than the limit has at least as many bytes: no need to encode it.
  const bytes = script.length > SCRIPT_BYTES_MAX ? script.length : utf8Bytes(script);
  if (bytes > SCRIPT_BYTES_MAX)
    return `the job script is ${bytes} bytes, larger than the limit of ${SCRIPT_BYTES_MAX} bytes (1 MiB)`;
  if (hasNul(script)) return `the job script ${NUL_BYTE_MESSAGE}`;
  return null;
}

/** A job script: at most SCRIPT_BYTES_MAX bytes, never a NUL byte. */
export const JobScriptSchema = z.string().superRefine((s, ctx) => {
  const problem = scriptProblem(s);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem, input: s });
});

/** One text value (see TEXT_CHARS_MAX); never a NUL byte. */
export const JobTextSchema = z
  .string()
  .max(TEXT_CHARS_MAX)
  .refine((s) => !hasNul(s), NUL_BYTE_MESSAGE);

export const envCountMessage = (n: number): string =>
  `a job may set at most ${ENV_VARS_MAX} environment variables, not ${n}`;

/** A job's env as a client sends it, `{ NAME: value }`, with the count limit. */
export const EnvRecordSchema = z
  .record(EnvNameSchema, JobTextSchema, {
    // A bad key is reported by zod as "Invalid key in record"; say what is wrong with it instead.
    error: (issue) => (issue.code === 'invalid_key' ? issue.issues?.[0]?.message : undefined),
  })
  .superRefine((env, ctx) => {
    const n = Object.keys(env).length;
    if (n > ENV_VARS_MAX) ctx.addIssue({ code: 'custom', message: envCountMessage(n), input: env });
  });

/** A problem with a job's own values, naming the field. */
export interface JobShapeProblem {
  readonly field: string;
  readonly message: string;
}

/** The first problem with a job's env list (sorted, as a JobSpec holds it), or null. */
export function envProblem(env: readonly EnvVar[]): JobShapeProblem | null {
  if (env.length > ENV_VARS_MAX) return { field: 'env', message: envCountMessage(env.length) };
  let previous: string | null = null;
  for (const e of env) {
    const name = envNameProblem(e.name);
    if (name !== null) return { field: 'env', message: name };
    if (e.value.length > TEXT_CHARS_MAX)
      return { field: 'env', message: `environment variable ${e.name} is longer than ${TEXT_CHARS_MAX} characters` };
    // merge walks the job's env and the profile's side by side: both sorted, no name twice.
    if (previous !== null && !(previous < e.name))
      return {
        field: 'env',
        message: `environment variables must be sorted by name, each once (${previous} before ${e.name})`,
      };
    previous = e.name;
  }
  return null;
}

function textProblem(field: string, what: string, text: string | null): JobShapeProblem | null {
  return text !== null && text.length > TEXT_CHARS_MAX
    ? { field, message: `${what} is longer than ${TEXT_CHARS_MAX} characters` }
    : null;
}

/**
 * The first of a job's text values holding a NUL byte, as its field in the client's terms
 * (`command.0`, `env.NAME`, `cwd`, `preExec`, `stdout`, ...: the API's JobSpec), or null.
 */
export function nulField(spec: JobSpec): string | null {
  for (let i = 0; i < spec.command.length; i++) if (hasNul(spec.command[i]!)) return `command.${i}`;
  for (const e of spec.env) if (hasNul(e.value)) return `env.${e.name}`; // a name with one fails envProblem first
  const texts: ReadonlyArray<readonly [string, string | null]> = [
    ['cwd', spec.cwd],
    ['preExec', spec.preExec],
    ['postExec', spec.postExec],
    ['stdout', spec.stdoutPath],
    ['stderr', spec.stderrPath],
    ['resreq', spec.resreq],
  ];
  for (const [field, text] of texts) if (text !== null && hasNul(text)) return field;
  return null;
}

/**
 * The first problem with the shape of a job's own values, or null: what a worker's start frame
 * (and the API's schema) would refuse. The additive rule and RBAC are admission's.
 */
export function jobShapeProblem(spec: JobSpec): JobShapeProblem | null {
  const c = spec.command;
  if (c.length === 0) return { field: 'command', message: 'the job has no command' };
  if (c.length > COMMAND_ARGS_MAX)
    return { field: 'command', message: `a command has at most ${COMMAND_ARGS_MAX} arguments, not ${c.length}` };
  for (let i = 0; i < c.length; i++) {
    const p = textProblem('command', `command argument ${i}`, c[i]!);
    if (p !== null) return p;
  }
  const tasks = spec.tasks === null ? null : taskCountProblem(spec.tasks);
  if (tasks !== null) return { field: 'tasks', message: tasks };
  const env = envProblem(spec.env);
  if (env !== null) return env;
  // Admission answers with the message alone: it names the field itself (`job.command.0: ...`).
  const nul = nulField(spec);
  if (nul !== null) return { field: nul, message: `job.${nul}: ${NUL_BYTE_MESSAGE}` };
  for (const [key, value] of Object.entries(spec.limits) as Array<[keyof Limits, number | undefined]>) {
    const problem = value === undefined ? null : limitValueProblem(key, value);
    if (problem !== null) return { field: `limits.${LIMIT_NAMES[key] ?? key}`, message: problem };
  }
  if (spec.script !== null) {
    const problem = scriptProblem(spec.script);
    if (problem !== null) return { field: 'script', message: problem };
  }
  return (
    textProblem('resreq', 'the resource requirement', spec.resreq) ??
    textProblem('preExec', 'the pre-exec', spec.preExec) ??
    textProblem('postExec', 'the post-exec', spec.postExec) ??
    textProblem('cwd', 'the working directory', spec.cwd) ??
    textProblem('stdout', 'the stdout path', spec.stdoutPath) ??
    textProblem('stderr', 'the stderr path', spec.stderrPath) ??
    (spec.jobName !== null && spec.jobName.length > NAME_CHARS_MAX
      ? { field: 'name', message: `the job name is longer than ${NAME_CHARS_MAX} characters` }
      : null)
  );
}
