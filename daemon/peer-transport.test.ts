import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket, { WebSocketServer } from 'ws';
import { ControllerPort } from './http-server.js';
import {
  HEADER_NODE,
  PEER_BUFFERED_BYTES_MAX,
  PEER_STREAM_LOW_WATER_BYTES,
  PeerTransport,
  peerSubject,
} from './peer-transport.js';
import { createLogger } from './log.js';
import { CHALLENGE_PATH, ChallengeBook, fetchChallenge, handshakeHeaders } from './handshake.js';
import { deriveClusterKeys } from './keys.js';

const secret = new TextEncoder().encode('cluster-secret-for-tests-only-000000');
const key = deriveClusterKeys(secret).peer;
/** A transport's keys and nonces (each node its own book, as each controller has). */
const auth = () => ({ key, challenges: new ChallengeBook(), tls: null });

/** Serves nonces on a stand-in peer's port (its /raft is the test's own). */
function serveChallenges(port: ControllerPort): void {
  const book = new ChallengeBook();
  port.onGet(CHALLENGE_PATH, (_req, res) => void res.end(JSON.stringify(book.issue())));
}

/** The headers of a good handshake of peer `from` with the node at `address` (id `to`). */
async function handshakeWith(address: string, from: number, to: number, withKey = key) {
  const challenge = await fetchChallenge(address, null, 2_000);
  return {
    [HEADER_NODE]: String(from),
    ...handshakeHeaders(withKey, 'raft-peer', peerSubject(from, to), challenge, Date.now()),
  };
}

/** The HTTP status an upgrade to `url` with `headers` is answered with (101 when it opens). */
async function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(url, { headers });
  ws.on('error', () => undefined);
  const status = await new Promise<number>((r) => {
    ws.on('unexpected-response', (_req, res) => r(res.statusCode ?? 0));
    ws.on('open', () => r(101));
  });
  ws.terminate();
  return status;
}
const log = createLogger({ test: 'peer' }, { sink: { write: () => undefined } });

/** Serves `transport`'s `/raft` on a port of 127.0.0.1, as the controller does. */
async function serve(transport: PeerTransport): Promise<{ port: ControllerPort; address: string }> {
  const port = new ControllerPort();
  transport.serveOn(port);
  const addr = await port.listen('127.0.0.1', 0);
  return { port, address: `127.0.0.1:${addr.port}` };
}

async function node(id: number, received: Array<[number, string]>) {
  const transport = new PeerTransport({
    self: id,
    ...auth(),
    log,
    onFrame: (from, f) => received.push([from, Buffer.from(f).toString()]),
    random: () => 0.5,
  });
  return { id, transport, ...(await serve(transport)) };
}

