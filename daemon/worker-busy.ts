// `busy` on the worker wire (`/worker`, worker-protocol.ts): a leader with more worker handshakes
// and registrations waiting than its bound (xce.yaml `worker_registrations`,
// registration-gate.ts) answers a worker's upgrade `503 Service Unavailable` with a `busy`
// {retry_ms} frame as its body (JSON) and a Retry-After header (seconds, rounded up). The worker
// (daemon/worker/leader-link.ts) waits retry_ms, jittered up to half as long again, and dials the
// same controller: not a leader loss, not a refusal, its back-off does not grow. The worker also
// takes `busy` as a frame on an open connection (the controller then closes it, 1013).

import type { Duplex } from 'node:stream';
import { z } from 'zod';
import { answerUpgrade } from './http-server.js';

/** The longest wait a `busy` may ask for. */
export const BUSY_RETRY_MS_LIMIT = 60_000;

/** The leader is busy with registrations: dial it again after retry_ms. */
export const BusyFrame = z.strictObject({
  type: z.literal('busy'),
  retry_ms: z.number().int().min(1).max(BUSY_RETRY_MS_LIMIT),
});
export type BusyFrame = z.infer<typeof BusyFrame>;

/** Controller side: answers a `/worker` upgrade 503 with a `busy` frame, and closes the socket. */
export function answerBusy(socket: Duplex, retry_ms: number): void {
  const body = JSON.stringify({ type: 'busy', retry_ms } satisfies BusyFrame);
  answerUpgrade(socket, 503, body, 'application/json', [`retry-after: ${Math.ceil(retry_ms / 1000)}`]);
}

/** Worker side: the wait a 503 answer's body asks for; null when it is not a `busy` frame. */
export function busyRetryOf(body: string): number | null {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    return null;
  }
  const r = BusyFrame.safeParse(raw);
  return r.success ? r.data.retry_ms : null;
}
