// The client API's wire contract (`/api`, JSON text frames over WebSocket), shared by the daemon
// (which validates every frame with these zod schemas) and the client library (which builds them).
//
// A request:  { id, op, token?, session?: { client, seq }, stale?, args }
// A response: { id, ok: true, result } | { id, ok: false, error: { code, message, leader? } }
// (each operation's `result` type: api/responses.ts OpResults)
// An error answer carries the request's id (-1 only when the frame has none that can be read) and a
// code; `internal` carries a generic message with a reference into the controller's log, never the
// failure's own text.
//
// `id` correlates a response with its request on one connection. `session` makes a write exactly
// once across retries and failovers: the state machine remembers the result of (client, seq).

import { DEPENDENCY_CHARS_MAX } from '../model/dependency.js';
import { z } from 'zod';
import { issueText } from '../model/issue-text.js';
import { fastSubmit } from './submit-fast-path.js';
import {
  JOB_LIMIT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MAX,
  SESSION_CLIENT_CHARS_MIN,
  TOKEN_CHARS_MAX,
} from './request-limits.js';
import {
  COMMAND_ARGS_MAX,
  EnvRecordSchema,
  JOB_TASKS_MAX,
  JobScriptSchema,
  JobTextSchema,
  NAME_CHARS_MAX,
} from '../model/job-limits.js';

/**
 * A frame larger than this is refused before it is parsed: room for a job script of the most
 * SCRIPT_BYTES_MAX (1 MiB) bytes with its JSON escapes.
 */
export const API_FRAME_BYTES_MAX = 4 * 1024 * 1024;
/** Characters of one configuration file in a `config.upgrade`. */
export const CONFIG_FILE_CHARS_MAX = 1024 * 1024;
/** Jobs `jobs.list` returns unless the request asks for fewer (`--limit`), and at most. */
export const LIST_LIMIT_DEFAULT = 1000;
export const LIST_LIMIT_MAX = 10_000;
/** The configuration's files in one upgrade: its own files and the site presets (`presets/*.yaml`). */
export const CONFIG_FILES_MAX = 256;
/** Characters of the reason a host is closed for. */
export const HOST_REASON_CHARS_MAX = 512;
/** Bytes of a running job's stdout one `jobs.peek` answers with at most (the worker's bound). */
export const PEEK_BYTES_MAX = 64 * 1024;
/** Most tasks one job may ask for (`-n`). */
export const TASKS_MAX = JOB_TASKS_MAX;

const name = z.string().min(1).max(NAME_CHARS_MAX);
/**
 * A job's text values. Their limits (and the env-name rule) are the ones the worker's start frame
 * enforces (model/job-limits.ts, shared with daemon/worker-protocol.ts): whatever passes
 * here, a worker takes.
 */
const text = JobTextSchema;
const jobId = z.number().int().positive();

export const Session = z.strictObject({
  /** A random id the client picks once per process (or per login). */
  client: z.string().min(SESSION_CLIENT_CHARS_MIN).max(SESSION_CLIENT_CHARS_MAX),
  /** Increases by one per write request; a retry reuses the same number. */
  seq: z.number().int().positive(),
});
export type Session = z.infer<typeof Session>;

/** A job's own limits as typed (`-l runtime=2h`): checked for meaning by model/limit-values.ts. */
const JobLimits = z.strictObject({
  runtime: z.string().max(JOB_LIMIT_CHARS_MAX).optional(),
  memory: z.string().max(JOB_LIMIT_CHARS_MAX).optional(),
  cpu: z.string().max(JOB_LIMIT_CHARS_MAX).optional(),
  tasks: z.number().int().positive().optional(),
});

/** A job's own values, as the user gave them (`xcecli jobs submit` flags). Never merged values. */
export const JobSpec = z.strictObject({
  app: name.optional(),
  queue: name.optional(),
  name: name.optional(),
  tasks: z.number().int().min(1).max(JOB_TASKS_MAX).optional(),
  resreq: text.optional(),
  env: EnvRecordSchema.optional(),
  limits: JobLimits.optional(),
  preExec: text.optional(),
  postExec: text.optional(),
  command: z.array(text).min(1).max(COMMAND_ARGS_MAX),
  cwd: text.optional(),
  stdout: text.optional(),
  stderr: text.optional(),
  /** `-w`: a dependency expression (`done(123) && ended(sweep[*])`); names are resolved when applied. */
  dependency: z.string().min(1).max(DEPENDENCY_CHARS_MAX).optional(),
  /** `--dep-never`: what happens when the dependency can never be met (default `pend`). */
  dependencyNever: z.enum(['pend', 'kill']).optional(),
  /** The job script (`xcecli jobs submit job.sh`): run by the worker as the job layer; `command` is its name and arguments. */
  script: JobScriptSchema.optional(),
});
export type JobSpec = z.infer<typeof JobSpec>;

