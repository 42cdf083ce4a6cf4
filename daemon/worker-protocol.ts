// The worker wire contract (`/worker`, JSON text frames over WebSocket), shared by the worker
// daemon `xcecd` and the controller's worker endpoint. Both sides validate every frame they
// receive with these zod schemas; a frame larger than WORKER_FRAME_BYTES_MAX is refused unparsed.
//
// Connection:  the worker asks GET /challenge for a nonce, then dials wss://<controller>/worker
//              (ws:// with insecure_dev) with the header x-xce-worker-host: <host> and the
//              handshake's headers (daemon/handshake.ts), proved with its host credential
//              (daemon/keys.ts: derived from the controllers' root secret, the host name and the
//              host's enrolment epoch). A credential speaks for its own host only; a revoked host is
//              refused (401 with the reason).
// Handshake:   worker → `register`; controller → `registered` (it is the leader) or
//              `not-leader` {leader?} and closes (the worker then dials the leader, or the next
//              controller after a back-off when no leader is known), or `refused` {reason} and
//              closes (1008): the leader will not take this host, e.g. hosts.yaml does not list it
//              (the worker logs the reason and retries after its longest back-off: an
//              administrator may add the host by a configuration upgrade).
// Busy:        controller → `busy` {retry_ms}: dial again after that long (worker-busy.ts).
// Redirect:    a controller that is not the leader answers an authenticated upgrade 421 with a
//              `not-leader` frame as its body, not upgrading it (worker-redirect.ts).
// Peek:        controller → `peek` {requestId, jobId, run, offset?, maxBytes}; worker → `peek-data`
//              with that requestId: a piece of the run's stdout file (`xcecli jobs peek`).
// Running:     worker → `heartbeat` and a ping every `heartbeat_ms` (the ping alone once `registered`
//              names `ping-heartbeat`: worker-start-batch.ts); controller → `start` / `kill` / `signal`
//              (suspend: SIGSTOP, resume: SIGCONT to the job's process group); worker →
//              `ack` for each start/kill/signal, and `status` for each job event; controller →
//              `status-ack` {statusId} once the status is committed (a JobStatusFact applied).
//              The worker re-sends every un-acked status on each (re)connect and periodically, so a
//              controller failover loses none; `statusId` is stable for one event, so the controller
//              treats a repeated id as already done (and acks it again). Under `reports-batch` the
//              acks and statuses of one worker turn go as one `reports` frame and the statuses of
//              one apply are acked with one `status-acks` frame (worker-report-frames.ts).
//
// One `start` goes to the FIRST host of the placement (the head host); for MPI launch types the
// launcher reaches the other hosts itself (`--host` / `-hosts`), as under LSF.
//
// Several starts in one frame (issue 14): see worker-start-batch.ts. Several acks and statuses in
// one frame, several status-acks in one frame (issue 14, the `reports-batch` feature, announced in
// `registered` {features}): see worker-report-frames.ts.

import { z } from 'zod';
import type { ChallengeBook } from './handshake.js';
import { hostCredentialKeyCached } from './keys.js';
import { PEEK_BYTES_MAX } from '../api/protocol.js';
import { count, hostName, jobId, name, reason, REASON_BYTES_MAX, run, text, time_ms } from './worker-fields.js';
import { PeekDataFrame, PeekFrame } from './worker-peek-frames.js';
import { BusyFrame } from './worker-busy.js';
import {
  AckFrame,
  RegisteredFeatures,
  ReportsFrame,
  StatusAckFrame,
  StatusAcksFrame,
  StatusFrame,
  StatusKind,
} from './worker-report-frames.js';
import { COMMAND_ARGS_MAX, ENV_VARS_MAX, EnvNameSchema, JobScriptSchema } from '../model/job-limits.js';

/** A frame larger than this is refused before it is parsed (both directions): room for a start with a 1 MiB job script. */
export const WORKER_FRAME_BYTES_MAX = 4 * 1024 * 1024;
export const WORKER_PATH = '/worker';
export const WORKER_HEADER_HOST = 'x-xce-worker-host';
export const HOSTS_MAX = 65_536;
export const RUNNING_REPORT_MAX = 65_536;
export const RESOURCE_NAMES_MAX = 1024;
export { REASON_BYTES_MAX, PEEK_BYTES_MAX };
export { PeekDataFrame, PeekFrame };
export { AckFrame, ReportsFrame, StatusAckFrame, StatusAcksFrame, StatusFrame, StatusKind };
export const HEARTBEAT_MS_MIN = 50;
export const HEARTBEAT_MS_MAX = 60_000;

