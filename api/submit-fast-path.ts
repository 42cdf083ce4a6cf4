// A cheaper check for the one request that comes by the thousand per second: `jobs.submit`.
//
// zod's parse of a submit frame (envelope, session, job) costs the leader about 15 µs, several
// times JSON.parse, on a path that takes some 120 µs of its one thread per submit. This checks
// the common case by hand and builds what zod would return; it only ever ACCEPTS. Whatever it is
// not sure of (another operation, a key it does not know, a value outside a limit, an env name
// zod might take differently) it leaves to zod (returns undefined), so every refusal and its
// wording still come from the schemas in protocol.ts. What it accepts zod accepts, with the same
// result, keys in the same order (submit-fast-path.test.ts compares the two on generated frames).
//
// Every limit below is one the zod schemas of protocol.ts use (model/job-limits.ts, request-limits.ts).

import { DEPENDENCY_CHARS_MAX } from '../model/dependency.js';
import {
  COMMAND_ARGS_MAX,
  ENV_NAME_CHARS_MAX,
  ENV_NAME_PATTERN,
  ENV_VARS_MAX,
  JOB_TASKS_MAX,
  NAME_CHARS_MAX,
  TEXT_CHARS_MAX,
  scriptProblem,
} from '../model/job-limits.js';
import {
  JOB_LIMIT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MIN,
  TOKEN_CHARS_MAX,
} from './request-limits.js';

type Json = Record<string, unknown>;

const ENVELOPE_KEYS = new Set(['id', 'op', 'token', 'session', 'stale', 'args']);
const SESSION_KEYS = new Set(['client', 'seq']);
const ARGS_KEYS = new Set(['job', 'dryRun']);
const LIMIT_KEYS = new Set(['runtime', 'memory', 'cpu', 'tasks']);
/** A JobSpec's keys in the schema's order (zod's result has them so). */
const JOB_KEYS = [
  'app',
  'queue',
  'name',
  'tasks',
  'resreq',
  'env',
  'limits',
  'preExec',
  'postExec',
  'command',
  'cwd',
  'stdout',
  'stderr',
  'dependency',
  'dependencyNever',
  'script',
] as const;
const JOB_KEY_SET: ReadonlySet<string> = new Set(JOB_KEYS);

