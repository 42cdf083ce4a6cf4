// Who may open `/worker` (issue 19): a fresh handshake proving the credential of the host the
// worker names, at that host's enrolment epoch in the replicated state, and a host not revoked.
// Refusals are logged (a replay as such) and answered 401 with the reason. A connection whose host
// is revoked or enrolled again after it was admitted is closed (dropRevoked).

import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import type { ChallengeBook } from './handshake.js';
import { HandshakeError } from './handshake.js';
import type { Logger } from './log.js';
import type { HostCredentialState } from '../statemachine/state.js';
import { authenticateWorker, WORKER_HEADER_HOST, WorkerFrameError } from './worker-protocol.js';

/** Why a revoked host is refused. */
export function hostRevokedReason(host: string): string {
  return `host ${host} is revoked (xceadmin host revoke): enroll it again with xceadmin host enroll ${host}`;
}

/** The host and epoch a `/worker` upgrade authenticated as, or why it is refused (already logged). */
export function admitWorker(
  req: IncomingMessage,
  keys: { readonly workerRoot: Uint8Array; readonly challenges: ChallengeBook },
  creds: ReadonlyMap<string, HostCredentialState>,
  log: Logger,
): { readonly host: string; readonly epoch: number } | { readonly refused: string } {
  try {
    const host = authenticateWorker(req.headers, keys.challenges, keys.workerRoot, (h) => creds.get(h)?.epoch ?? 0);
    if (creds.get(host)?.revoked === true) throw new WorkerFrameError(hostRevokedReason(host));
    return { host, epoch: creds.get(host)?.epoch ?? 0 };
  } catch (err) {
    if (!(err instanceof WorkerFrameError || err instanceof HandshakeError)) throw err;
    const replay = err instanceof HandshakeError && err.code === 'replayed';
    const about = { host: req.headers[WORKER_HEADER_HOST], address: req.socket.remoteAddress, error: err.message };
    log.warn(replay ? 'refused a replayed worker handshake' : 'refused a worker connection', about);
    return { refused: `worker authentication failed: ${err.message}` };
  }
}

/** A WebSocket close reason is at most 123 bytes. */
const CLOSE_REASON_BYTES_MAX = 123;

/** A close reason within the WebSocket limit (host names are ASCII, so are these reasons). */
export function cutCloseReason(text: string): string {
  return Buffer.byteLength(text) <= CLOSE_REASON_BYTES_MAX ? text : `${text.slice(0, CLOSE_REASON_BYTES_MAX - 3)}...`;
}

/**
 * After a credential fact: closes every connection whose host is now revoked or enrolled at a
 * later epoch than it authenticated with (on every controller: each applies the same fact).
 */
export function dropRevoked(
  conns: Iterable<{ readonly host: string; readonly epoch: number; readonly ws: WebSocket }>,
  creds: ReadonlyMap<string, HostCredentialState>,
  log: Logger,
): void {
  for (const conn of conns) {
    const c = creds.get(conn.host);
    if (c === undefined || (!c.revoked && c.epoch === conn.epoch)) continue;
    const reason = c.revoked ? hostRevokedReason(conn.host) : `host ${conn.host} was enrolled again`;
    log.warn('closing a revoked worker connection', { host: conn.host, reason });
    conn.ws.close(1008, cutCloseReason(reason));
    setTimeout(() => conn.ws.terminate(), 1_000).unref();
  }
}
