// The worker's reports on the `/worker` wire (worker-protocol.ts): `ack` (a start, kill or signal
// answered), `status` (a job event) and the controller's `status-ack`, one per frame; and, under
// the `reports-batch` feature (issue 14), the same in batches:
//
//  - the worker names `reports-batch` in `x-xce-worker-features` (with `start-batch`,
//    worker-start-batch.ts); a controller that has the feature answers it with `registered`
//    {features: ['reports-batch']} (a controller sends `features` only to a worker that named the
//    feature: an older worker's `registered` schema has no such field). An older controller sends
//    no `features`, and an older worker names no such feature: then every report and every
//    status-ack goes one per frame, as before.
//  - the worker, on a connection whose `registered` named the feature, sends the acks and statuses
//    it has ready in one turn of its event loop as one `reports` {host, acks, statuses} frame (each
//    item the single frame without `type` and `host`; each list in the order they were made; a
//    status is still sent only once the state-file save that holds it is durable). One report
//    alone goes in its single frame.
//  - the controller answers the statuses one apply committed with one `status-acks` {statusIds}
//    frame per worker that has the feature (one `status-ack` when there is one).
//  The frames take at most REPORTS_PER_FRAME_MAX items (and WORKER_FRAME_BYTES_MAX bytes): more go
//  in further frames. Either side still takes the single frames from the other.

import { z } from 'zod';
import { hostName, jobId, reason, run, time_ms } from './worker-fields.js';

export const StatusKind = z.enum(['started', 'finished', 'launch-error', 'suspended', 'resumed']);
export type StatusKind = z.infer<typeof StatusKind>;

const statusId = z.string().min(1).max(512);

export const StatusFrame = z.strictObject({
  type: z.literal('status'),
  host: hostName,
  jobId,
  run,
  /** Stable for one event (`<host>/<jobId>.<run>/<kind>`, `.../suspended@<time_ms>`): a re-send carries the same id. */
  statusId,
  kind: StatusKind,
  /** With `started`: the job's process (group) id. */
  pid: z.number().int().positive().optional(),
  /** With `finished`: the job's exit code; null when a signal ended it. */
  exitCode: z.number().int().min(0).max(255).nullable().optional(),
  /** With `finished`: the signal that ended the job (`SIGTERM`), null when it exited. */
  signal: z.string().max(16).nullable().optional(),
  /** Why it ended, when not by itself: `runtime limit 1h reached`, `profile pre-exec exited with code 3`, ... */
  reason: reason.optional(),
  /** A failing post-exec: reported, but it does not change the job's exit code. */
  postExecError: reason.optional(),
  /** Worker clock when the event happened. */
  time_ms,
});
export type StatusFrame = z.infer<typeof StatusFrame>;

export const AckFrame = z.strictObject({
  type: z.literal('ack'),
  /** Which request this answers. */
  ref: z.enum(['start', 'kill', 'signal']),
  jobId,
  run,
  /**
   * start: `accepted` (will run), `duplicate` (already running or already ran here: ignored),
   *        `refused` (it will not run here; `reason` says why; a launch-error status follows,
   *        except when the worker's queue of un-acked statuses is full: then the ack is all);
   * kill:  `accepted` (being killed), `unknown` (not running here; nothing to do).
   * signal: `accepted` (stopped or continued; a `suspended` / `resumed` status follows), `unknown`.
   */
  outcome: z.enum(['accepted', 'duplicate', 'refused', 'unknown']),
  reason: reason.optional(),
});
export type AckFrame = z.infer<typeof AckFrame>;

export const StatusAckFrame = z.strictObject({
  type: z.literal('status-ack'),
  statusId,
});
export type StatusAckFrame = z.infer<typeof StatusAckFrame>;

/** The feature (x-xce-worker-features, `registered`.features): `reports` and `status-acks` frames. */
export const FEATURE_REPORTS_BATCH = 'reports-batch';
/** Items (acks and statuses together; status ids) in one `reports` or `status-acks` frame at most. */
export const REPORTS_PER_FRAME_MAX = 512;

