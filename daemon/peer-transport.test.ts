import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket, { WebSocketServer } from 'ws';
import { ControllerPort, refuse } from './http-server.js';
import { PEER_BUFFERED_BYTES_MAX, PEER_STREAM_LOW_WATER_BYTES, PeerTransport, peerToken } from './peer-transport.js';
import { createLogger } from './log.js';

const secret = new TextEncoder().encode('cluster-secret-for-tests-only-000000');
const log = createLogger({ test: 'peer' }, { sink: { write: () => undefined } });

/** Serves `transport`'s `/raft` on a port of 127.0.0.1, as the controller does. */
async function serve(transport: PeerTransport): Promise<{ port: ControllerPort; address: string }> {
  const port = new ControllerPort();
  port.onUpgrade('/raft', (req, socket, head) => {
    const from = transport.authenticate(req);
    if (from === null) return refuse(socket, 401, 'peer authentication failed');
    transport.server.handleUpgrade(req, socket, head, (ws) => transport.accept(ws, from));
  });
  const addr = await port.listen('127.0.0.1', 0);
  return { port, address: `127.0.0.1:${addr.port}` };
}

async function node(id: number, received: Array<[number, string]>) {
  const transport = new PeerTransport({
    self: id,
    secret,
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

test('peers exchange binary frames over /raft after authenticating with the cluster secret', async () => {
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

test('a peer with the wrong secret is refused and a message to a down peer is dropped, not queued', async () => {
  const got: Array<[number, string]> = [];
  const a = await node(1, got);
  try {
    const bad = new WebSocket(`ws://${a.address}/raft`, { headers: { 'x-xce-node': '3', 'x-xce-auth': 'forged' } });
    bad.on('error', () => undefined);
    const status = await new Promise<number>((r) =>
      bad.on('unexpected-response', (_req, res) => r(res.statusCode ?? 0)),
    );
    assert.equal(status, 401);
    bad.terminate();
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
    secret,
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
  const transport = new PeerTransport({ self: 1, secret, log, onFrame: () => undefined, idle_ms: 200 });
  const { port, address } = await serve(transport);
  try {
    // A peer that authenticated and then went quiet (its sender gave up during a partition).
    const quiet = new WebSocket(`ws://${address}/raft`, {
      headers: { 'x-xce-node': '2', 'x-xce-auth': peerToken(secret, 2) },
    });
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
    secret,
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