export const JobState = z.enum(['PEND', 'RUN', 'DONE', 'EXIT', 'SUSP']);

/**
 * What `jobs modify` changes in a pending job (LSF `bmod`): each option given replaces the job's
 * value as a whole, except `env` and `limits`, which replace (or add) the variables and limits they
 * name and keep the others. At least one is given.
 */
export const JobChanges = z
  .strictObject({
    app: name.optional(),
    queue: name.optional(),
    name: name.optional(),
    tasks: z.number().int().positive().max(TASKS_MAX).optional(),
    resreq: text.optional(),
    env: EnvRecordSchema.optional(),
    limits: JobLimits.optional(),
  })
  .refine((c) => Object.values(c).some((v) => v !== undefined), 'nothing to change: give at least one option');
export type JobChanges = z.infer<typeof JobChanges>;

const ops = {
  login: z.strictObject({ user: name, password: z.string().max(1024) }),
  /** A new short-lived access token for the refresh token `login` gave (no access token needed). */
  'auth.refresh': z.strictObject({ refreshToken: z.string().min(1).max(8192) }),
  'jobs.submit': z.strictObject({ job: JobSpec, dryRun: z.boolean().optional() }),
  'jobs.list': z.strictObject({
    state: JobState.optional(),
    user: name.optional(),
    app: name.optional(),
    queue: name.optional(),
    limit: z.number().int().positive().max(LIST_LIMIT_MAX).optional(),
    /** The cursor: only jobs listed after this one (newest first: ids below it), as the last page's `next`. */
    after: jobId.optional(),
    /** Also the jobs that left the state (this controller's accounting store). */
    all: z.boolean().optional(),
    /** Only jobs submitted (active) or ended (history) at or after this time, ms since the epoch; implies `all`. */
    sinceMs: z.number().int().nonnegative().optional(),
    /** Every element of a job array on a row of its own (else an array is one row with counts by state). */
    expand: z.boolean().optional(),
  }),
  /** `script`: also the whole job script (`jobs show --script`); without it, its size and first lines. */
  'jobs.show': z.strictObject({ id: jobId, script: z.boolean().optional() }),
  /** A job's events with their times (like bhist), active or from history. */
  'jobs.history': z.strictObject({ id: jobId }),
  /** Job counts, CPU·hours and wall·hours of the jobs that ended in [sinceMs, untilMs) (like bacct). */
  'accounting.report': z.strictObject({
    sinceMs: z.number().int().nonnegative(),
    untilMs: z.number().int().nonnegative(),
    by: z.enum(['user', 'app', 'queue']).optional(),
  }),
  'jobs.kill': z.strictObject({ id: jobId }),
  'jobs.requeue': z.strictObject({ id: jobId }),
  'jobs.restart': z.strictObject({ id: jobId }),
  /** A pending job is not scheduled until released (bhold / brelease). */
  'jobs.hold': z.strictObject({ id: jobId }),
  'jobs.release': z.strictObject({ id: jobId }),
  /** A running job's processes are stopped (SIGSTOP) / continued (SIGCONT) by its worker (bstop / bresume). */
  'jobs.suspend': z.strictObject({ id: jobId }),
  'jobs.resume': z.strictObject({ id: jobId }),
  /** Changes a pending job's values (bmod), admitted as a submit would be. */
  'jobs.modify': z.strictObject({ id: jobId, changes: JobChanges }),
  'apps.list': z.strictObject({}),
  'apps.show': z.strictObject({ name }),
  /** Site presets (read-only; daemon/api/presets.ts). */
  'presets.list': z.strictObject({}),
  'presets.get': z.strictObject({ name }),
  'config.upgrade': z.strictObject({
    files: z
      .array(z.strictObject({ path: name, text: z.string().max(CONFIG_FILE_CHARS_MAX) }))
      .min(1)
      .max(CONFIG_FILES_MAX),
  }),
  'hosts.list': z.strictObject({}),
  /** `xcecli hosts show NAME` (like `bhosts -l`): one host with its resources and running jobs. */
  'hosts.show': z.strictObject({ name }),
  /** `xceadmin hosts close NAME [--reason TEXT]`: the host gets no new jobs (a replicated fact; cluster:admin). */
  'hosts.close': z.strictObject({ name, reason: z.string().min(1).max(HOST_REASON_CHARS_MAX).optional() }),
  /** `xceadmin hosts open NAME`: a closed host takes jobs again. */
  'hosts.open': z.strictObject({ name }),
  /** Queues (like bqueues): priority, pending and running counts, deprecations. */
  'queues.list': z.strictObject({}),
  'queues.show': z.strictObject({ name }),
  /**
   * A piece of a running job's stdout, read by its head host's worker (`xcecli jobs peek`): from
   * `offset`, or the last `maxBytes` when none is given. Served by the leader.
   */
  'jobs.peek': z.strictObject({
    id: jobId,
    offset: z.number().int().nonnegative().optional(),
    maxBytes: z.number().int().positive().max(PEEK_BYTES_MAX).optional(),
  }),
  'cluster.status': z.strictObject({}),
  'cluster.transferLeader': z.strictObject({ to: z.number().int().positive().optional() }),
  'cluster.addMember': z.strictObject({
    id: z.number().int().positive(),
    address: z.string().min(1).max(256),
    learner: z.boolean().optional(),
  }),
  'cluster.removeMember': z.strictObject({ id: z.number().int().positive() }),
  'token.issue': z.strictObject({ user: name, ttl_s: z.number().int().positive().optional() }),
  /** Revokes a token on every controller until it expires: the token itself, or its jti. */
  'token.revoke': z.strictObject({ token: z.string().min(1).max(8192).optional(), jti: name.optional() }),
  /** Refuses a host's credential on every controller (its worker is disconnected). */
  'hosts.revoke': z.strictObject({ host: name }),
  /** A host's credential (a revoked host moves to its next epoch). */
  'hosts.enroll': z.strictObject({ host: name }),
  'roles.list': z.strictObject({}),
  /** Creates or replaces a role in rbac.yaml (a replicated configuration change). */
  'roles.set': z.strictObject({
    name,
    description: z.string().max(1024).optional(),
    permissions: z
      .array(
        z.strictObject({
          name,
          type: z.enum(['queue', 'app', 'all']).optional(),
          values: z.array(name).max(1024).optional(),
        }),
      )
      .max(256),
  }),
  'roles.delete': z.strictObject({ name }),
} as const;