export const EnvVarSchema = z.strictObject({
  name: EnvNameSchema,
  value: text,
});

export const LimitsSchema = z.strictObject({
  runtime_s: z.number().int().positive().optional(),
  memory_bytes: z.number().int().positive().optional(),
  cpu_s: z.number().int().positive().optional(),
  tasks: z.number().int().positive().optional(),
});

/**
 * What the controller sends to run one job: the execution side of the frozen dispatch record
 * plus the job's own facts. Built by the controller, never merged again by the worker.
 */
export const StartInfoSchema = z.strictObject({
  jobId,
  run,
  /** The submitter; in `direct` mode also the execution user. */
  user: name,
  queue: name,
  /** Resolved profile name (an alias's target); null for a job without a profile. */
  profile: name.nullable(),
  /** Name and short content hash, e.g. `openfoam@3f2a9c`; null without a profile. */
  profileLabel: name.nullable(),
  mode: z.literal('direct'),
  launchType: z.enum(['serial', 'openmpi', 'mpich']),
  command: z.array(text).min(1).max(COMMAND_ARGS_MAX),
  /** Absolute working directory; empty means the execution user's HOME. */
  cwd: text,
  /** Paths of the job's stdout/stderr (relative ones are relative to cwd; `%J` is the job id, `%I` the array index); null: `xce-<jobid>.out` / `.err` in cwd. */
  stdout: text.nullable(),
  stderr: text.nullable(),
  /** The job script: written to a private file and run as the job layer (`command[0]` is its name, the rest its arguments); null: run `command`. */
  script: JobScriptSchema.nullable().optional(),
  tasks: z.number().int().positive(),
  hosts: z
    .array(z.strictObject({ host: hostName, tasks: z.number().int().positive() }))
    .min(1)
    .max(HOSTS_MAX),
  profileEnv: z.array(EnvVarSchema).max(ENV_VARS_MAX),
  jobEnv: z.array(EnvVarSchema).max(ENV_VARS_MAX),
  /** Shell text run by `/bin/sh -c`; null: none. */
  profilePreExec: text.nullable(),
  profilePostExec: text.nullable(),
  jobPreExec: text.nullable(),
  jobPostExec: text.nullable(),
  limits: LimitsSchema,
});
export type StartInfo = z.infer<typeof StartInfoSchema>;

export const ResourcesSchema = z.strictObject({
  slots: z.number().int().positive(),
  mem_bytes: z.number().int().nonnegative(),
  /** Boolean attributes this host has (`ib`, `x86_64`); absent: the worker states none (hosts.yaml's stand). */
  booleans: z.array(name).max(RESOURCE_NAMES_MAX).optional(),
  numerics: z.record(name, z.number().finite()),
  strings: z.record(name, name).optional(),
});
export type Resources = z.infer<typeof ResourcesSchema>;

export const RunningJobSchema = z.strictObject({
  jobId,
  run,
  pid: z.number().int().positive().optional(),
  startedAt: time_ms.optional(),
  /** The run is suspended here (SIGSTOP): the leader reconciles it with the job's state (SUSP or RUN). */
  suspended: z.boolean().optional(),
});
export type RunningJob = z.infer<typeof RunningJobSchema>;

// ---- worker → controller ----

export const RegisterFrame = z.strictObject({
  type: z.literal('register'),
  host: hostName,
  resources: ResourcesSchema,
  /** xcecd's version (package version). */
  version: z.string().min(1).max(64),
  /** Every (jobId, run) this worker is running now: the leader reconciles them with the dispatch records. */
  running: z.array(RunningJobSchema).max(RUNNING_REPORT_MAX),
});

export const HeartbeatFrame = z.strictObject({
  type: z.literal('heartbeat'),
  host: hostName,
  /** Increases by one per heartbeat on one connection. */
  seq: count,
});

