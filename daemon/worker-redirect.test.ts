// A worker's challenge request (`GET /challenge?for=worker`, worker-redirect.ts): which requests a
// controller takes for one, and what the worker makes of each answer (a nonce, a `not-leader`
// with or without the leader's address, anything else an error naming the controller).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerChallengeNotLeader, fetchWorkerChallenge, isWorkerChallenge } from './worker-redirect.js';

test("a worker's challenge request is GET /challenge with for=worker among its query's parameters", () => {
  const is = (url: string): boolean => isWorkerChallenge({ url } as IncomingMessage);
  assert.equal(is('/challenge?for=worker'), true);
  assert.equal(is('/challenge?x=1&for=worker'), true);
  assert.equal(is('/challenge'), false, "a peer's or a client's");
  assert.equal(is('/challenge?for=workers'), false);
  assert.equal(is('/metrics?for=worker'), false);
});

test('the worker reads a nonce, a not-leader with or without the leader, and names the controller otherwise', async () => {
  const answers = [
    (res: ServerResponse) => res.end(JSON.stringify({ nonce: 'n1' })),
    (res: ServerResponse) =>
      answerChallengeNotLeader(res, { type: 'not-leader', leader: { id: 2, address: '127.0.0.1:7002' } }),
    (res: ServerResponse) => answerChallengeNotLeader(res, { type: 'not-leader' }),
    (res: ServerResponse) => res.writeHead(500).end('oops'),
  ];
  let k = 0;
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    answers[k++]!(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    assert.deepEqual(await fetchWorkerChallenge(address, null, 2_000, undefined), { nonce: 'n1' });
    assert.deepEqual(await fetchWorkerChallenge(address, null, 2_000, undefined), { notLeader: '127.0.0.1:7002' });
    assert.deepEqual(await fetchWorkerChallenge(address, null, 2_000, undefined), { notLeader: undefined });
    await assert.rejects(
      fetchWorkerChallenge(address, null, 2_000, undefined),
      new RegExp(`bad challenge answer from ${address}: status 500`),
    );
    assert.deepEqual(seen, Array(4).fill('/challenge?for=worker'));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
