// LeaderLink's choice of controller after a registration that got no answer, and after a `busy`
// answer, and after a follower's `421 not-leader` answer to its upgrade or to its challenge
// request; a dial's challenge and WebSocket on one connection (fake controllers on 127.0.0.1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { WebSocketServer } from 'ws';
import { answerBusy } from '../worker-busy.js';
import { ChallengeBook } from '../handshake.js';
import { answerChallengeNotLeader, answerNotLeader, isWorkerChallenge } from '../worker-redirect.js';
import { parseWorkerFrame, type ControllerToWorkerFrame } from '../worker-protocol.js';
import { LeaderLink, type LinkTraceEvent } from './leader-link.js';
import { idleLinkHandler, silentLog, waitFor } from '../../testing/worker-fixtures.js';

/** A `/worker` endpoint that records the registers it gets, answering `registered` or nothing. */
async function controller(name: string, answers: boolean, dialled: string[]): Promise<WebSocketServer> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/worker' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      if (parseWorkerFrame(data.toString()).type !== 'register') return;
      dialled.push(name);
      const f: ControllerToWorkerFrame = { type: 'registered', leaderId: 2, heartbeat_ms: 1_000 };
      if (answers) ws.send(JSON.stringify(f));
    });
  });
  return wss;
}

const address = (wss: WebSocketServer): string => `127.0.0.1:${(wss.address() as AddressInfo).port}`;

/** A link to `controllers` (short back-offs), and whether it registered. */
function makeLink(
  controllers: string[],
  credential: { host: string; epoch: number; key: Uint8Array } | null = null,
  trace?: (e: LinkTraceEvent) => void,
): { link: LeaderLink; registered: () => boolean } {
  let registered = false;
  const link = new LeaderLink(
    {
      controllers,
      host: 'n1',
      resources: { slots: 1, mem_bytes: 1024 ** 3, booleans: [], numerics: {}, strings: {} },
      version: 'test',
      credential,
      tls: null,
      random: () => 0.5,
      now: Date.now,
      reconnectMin_ms: 10,
      reconnectMax_ms: 20,
      registerTimeout_ms: 150,
      ...(trace !== undefined ? { trace } : {}),
    },
    silentLog(),
    idleLinkHandler({
      onRegistered: () => {
        registered = true;
      },
    }),
  );
  return { link, registered: () => registered };
}

test('a controller that took the connection but did not answer register is dialled once more, then the next one', async () => {
  const dialled: string[] = [];
  const busy = await controller('busy', false, dialled);
  const leader = await controller('leader', true, dialled);
  const { link: l, registered } = makeLink([address(busy), address(leader)]);
  try {
    l.connect();
    await waitFor('registered with the leader', () => registered());
    assert.deepEqual(dialled, ['busy', 'busy', 'leader']);
  } finally {
    l.close();
    for (const s of [busy, leader]) {
      for (const c of s.clients) c.terminate();
      await new Promise<void>((r) => s.close(() => r()));
    }
  }
});

/**
 * A leader answering its first upgrade `503 busy` (the body a `busy` frame), its second connection
 * a `busy` frame (closed 1013), and registering the third; each dial recorded.
 */
