// `not-leader` instead of the upgrade (`/worker`, worker-protocol.ts): a controller that is not the
// leader answers a worker's upgrade, once authenticated, `421 Misdirected Request` with a
// `not-leader` frame as its body (JSON: the leader's id and address when it knows them) and closes
// the connection, without upgrading it. After a failover every host may dial a follower first: the
// redirect costs that follower the TLS handshake, the challenge and the authentication, not a
// WebSocket and a queued `register` as well. The worker (daemon/worker/leader-link.ts) dials the
// leader it names at once, or backs off and tries the next controller when it names none. An older
// worker takes the 421 as a failed dial and tries the next controller.

import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { answerUpgrade } from './http-server.js';
import { type ControllerToWorkerFrame, parseControllerFrame } from './worker-protocol.js';

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