/** Each operation's argument schema (the REST routes and the OpenAPI document use them too: api/rest-routes.ts). */
export const OP_ARGS: { readonly [O in keyof typeof ops]: (typeof ops)[O] } = ops;

export type Op = keyof typeof ops;
export const OPS = Object.keys(ops) as Op[];
/** Operations served without an access token: `login` (a password) and `auth.refresh` (a refresh token). */
export type TokenlessOp = 'login' | 'auth.refresh';
export const TOKENLESS_OPS: ReadonlySet<Op> = new Set<TokenlessOp>(['login', 'auth.refresh']);
export type OpArgs<O extends Op> = z.infer<(typeof ops)[O]>;

/** Operations that change replicated state: they need a session for exactly-once delivery. */
export const WRITE_OPS: ReadonlySet<Op> = new Set<Op>([
  'jobs.submit',
  'jobs.kill',
  'jobs.requeue',
  'jobs.restart',
  'jobs.hold',
  'jobs.release',
  'jobs.suspend',
  'jobs.resume',
  'jobs.modify',
  'config.upgrade',
  'roles.set',
  'roles.delete',
  'hosts.close',
  'hosts.open',
  'token.revoke',
  'hosts.revoke',
  'hosts.enroll',
]);

const Envelope = z.strictObject({
  id: z.number().int().nonnegative(),
  op: z.string().min(1).max(64),
  token: z.string().max(TOKEN_CHARS_MAX).optional(),
  session: Session.optional(),
  /** Allow a possibly stale read from this node instead of a linearizable one through the leader. */
  stale: z.boolean().optional(),
  args: z.unknown().optional(),
});