export const WorkerToControllerFrame = z.discriminatedUnion('type', [
  RegisterFrame,
  HeartbeatFrame,
  StatusFrame,
  AckFrame,
  ReportsFrame,
  PeekDataFrame,
]);
export type WorkerToControllerFrame = z.infer<typeof WorkerToControllerFrame>;
export type RegisterFrame = z.infer<typeof RegisterFrame>;
export type HeartbeatFrame = z.infer<typeof HeartbeatFrame>;
export type PeekDataFrame = z.infer<typeof PeekDataFrame>;

// ---- controller → worker ----

export const RegisteredFrame = z.strictObject({
  type: z.literal('registered'),
  leaderId: z.number().int().positive(),
  heartbeat_ms: z.number().int().min(HEARTBEAT_MS_MIN).max(HEARTBEAT_MS_MAX),
  /** What this controller takes beyond the base protocol; sent only to a worker that named them (worker-report-frames.ts). */
  features: RegisteredFeatures.optional(),
  /** The hosts the cluster lists (hosts.yaml), to a worker with the `failover-spread` feature (worker-start-batch.ts). */
  hosts: z.number().int().min(0).max(1_000_000).optional(),
});

export const NotLeaderFrame = z.strictObject({
  type: z.literal('not-leader'),
  /** Where the leader is, when this controller knows; absent during an election. */
  leader: z.strictObject({ id: z.number().int().positive(), address: z.string().min(1).max(256) }).optional(),
});

/** The leader refuses this worker's registration, saying why; the connection is closed after it. */
export const RefusedFrame = z.strictObject({
  type: z.literal('refused'),
  reason,
});

export const StartFrame = z.strictObject({
  type: z.literal('start'),
  startInfo: StartInfoSchema,
});

export const KillFrame = z.strictObject({
  type: z.literal('kill'),
  jobId,
  run,
  reason: reason,
});

/** Suspend (SIGSTOP) or resume (SIGCONT) a run's process group: `jobs suspend` / `jobs resume`. */
export const SignalFrame = z.strictObject({
  type: z.literal('signal'),
  jobId,
  run,
  action: z.enum(['suspend', 'resume']),
});

export const ControllerToWorkerFrame = z.discriminatedUnion('type', [
  RegisteredFrame,
  NotLeaderFrame,
  RefusedFrame,
  BusyFrame,
  StartFrame,
  KillFrame,
  SignalFrame,
  StatusAckFrame,
  StatusAcksFrame,
  PeekFrame,
]);
export type ControllerToWorkerFrame = z.infer<typeof ControllerToWorkerFrame>;
export type RegisteredFrame = z.infer<typeof RegisteredFrame>;
export type NotLeaderFrame = z.infer<typeof NotLeaderFrame>;
export type RefusedFrame = z.infer<typeof RefusedFrame>;
export type StartFrame = z.infer<typeof StartFrame>;
export type KillFrame = z.infer<typeof KillFrame>;
export type SignalFrame = z.infer<typeof SignalFrame>;
export type PeekFrame = z.infer<typeof PeekFrame>;

// ---- parsing ----

export class WorkerFrameError extends Error {
  override readonly name = 'WorkerFrameError';
  constructor(message: string) {
    super(message);
  }
}