/** An ack in a `reports` frame: the `ack` frame without its type. */
export const ReportAck = AckFrame.omit({ type: true });
export type ReportAck = z.infer<typeof ReportAck>;
/** A status in a `reports` frame: the `status` frame without its type and host (the frame names the host). */
export const ReportStatus = StatusFrame.omit({ type: true, host: true });
export type ReportStatus = z.infer<typeof ReportStatus>;

/** Worker → controller: the acks and statuses of one turn (`reports-batch`), each list in order. */
export const ReportsFrame = z
  .strictObject({
    type: z.literal('reports'),
    host: hostName,
    acks: z.array(ReportAck).max(REPORTS_PER_FRAME_MAX),
    statuses: z.array(ReportStatus).max(REPORTS_PER_FRAME_MAX),
  })
  .refine((f) => f.acks.length + f.statuses.length >= 1 && f.acks.length + f.statuses.length <= REPORTS_PER_FRAME_MAX, {
    message: `a reports frame carries 1 to ${REPORTS_PER_FRAME_MAX} acks and statuses in all`,
    path: ['statuses'],
  });
export type ReportsFrame = z.infer<typeof ReportsFrame>;

/** Controller → worker: the statuses of one apply committed (`reports-batch`). */
export const StatusAcksFrame = z.strictObject({
  type: z.literal('status-acks'),
  statusIds: z.array(statusId).min(1).max(REPORTS_PER_FRAME_MAX),
});
export type StatusAcksFrame = z.infer<typeof StatusAcksFrame>;

/** The `features` of `registered`: names, unknown ones ignored. */
export const RegisteredFeatures = z.array(z.string().min(1).max(64)).max(32);

/** Controller side: the single frames a `reports` frame stands for, acks first, each list in order. */
export function unbatchReports(f: ReportsFrame): { acks: AckFrame[]; statuses: StatusFrame[] } {
  return {
    acks: f.acks.map((a) => ({ type: 'ack', ...a })),
    statuses: f.statuses.map((s) => ({ type: 'status', host: f.host, ...s })),
  };
}

/**
 * Worker side: the frames that carry `acks` and `statuses` (of `host`) to a controller with the
 * feature: as few `reports` frames as the count and byte limits allow (acks first, each list in
 * order); a lone report as its single frame.
 */
export function encodeReportFrames(
  host: string,
  acks: readonly AckFrame[],
  statuses: readonly StatusFrame[],
  bytesMax: number,
): string[] {
  if (acks.length + statuses.length === 1) return [JSON.stringify(acks[0] ?? statuses[0])];
  const head = `{"type":"reports","host":${JSON.stringify(host)},"acks":[`;
  const budget = bytesMax - head.length - '],"statuses":[]}'.length;
  const out: string[] = [];
  let a: string[] = [];
  let s: string[] = [];
  let bytes = 0;
  const add = (list: 'a' | 's', one: string): void => {
    const n = Buffer.byteLength(one) + 1;
    if (a.length + s.length > 0 && (a.length + s.length >= REPORTS_PER_FRAME_MAX || bytes + n > budget)) {
      out.push(`${head}${a.join(',')}],"statuses":[${s.join(',')}]}`);
      a = [];
      s = [];
      bytes = 0;
    }
    (list === 'a' ? a : s).push(one);
    bytes += n;
  };
  for (const { type: _type, ...ack } of acks) add('a', JSON.stringify(ack));
  for (const { type: _type, host: _host, ...status } of statuses) add('s', JSON.stringify(status));
  if (a.length + s.length > 0) out.push(`${head}${a.join(',')}],"statuses":[${s.join(',')}]}`);
  return out;
}

/** Controller side: the frames that ack `statusIds` to a worker with the feature (one `status-ack` for one id). */
export function statusAckFrames(statusIds: readonly string[]): Array<StatusAckFrame | StatusAcksFrame> {
  if (statusIds.length === 1) return [{ type: 'status-ack', statusId: statusIds[0]! }];
  const out: StatusAcksFrame[] = [];
  for (let i = 0; i < statusIds.length; i += REPORTS_PER_FRAME_MAX)
    out.push({ type: 'status-acks', statusIds: statusIds.slice(i, i + REPORTS_PER_FRAME_MAX) });
  return out;
}