export type Request = {
  [O in Op]: { id: number; op: O; token?: string; session?: Session; stale?: boolean; args: OpArgs<O> };
}[Op];

/** The request of operation `O` (or of one of the operations `O` names). */
export type RequestOf<O extends Op> = Extract<Request, { op: O }>;

export type ErrorCode =
  | 'bad-frame'
  | 'bad-request'
  | 'unknown-op'
  | 'unauthenticated'
  | 'forbidden'
  | 'not-leader'
  | 'no-leader'
  | 'rejected'
  | 'not-found'
  | 'unavailable'
  /** Too many requests from this user or client address: send it again after `retryAfter_ms`. */
  | 'rate-limited'
  | 'internal';

export interface ApiErrorBody {
  readonly code: ErrorCode;
  readonly message: string;
  /** With `not-leader`: where to send the request instead. */
  readonly leader?: { readonly id: number; readonly address: string };
  /** With `rate-limited`: how long to wait before sending the request again. */
  readonly retryAfter_ms?: number;
}

export type Response = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: ApiErrorBody };

export class RequestError extends Error {
  override readonly name = 'RequestError';
  constructor(
    readonly id: number,
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Issues carry the value that is wrong, so that the answer names it (model/issue-text.ts). */
const REPORT_INPUT = { reportInput: true } as const;

function describeIssues(issues: readonly z.core.$ZodIssue[], prefix: string): string {
  return issues
    .slice(0, 5)
    .map((i) => `${[prefix, ...i.path.map(String)].filter(Boolean).join('.') || '(frame)'}: ${issueText(i)}`)
    .join('; ');
}

/**
 * The request id of a frame, as far as it can be read (-1 when it cannot): for an error answer to a
 * frame that could not be handled.
 */
export function requestIdOf(frame: string | Uint8Array): number {
  try {
    const raw: unknown = JSON.parse(typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8'));
    const id =
      typeof raw === 'object' && raw !== null && Object.hasOwn(raw, 'id') ? (raw as { id: unknown }).id : undefined;
    return typeof id === 'number' && Number.isSafeInteger(id) && id >= 0 ? id : -1;
  } catch {
    return -1;
  }
}

/**
 * Parses and validates one frame. Throws RequestError naming what is wrong and where
 * (`args.job.tasks: 0 is too small: at least 1`); `id` is -1 when the frame had none.
 */
export function parseRequest(frame: string | Uint8Array): Request {
  const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength;
  if (bytes > API_FRAME_BYTES_MAX)
    throw new RequestError(
      -1,
      'bad-frame',
      `frame of ${bytes} bytes exceeds the limit of ${API_FRAME_BYTES_MAX} bytes`,
    );
  let raw: unknown;
  try {
    raw = JSON.parse(typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8'));
  } catch (err) {
    throw new RequestError(-1, 'bad-frame', `frame is not JSON: ${(err as Error).message}`);
  }
  // The common submit, checked by hand (submit-fast-path.ts: it only accepts what zod accepts, as
  // zod would return it); anything else, and every refusal, is the schemas' (requestOf).
  const fast = fastSubmit(raw);
  return fast !== undefined ? (fast as Request) : requestOf(raw);
}

/** A parsed frame validated by the zod schemas alone. Throws RequestError as parseRequest does. */
export function requestOf(raw: unknown): Request {
  const env = Envelope.safeParse(raw, REPORT_INPUT);
  if (!env.success) {
    const id =
      typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'number'
        ? (raw as { id: number }).id
        : -1;
    throw new RequestError(id, 'bad-request', describeIssues(env.error.issues, ''));
  }
  const { id, op } = env.data;
  // Own properties only: `__proto__`, `constructor` or `toString` are unknown operations like any other.
  if (!Object.hasOwn(ops, op))
    throw new RequestError(id, 'unknown-op', `unknown operation "${op}"; known: ${OPS.join(', ')}`);
  const schema = ops[op as Op];
  const args = schema.safeParse(env.data.args ?? {}, REPORT_INPUT);
  if (!args.success) throw new RequestError(id, 'bad-request', describeIssues(args.error.issues, 'args'));
  if (WRITE_OPS.has(op as Op) && env.data.session === undefined) {
    throw new RequestError(
      id,
      'bad-request',
      `operation "${op}" changes state and needs a session {client, seq} for exactly-once delivery`,
    );
  }
  return { ...env.data, op, args: args.data } as Request;
}