async function until(cond: () => boolean, what: string, limit_ms = 5_000): Promise<void> {
  const end = Date.now() + limit_ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('peers exchange binary frames over /raft after a challenge-response handshake with the peer key', async () => {
  const got1: Array<[number, string]> = [];
  const got2: Array<[number, string]> = [];
  const a = await node(1, got1);
  const b = await node(2, got2);
  try {
    a.transport.setPeers([{ id: 2, address: b.address }]);
    b.transport.setPeers([{ id: 1, address: a.address }]);
    await until(() => a.transport.connected(2) && b.transport.connected(1), 'links');
    a.transport.send(2, Buffer.from('append'));
    b.transport.send(1, Buffer.from('ack'));
    await until(() => got1.length === 1 && got2.length === 1, 'frames');
    assert.deepEqual(got2, [[1, 'append']]);
    assert.deepEqual(got1, [[2, 'ack']]);
  } finally {
    a.transport.close();
    b.transport.close();
    await a.port.close();
    await b.port.close();
  }
});

test('a peer with the wrong key, no nonce or a replayed handshake is refused; a message to a down peer is dropped, not queued', async () => {
  const got: Array<[number, string]> = [];
  const a = await node(1, got);
  const url = `ws://${a.address}/raft`;
  try {
    assert.equal(await upgradeStatus(url, { [HEADER_NODE]: '3', 'x-xce-auth': 'forged' }), 401, 'no nonce');
    const otherKey = deriveClusterKeys(new TextEncoder().encode('another-cluster-secret-0123456789abcdef')).peer;
    assert.equal(await upgradeStatus(url, await handshakeWith(a.address, 3, 1, otherKey)), 401, 'another key');
    // A user-token key or a worker credential is not the peer key either.
    const userKey = deriveClusterKeys(secret).userToken;
    assert.equal(await upgradeStatus(url, await handshakeWith(a.address, 3, 1, userKey)), 401, 'the user-token key');
    assert.equal(await upgradeStatus(url, await handshakeWith(a.address, 3, 2)), 401, 'a handshake for node 2');
    const good = await handshakeWith(a.address, 3, 1);
    assert.equal(await upgradeStatus(url, good), 101, 'a fresh handshake');
    assert.equal(await upgradeStatus(url, good), 401, 'the same handshake replayed');
    a.transport.setPeers([{ id: 9, address: '127.0.0.1:1' }]);
    assert.equal(a.transport.send(9, Buffer.from('x')), false);
    assert.equal(a.transport.stats()[0]?.dropped, 1);
    assert.equal(got.length, 0);
  } finally {
    a.transport.close();
    await a.port.close();
  }
});

test('an unknown WebSocket path is answered 404 naming the known ones', async () => {
  const a = await node(1, []);
  try {
    const ws = new WebSocket(`ws://${a.address}/nope`);
    ws.on('error', () => undefined);
    const status = await new Promise<number>((r) =>
      ws.on('unexpected-response', (_req, res) => r(res.statusCode ?? 0)),
    );
    assert.equal(status, 404);
    ws.terminate();
  } finally {
    a.transport.close();
    await a.port.close();
  }
});

test('a link that stops answering pings is dropped and redialled, and frames flow on the new one', async () => {
  // The receiving end answers no ping on its first connection (as a peer behind a partition),
  // and answers them on every later one.
  const port = new ControllerPort();
  serveChallenges(port);
  const server = new WebSocketServer({ noServer: true, autoPong: false });
  const sockets: WebSocket[] = [];
  const got: string[] = [];
  port.onUpgrade('/raft', (req, socket, head) => {
    server.handleUpgrade(req, socket, head, (ws) => {
      if (sockets.length > 0) ws.on('ping', (data) => ws.pong(data));
      ws.on('message', (data) => got.push(String(data)));
      sockets.push(ws);
    });
  });
  const addr = await port.listen('127.0.0.1', 0);
  const a = new PeerTransport({
    self: 1,
    ...auth(),
    log,
    onFrame: () => undefined,
    random: () => 0.5,
    ping_ms: 25,
    dead_ms: 500,
  });
  try {
    a.setPeers([{ id: 2, address: `127.0.0.1:${addr.port}` }]);
    await until(
      () => a.stats()[0]!.silent === 1 && sockets.length >= 2 && a.connected(2),
      'the silent link to be dropped and a new one opened',
    );
    assert.equal(
      sockets[0]!.readyState === WebSocket.CLOSED || sockets[0]!.readyState === WebSocket.CLOSING,
      true,
      'the silent link was closed',
    );
    assert.equal(a.send(2, Buffer.from('after the redial')), true);
    await until(() => got.includes('after the redial'), 'the frame on the new link');
    // The new link answers its pings: it stays.
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(a.stats()[0]!.silent, 1, 'a link that answers is kept');
  } finally {
    a.close();
    for (const ws of server.clients) ws.terminate();
    server.close();
    await port.close();
  }
});

test('a received link on which nothing arrives, not even a ping, is dropped', async () => {
  const transport = new PeerTransport({ self: 1, ...auth(), log, onFrame: () => undefined, idle_ms: 200 });
  const { port, address } = await serve(transport);
  try {
    // A peer that authenticated and then went quiet (its sender gave up during a partition).
    const quiet = new WebSocket(`ws://${address}/raft`, { headers: await handshakeWith(address, 2, 1) });
    quiet.on('error', () => undefined);
    await new Promise((r) => quiet.on('open', r));
    const closed = await new Promise<number>((r) => quiet.on('close', (code) => r(code)));
    assert.equal(closed, 1006, 'the receiver terminated the socket');
  } finally {
    transport.close();
    await port.close();
  }
});

test('a stream larger than a link may queue arrives whole and in order, holding a bounded amount in the link', async () => {
  const frameBytes = 512 * 1024;
  const count = Math.ceil((PEER_BUFFERED_BYTES_MAX * 1.5) / frameBytes);
  let received = 0;
  let inOrder = true;
  const a = await node(1, []);
  const b = new PeerTransport({
    self: 2,
    ...auth(),
    log,
    onFrame: (from, f) => {
      // The numbered stream, then one ordinary message numbered 0xffffffff.
      const want = received < count ? received : 0xffffffff;
      if (from !== 1 || f.byteLength !== frameBytes || new DataView(f.buffer, f.byteOffset).getUint32(0) !== want)
        inOrder = false;
      received++;
    },
  });
  const { port, address } = await serve(b);
  try {
    a.transport.setPeers([{ id: 2, address }]);
    await until(() => a.transport.connected(2), 'the link');
    let made = 0;
    const frames = (function* () {
      for (let i = 0; i < count; i++) {
        const f = new Uint8Array(frameBytes);
        new DataView(f.buffer).setUint32(0, i);
        made++;
        yield f;
      }
    })();
    // Frames are made as the link drains, not all at once: at most the low-water mark's worth
    // (plus the one being sent) is ever ahead of the receiver's socket.
    const ahead: number[] = [];
    const watch = setInterval(() => ahead.push(made - received), 1);
    const ok = await a.transport.stream(2, frames);
    clearInterval(watch);
    assert.equal(ok, true);
    // An ordinary message sent during or after the stream is not dropped for a full link.
    const extra = new Uint8Array(frameBytes);
    new DataView(extra.buffer).setUint32(0, 0xffffffff);
    assert.equal(a.transport.send(2, extra), true);
    await until(() => received === count + 1, 'every frame', 30_000);
    assert.equal(inOrder, true, 'every frame arrived, in order, then the ordinary message');
    // The bound: what the stream made but the receiver has not yet seen stays below what would
    // make the link drop messages (it is about the low-water mark plus what the sockets hold).
    const most = Math.max(...ahead) * frameBytes;
    assert.ok(
      most < PEER_BUFFERED_BYTES_MAX,
      `at most ${most} bytes were ahead of the receiver (low water ${PEER_STREAM_LOW_WATER_BYTES})`,
    );
  } finally {
    a.transport.close();
    b.close();
    await a.port.close();
    await port.close();
  }
});

test('a stream stops and says so when its link closes half-way', async () => {
  const a = await node(1, []);
  const port = new ControllerPort();
  serveChallenges(port);
  const sockets: WebSocket[] = [];
  const server = new WebSocketServer({ noServer: true });
  let frames = 0;
  port.onUpgrade('/raft', (req, socket, head) => {
    server.handleUpgrade(req, socket, head, (ws) => {
      sockets.push(ws);
      // The receiver goes away after 10 frames (a crash, a partition the sender noticed).
      ws.on('message', () => {
        if (++frames === 10) ws.terminate();
      });
    });
  });
  const addr = await port.listen('127.0.0.1', 0);
  try {
    a.transport.setPeers([{ id: 2, address: `127.0.0.1:${addr.port}` }]);
    await until(() => a.transport.connected(2), 'the link');
    let made = 0;
    const ok = await a.transport.stream(
      2,
      (function* () {
        for (let i = 0; i < 10_000; i++) {
          made++;
          yield new Uint8Array(64 * 1024);
        }
      })(),
    );
    assert.equal(ok, false, 'the stream reports that it did not finish');
    assert.ok(made < 10_000, `the stream stopped making frames (${made} made)`);
  } finally {
    a.transport.close();
    await a.port.close();
    for (const ws of server.clients) ws.terminate();
    server.close();
    await port.close();
  }
});
