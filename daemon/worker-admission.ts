// Who may open `/worker` (issue 19): a fresh handshake proving the credential of the host the
// worker names, at that host's enrolment epoch in the replicated state, and a host not revoked.
// Refusals are logged (a replay as such) and answered 401 with the reason.

import type { IncomingMessage } from 'node:http';
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
