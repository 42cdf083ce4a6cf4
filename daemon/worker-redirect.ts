// `not-leader` instead of the upgrade (`/worker`, worker-protocol.ts): a controller that is not the
// leader answers a worker's upgrade, once authenticated, `421 Misdirected Request` with a
// `not-leader` frame as its body (JSON: the leader's id and address when it knows them) and closes
// the connection, without upgrading it. After a failover every host may dial a follower first: the
// redirect costs that follower the TLS handshake, the challenge and the authentication, not a
// WebSocket and a queued `register` as well. The worker (daemon/worker/leader-link.ts) dials the
// leader it names at once, or backs off and tries the next controller when it names none. An older
// worker takes the 421 as a failed dial and tries the next controller.
//
// Earlier still: a worker asks for its handshake's nonce with `GET /challenge?for=worker`, and a
// controller that is not the leader answers that `421` with the same `not-leader` body instead of
// a nonce (before authentication, which needs the nonce: the leader still authenticates, and
// refuses a revoked host). A redirect then costs the follower one TLS handshake and one small
// request, and the worker no WebSocket dial; after a failover every host may ask a follower first.
// An older controller ignores the query and gives a nonce; an older worker sends no query.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { answerUpgrade, pathOf } from './http-server.js';
import { CHALLENGE_BYTES_MAX, CHALLENGE_PATH, challengeNonce, type DialTls, httpGet } from './handshake.js';
import { type ControllerToWorkerFrame, parseControllerFrame } from './worker-protocol.js';

/** The query of a worker's challenge request: a controller that is not the leader answers it 421. */
export const WORKER_CHALLENGE_QUERY = 'for=worker';

/** Controller side: whether `req` is a worker's challenge request (`GET /challenge?for=worker`). */
export function isWorkerChallenge(req: IncomingMessage): boolean {
  const url = req.url ?? '/';
  return (
    pathOf(req) === CHALLENGE_PATH &&
    url
      .slice(url.indexOf('?') + 1)
      .split('&')
      .includes(WORKER_CHALLENGE_QUERY)
  );
}

/** Controller side: answers a worker's challenge request 421 with `frame` (a `not-leader`), closing the connection. */
export function answerChallengeNotLeader(
  res: ServerResponse,
  frame: ControllerToWorkerFrame & { type: 'not-leader' },
): void {
  res.writeHead(421, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(frame));
}

/** What a worker's challenge request got: a nonce, or a `not-leader` (with the leader's address when named). */
export type WorkerChallenge = { readonly nonce: string } | { readonly notLeader: string | undefined };

/**
 * Worker side: `GET /challenge?for=worker` on `address` (`host:port`); rejects after `timeout_ms`
 * or on any other answer. With the link's keep-alive `agent` (handshake.ts dialAgent) the
 * WebSocket dialled next reuses the connection.
 */
export async function fetchWorkerChallenge(
  address: string,
  tls: DialTls | null,
  timeout_ms: number,
  agent: Parameters<typeof httpGet>[5],
): Promise<WorkerChallenge> {
  const path = `${CHALLENGE_PATH}?${WORKER_CHALLENGE_QUERY}`;
  const r = await httpGet(address, path, tls, timeout_ms, CHALLENGE_BYTES_MAX, agent);
  if (r.status === 421) return { notLeader: leaderHintOf(r.body) };
  return challengeNonce(address, r);
}

/** Controller side: answers a `/worker` upgrade 421 with `frame` (a `not-leader`), and closes the socket. */
export function answerNotLeader(socket: Duplex, frame: ControllerToWorkerFrame & { type: 'not-leader' }): void {
  const body = JSON.stringify(frame);
  answerUpgrade(socket, 421, body, 'application/json');
}

/** Worker side: the leader's address a 421 answer's body names; undefined when it names none. */
export function leaderHintOf(body: string): string | undefined {
  try {
    const f = parseControllerFrame(body);
    return f.type === 'not-leader' ? f.leader?.address : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Worker side: on an upgrade the controller answers with an HTTP status instead (401, 503 busy,
 * 421 not-leader), hands `answered` the status and the start of the body, and drops the connection.
 */
export function onRefusedUpgrade(ws: WebSocket, answered: (status: number, body: string) => void): void {
  ws.on('unexpected-response', (_req, res) => {
    const chunks: Buffer[] = [];
    res.on('error', () => ws.terminate());
    res.on('data', (d: Buffer) => chunks.length < 4 && chunks.push(d));
    res.on('end', () => {
      answered(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8').trim().slice(0, 300));
      ws.terminate();
    });
  });
}