export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.map(String).join('.') || '(frame)'}: ${i.message}`)
    .join('; ');
}

function parseFrame<T>(schema: z.ZodType<T>, frame: string | Uint8Array, direction: string): T {
  const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength;
  if (bytes > WORKER_FRAME_BYTES_MAX) {
    throw new WorkerFrameError(
      `${direction} frame of ${bytes} bytes exceeds the limit of ${WORKER_FRAME_BYTES_MAX} bytes`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8'));
  } catch (err) {
    throw new WorkerFrameError(`${direction} frame is not JSON: ${(err as Error).message}`);
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw new WorkerFrameError(`bad ${direction} frame: ${describeIssues(r.error.issues)}`);
  return r.data;
}

/** Controller side: parses what a worker sent. Throws WorkerFrameError naming the field (`resources.slots: ...`). */
export function parseWorkerFrame(frame: string | Uint8Array): WorkerToControllerFrame {
  return parseFrame(WorkerToControllerFrame, frame, 'worker');
}

/** Worker side: parses what a controller sent. Throws WorkerFrameError naming the field (`startInfo.command: ...`). */
export function parseControllerFrame(frame: string | Uint8Array): ControllerToWorkerFrame {
  return parseFrame(ControllerToWorkerFrame, frame, 'controller');
}

/**
 * Worker side, for a controller frame parseControllerFrame refused: when it is a `start` whose job
 * id and run can still be read, the job it is for and what is wrong with it (fields named from
 * `startInfo`), so that the worker answers with a launch error instead of dropping it (a start
 * never answered leaves the job running, holding its slots, for ever). null otherwise.
 */
export function unreadableStart(frame: string | Uint8Array): { jobId: number; run: number; problem: string } | null {
  const bytes = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength;
  if (bytes > WORKER_FRAME_BYTES_MAX) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(typeof frame === 'string' ? frame : Buffer.from(frame).toString('utf8'));
  } catch {
    return null;
  }
  return unreadableStartValue(raw);
}

/** unreadableStart of a frame's parsed JSON value. */
export function unreadableStartValue(raw: unknown): { jobId: number; run: number; problem: string } | null {
  if (typeof raw !== 'object' || raw === null || (raw as { type?: unknown }).type !== 'start') return null;
  const ids = z.object({ jobId, run }).safeParse((raw as { startInfo?: unknown }).startInfo);
  if (!ids.success) return null;
  const r = StartFrame.safeParse(raw);
  if (r.success) return null;
  const issues = r.error.issues.map((i) => (i.path[0] === 'startInfo' ? { ...i, path: i.path.slice(1) } : i));
  return { jobId: ids.data.jobId, run: ids.data.run, problem: describeIssues(issues) };
}

/** Validates a StartInfo on its own (the controller checks what it built before sending it). */
export function parseStartInfo(value: unknown): StartInfo {
  const r = StartInfoSchema.safeParse(value);
  if (!r.success) throw new WorkerFrameError(`bad start info: ${describeIssues(r.error.issues)}`);
  return r.data;
}

/** Serialises a frame, refusing one above the size limit (a bug on the sending side). */
export function encodeFrame(frame: WorkerToControllerFrame | ControllerToWorkerFrame): string {
  const text = JSON.stringify(frame);
  const bytes = Buffer.byteLength(text);
  if (bytes > WORKER_FRAME_BYTES_MAX)
    throw new WorkerFrameError(
      `${frame.type} frame of ${bytes} bytes exceeds the limit of ${WORKER_FRAME_BYTES_MAX} bytes`,
    );
  return text;
}

/** The stable id of one status event of one run on one host. */
export function statusIdOf(host: string, jobId: number, run: number, kind: StatusKind): string {
  return `${host}/${jobId}.${run}/${kind}`;
}

/** `ws://h:p/worker` from `h:p`, `ws://h:p` or `ws://h:p/worker` (mirrors the client's toWsUrl). */
export function toWorkerUrl(address: string): string {
  const base = /^wss?:\/\//.test(address) ? address : `ws://${address}`;
  return base.replace(/\/+$/, '').replace(/\/(worker|api)$/, '') + WORKER_PATH;
}

// ---- authentication ----

/** Controller side: the host a `/worker` upgrade names, or WorkerFrameError saying what is wrong. */
export function workerHostOf(headers: Record<string, string | string[] | undefined>): string {
  const host = headers[WORKER_HEADER_HOST];
  if (typeof host !== 'string' || !hostName.safeParse(host).success) {
    throw new WorkerFrameError(`missing or bad ${WORKER_HEADER_HOST} header: a worker must name its host`);
  }
  return host;
}

/**
 * Controller side: authenticates a `/worker` upgrade (its handshake's nonce is spent). The host
 * proves it holds the credential of the host it names, at that host's current enrolment epoch.
 * Throws WorkerFrameError (no host) or HandshakeError (replayed, stale, wrong credential).
 */
export function authenticateWorker(
  headers: Record<string, string | string[] | undefined>,
  challenges: ChallengeBook,
  workerRoot: Uint8Array,
  epochOf: (host: string) => number,
): string {
  const host = workerHostOf(headers);
  challenges.verify(headers, hostCredentialKeyCached(workerRoot, host, epochOf(host)), 'worker', host);
  return host;
}