async function busyLeader(dialled: string[]): Promise<{ server: Server; wss: WebSocketServer }> {
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer();
  let upgrades = 0;
  server.on('upgrade', (req, socket, head) => {
    dialled.push('leader');
    if (++upgrades === 1) return answerBusy(socket, 40);
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', () => {
        if (upgrades === 2) {
          ws.send(JSON.stringify({ type: 'busy', retry_ms: 40 } satisfies ControllerToWorkerFrame));
          return ws.close(1013, 'busy');
        }
        ws.send(
          JSON.stringify({ type: 'registered', leaderId: 1, heartbeat_ms: 1_000 } satisfies ControllerToWorkerFrame),
        );
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, wss };
}

test('a worker answered busy dials the same controller again, neither moving on nor counting a leader loss', async () => {
  const dialled: string[] = [];
  const leader = await busyLeader(dialled);
  const other = await controller('other', true, dialled);
  const { link: l, registered } = makeLink([
    `127.0.0.1:${(leader.server.address() as AddressInfo).port}`,
    address(other),
  ]);
  try {
    l.connect();
    await waitFor('registered with the busy leader', () => registered());
    assert.deepEqual(dialled, ['leader', 'leader', 'leader'], 'the other controller was never dialled');
    assert.equal(l.busyAnswers, 2, 'one busy as a 503 answer, one as a frame');
    assert.equal(l.leaderId, 1);
    assert.equal(l.refusals, 0, 'busy is not a refusal');
  } finally {
    l.close();
    for (const c of [...leader.wss.clients, ...other.clients]) c.terminate();
    leader.server.closeAllConnections();
    await new Promise<void>((r) => leader.server.close(() => r()));
    await new Promise<void>((r) => other.close(() => r()));
  }
});

test("a dial's challenge and WebSocket upgrade share one connection to the controller", async () => {
  const key = new Uint8Array(32).fill(7);
  const book = new ChallengeBook();
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => res.end(JSON.stringify({ nonce: book.issue().nonce })));
  let connections = 0;
  server.on('connection', () => connections++);
  server.on('upgrade', (req, socket, head) => {
    book.verify(req.headers, key, 'worker', 'n1');
    wss.handleUpgrade(req, socket, head, (ws) => {
      const f: ControllerToWorkerFrame = { type: 'registered', leaderId: 1, heartbeat_ms: 1_000 };
      ws.on('message', () => ws.send(JSON.stringify(f)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { link: l, registered } = makeLink([`127.0.0.1:${(server.address() as AddressInfo).port}`], {
    host: 'n1',
    epoch: 0,
    key,
  });
  try {
    l.connect();
    await waitFor('registered after a challenge', () => registered());
    assert.equal(connections, 1, 'GET /challenge and the upgrade came on the same connection');
  } finally {
    l.close();
    for (const c of wss.clients) c.terminate();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("a follower's 421 not-leader answer to the upgrade sends the worker to the leader it names at once", async () => {
  const dialled: string[] = [];
  const leader = await controller('leader', true, dialled);
  const follower = createServer();
  let redirects = 0;
  follower.on('upgrade', (_req, socket) => {
    redirects++;
    answerNotLeader(socket, { type: 'not-leader', leader: { id: 2, address: address(leader) } });
  });
  await new Promise<void>((r) => follower.listen(0, '127.0.0.1', () => r()));
  // The leader is not in the link's list of controllers: only the hint can take the worker there.
  const { link: l, registered } = makeLink([`127.0.0.1:${(follower.address() as AddressInfo).port}`]);
  try {
    l.connect();
    await waitFor('registered with the leader the follower named', () => registered());
    assert.equal(redirects, 1);
    assert.deepEqual(dialled, ['leader']);
  } finally {
    l.close();
    for (const c of leader.clients) c.terminate();
    follower.closeAllConnections();
    await new Promise<void>((r) => follower.close(() => r()));
    await new Promise<void>((r) => leader.close(() => r()));
  }
});

test("a follower's 421 not-leader answer to the worker's challenge request sends it to the leader without an upgrade", async () => {
  const key = new Uint8Array(32).fill(7);
  const book = new ChallengeBook();
  const dialled: string[] = [];
  const leaderWss = new WebSocketServer({ noServer: true });
  const leader = createServer((_req, res) => res.end(JSON.stringify({ nonce: book.issue().nonce })));
  leader.on('upgrade', (req, socket, head) => {
    book.verify(req.headers, key, 'worker', 'n1');
    dialled.push('leader');
    leaderWss.handleUpgrade(req, socket, head, (ws) => {
      const f: ControllerToWorkerFrame = { type: 'registered', leaderId: 2, heartbeat_ms: 1_000 };
      ws.on('message', () => ws.send(JSON.stringify(f)));
    });
  });
  await new Promise<void>((r) => leader.listen(0, '127.0.0.1', () => r()));
  const leaderAddress = `127.0.0.1:${(leader.address() as AddressInfo).port}`;
  const asked: string[] = [];
  const follower = createServer((req, res) => {
    asked.push(req.url ?? '');
    if (!isWorkerChallenge(req)) return void res.end(JSON.stringify({ nonce: book.issue().nonce }));
    answerChallengeNotLeader(res, { type: 'not-leader', leader: { id: 2, address: leaderAddress } });
  });
  follower.on('upgrade', (_req, socket) => {
    dialled.push('follower');
    socket.destroy();
  });
  await new Promise<void>((r) => follower.listen(0, '127.0.0.1', () => r()));
  const { link: l, registered } = makeLink([`127.0.0.1:${(follower.address() as AddressInfo).port}`], {
    host: 'n1',
    epoch: 0,
    key,
  });
  try {
    l.connect();
    await waitFor('registered with the leader the follower named', () => registered());
    assert.deepEqual(asked, ['/challenge?for=worker'], 'one challenge request to the follower');
    assert.deepEqual(dialled, ['leader'], 'no upgrade on the follower');
    assert.equal(l.leaderId, 2);
  } finally {
    l.close();
    for (const c of leaderWss.clients) c.terminate();
    for (const s of [leader, follower]) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  }
});

test('a controller electing answers the challenge request not-leader without a hint: the worker backs off', async () => {
  const key = new Uint8Array(32).fill(7);
  let asked = 0;
  const electing = createServer((req, res) => {
    asked++;
    assert.ok(isWorkerChallenge(req));
    answerChallengeNotLeader(res, { type: 'not-leader' });
  });
  let upgrades = 0;
  electing.on('upgrade', (_req, socket) => {
    upgrades++;
    socket.destroy();
  });
  await new Promise<void>((r) => electing.listen(0, '127.0.0.1', () => r()));
  const traced: string[] = [];
  const { link: l } = makeLink(
    [`127.0.0.1:${(electing.address() as AddressInfo).port}`],
    {
      host: 'n1',
      epoch: 0,
      key,
    },
    (e) => traced.push(e.kind === 'answer' ? e.answer : e.kind === 'wait' ? `wait ${e.why}` : e.kind),
  );
  try {
    l.connect();
    await waitFor('asked twice', () => asked >= 2);
    assert.equal(upgrades, 0, 'no upgrade after a not-leader challenge answer');
    assert.deepEqual(traced.slice(0, 4), ['dial', 'no-leader', 'wait backoff', 'dial']);
  } finally {
    l.close();
    electing.closeAllConnections();
    await new Promise<void>((r) => electing.close(() => r()));
  }
});