/** A plain object as zod's object check sees one (not null, not an array). */
function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every own key of `o` is one of `keys` (a strict object's rule). */
function onlyKeys(o: Json, keys: ReadonlySet<string>): boolean {
  for (const k of Object.keys(o)) if (!keys.has(k)) return false;
  return true;
}

const isName = (v: unknown): boolean => typeof v === 'string' && v.length >= 1 && v.length <= NAME_CHARS_MAX;
const isText = (v: unknown): boolean => typeof v === 'string' && v.length <= TEXT_CHARS_MAX && !v.includes('\0');
const isWhole = (v: unknown, min: number, max: number): boolean =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;

/** A job's env, `{ NAME: value }`, rebuilt in its own order; undefined: leave it to zod. */
function env(v: unknown): Json | undefined {
  if (!isObject(v)) return undefined;
  const names = Object.keys(v);
  if (names.length > ENV_VARS_MAX) return undefined;
  const out: Json = {};
  for (const name of names) {
    // `__proto__` would set the result's prototype if assigned: zod's own way with it decides.
    if (name === '__proto__' || name.length > ENV_NAME_CHARS_MAX || !ENV_NAME_PATTERN.test(name)) return undefined;
    const value = v[name];
    if (!isText(value)) return undefined;
    out[name] = value;
  }
  return out;
}

/** A job's own limits, rebuilt in the schema's order; undefined: leave it to zod. */
function limits(v: unknown): Json | undefined {
  if (!isObject(v) || !onlyKeys(v, LIMIT_KEYS)) return undefined;
  const out: Json = {};
  for (const k of ['runtime', 'memory', 'cpu'] as const) {
    if (!(k in v)) continue;
    const s = v[k];
    if (typeof s !== 'string' || s.length > JOB_LIMIT_CHARS_MAX) return undefined;
    out[k] = s;
  }
  if ('tasks' in v) {
    if (!isWhole(v['tasks'], 1, Number.MAX_SAFE_INTEGER)) return undefined;
    out['tasks'] = v['tasks'];
  }
  return out;
}

/** The value of one JobSpec key as zod returns it; undefined: leave the frame to zod. */
function jobValue(key: (typeof JOB_KEYS)[number], v: unknown): unknown {
  switch (key) {
    case 'app':
    case 'queue':
    case 'name':
      return isName(v) ? v : undefined;
    case 'tasks':
      return isWhole(v, 1, JOB_TASKS_MAX) ? v : undefined;
    case 'resreq':
    case 'preExec':
    case 'postExec':
    case 'cwd':
    case 'stdout':
    case 'stderr':
      return isText(v) ? v : undefined;
    case 'env':
      return env(v);
    case 'limits':
      return limits(v);
    case 'command': {
      if (!Array.isArray(v) || v.length < 1 || v.length > COMMAND_ARGS_MAX) return undefined;
      for (const word of v) if (!isText(word)) return undefined;
      return v.slice();
    }
    case 'dependency':
      return typeof v === 'string' && v.length >= 1 && v.length <= DEPENDENCY_CHARS_MAX ? v : undefined;
    case 'dependencyNever':
      return v === 'pend' || v === 'kill' ? v : undefined;
    case 'script':
      return typeof v === 'string' && scriptProblem(v) === null ? v : undefined;
  }
}

/** A JobSpec rebuilt in the schema's order; undefined: leave it to zod. */
function job(v: unknown): Json | undefined {
  if (!isObject(v) || !onlyKeys(v, JOB_KEY_SET) || !('command' in v)) return undefined;
  const out: Json = {};
  for (const key of JOB_KEYS) {
    if (!(key in v)) continue;
    const value = jobValue(key, v[key]);
    if (value === undefined) return undefined;
    out[key] = value;
  }
  return out;
}

/**
 * The `jobs.submit` request that zod would make of `raw` (a parsed frame), or undefined when `raw`
 * is anything else or anything the hand check is not sure of: then protocol.ts's schemas decide,
 * and word the refusal. The result is what parseRequest returns: the envelope, its `args` parsed.
 */
export function fastSubmit(raw: unknown): Json | undefined {
  if (!isObject(raw) || raw['op'] !== 'jobs.submit' || !onlyKeys(raw, ENVELOPE_KEYS)) return undefined;
  const id = raw['id'];
  if (!isWhole(id, 0, Number.MAX_SAFE_INTEGER)) return undefined;
  const envelope: Json = { id, op: 'jobs.submit' };
  if ('token' in raw) {
    const token = raw['token'];
    if (typeof token !== 'string' || token.length > TOKEN_CHARS_MAX) return undefined;
    envelope['token'] = token;
  }
  // A write without a session is refused (parseRequest says so): zod's path words it.
  const session = raw['session'];
  if (!isObject(session) || !onlyKeys(session, SESSION_KEYS)) return undefined;
  const client = session['client'];
  const seq = session['seq'];
  if (
    typeof client !== 'string' ||
    client.length < SESSION_CLIENT_CHARS_MIN ||
    client.length > SESSION_CLIENT_CHARS_MAX
  )
    return undefined;
  if (!isWhole(seq, 1, Number.MAX_SAFE_INTEGER)) return undefined;
  envelope['session'] = { client, seq };
  if ('stale' in raw) {
    if (typeof raw['stale'] !== 'boolean') return undefined;
    envelope['stale'] = raw['stale'];
  }
  const args = raw['args'];
  if (!isObject(args) || !onlyKeys(args, ARGS_KEYS)) return undefined;
  const spec = job(args['job']);
  if (spec === undefined) return undefined;
  const parsedArgs: Json = { job: spec };
  if ('dryRun' in args) {
    if (typeof args['dryRun'] !== 'boolean') return undefined;
    parsedArgs['dryRun'] = args['dryRun'];
  }
  envelope['args'] = parsedArgs;
  return envelope;
}
