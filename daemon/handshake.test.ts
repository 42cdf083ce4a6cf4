import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHALLENGE_TTL_MS,
  ChallengeBook,
  HANDSHAKE_SKEW_MS,
  HandshakeError,
  HEADER_TIME,
  handshakeHeaders,
  NONCES_PER_DRAW,
  wssDialOptions,
} from './handshake.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';
import { makeDevTls } from '../harness/dev-tls.js';

const key = new Uint8Array(32).fill(7);
const code = (f: () => void): string => {
  try {
    f();
    return 'accepted';
  } catch (e) {
    assert.ok(e instanceof HandshakeError);
    return e.code;
  }
};

test('a handshake is accepted once: the same one again is a replay, counted', () => {
  let now = 1_000_000;
  const book = new ChallengeBook(() => now);
  const h = handshakeHeaders(key, 'worker', 'node01', book.issue(), now);
  assert.equal(
    code(() => book.verify(h, key, 'worker', 'node01')),
    'accepted',
  );
  now += 1_000;
  assert.equal(
    code(() => book.verify(h, key, 'worker', 'node01')),
    'replayed',
  );
  assert.equal(book.replays, 1);
});

test('a made-up or expired nonce, a time far from the clock, a wrong key or subject are refused', () => {
  let now = 1_000_000;
  const book = new ChallengeBook(() => now);
  const made = handshakeHeaders(key, 'worker', 'node01', { nonce: 'made-up' }, now);
  assert.equal(
    code(() => book.verify(made, key, 'worker', 'node01')),
    'unknown-nonce',
  );
  const old = handshakeHeaders(key, 'worker', 'node01', book.issue(), now);
  now += CHALLENGE_TTL_MS + 1;
  assert.equal(
    code(() => book.verify(old, key, 'worker', 'node01')),
    'unknown-nonce',
  );
  const skewed = handshakeHeaders(key, 'worker', 'node01', book.issue(), now - HANDSHAKE_SKEW_MS - 1);
  assert.equal(
    code(() => book.verify(skewed, key, 'worker', 'node01')),
    'stale-time',
  );
  const other = new Uint8Array(32).fill(8);
  assert.equal(
    code(() => book.verify(handshakeHeaders(other, 'worker', 'node01', book.issue(), now), key, 'worker', 'node01')),
    'bad-proof',
  );
  assert.equal(
    code(() => book.verify(handshakeHeaders(key, 'worker', 'node02', book.issue(), now), key, 'worker', 'node01')),
    'bad-proof',
  );
  assert.equal(
    code(() => book.verify(handshakeHeaders(key, 'raft-peer', 'node01', book.issue(), now), key, 'worker', 'node01')),
    'bad-proof',
  );
  const h = handshakeHeaders(key, 'worker', 'node01', book.issue(), now);
  assert.equal(
    code(() => book.verify({ ...h, [HEADER_TIME]: undefined }, key, 'worker', 'node01')),
    'missing',
  );
});

test('a wrong proof spends its nonce: one guess per nonce', () => {
  const book = new ChallengeBook();
  const c = book.issue();
  const wrong = handshakeHeaders(new Uint8Array(32), 'worker', 'node01', c, Date.now());
  assert.equal(
    code(() => book.verify(wrong, key, 'worker', 'node01')),
    'bad-proof',
  );
  const right = handshakeHeaders(key, 'worker', 'node01', c, Date.now());
  assert.equal(
    code(() => book.verify(right, key, 'worker', 'node01')),
    'replayed',
  );
});

test('nonces drawn several per CSPRNG call are each 24 random bytes, never handed out twice, each accepted once', () => {
  const now = 1_000_000;
  const books = [new ChallengeBook(() => now), new ChallengeBook(() => now)];
  const seen = new Set<string>();
  // Past three draws of each book, and two books side by side (each has its own pool).
  for (let i = 0; i < 3 * NONCES_PER_DRAW + 5; i++) {
    for (const book of books) {
      const { nonce } = book.issue();
      assert.match(nonce, /^[A-Za-z0-9_-]{32}$/, 'base64url of 24 bytes');
      assert.equal(Buffer.from(nonce, 'base64url').length, 24);
      assert.ok(!seen.has(nonce), `nonce ${nonce} handed out twice`);
      seen.add(nonce);
      assert.equal(
        code(() => book.verify(handshakeHeaders(key, 'worker', 'node01', { nonce }, now), key, 'worker', 'node01')),
        'accepted',
      );
    }
  }
  // Not all zero bytes: the used part of a draw is zeroed after use, never the part handed out next.
  const zero = Buffer.alloc(24).toString('base64url');
  assert.ok(!seen.has(zero));
});

test('a WebSocket dialled over TLS with wssDialOptions sends its frames unmasked: a zero mask key, the payload as it is', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-wss-mask-'));
  const tls = makeDevTls(join(dir, 'tls'), 'mask test');
  const server = createHttpsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) });
  const wss = new WebSocketServer({ server });
  // The bytes of the first frame as the server's TLS socket hands them over (decrypted, not unmasked).
  const firstFrame = new Promise<Buffer>((resolve) =>
    wss.on('connection', (_ws, req) => req.socket.once('data', (d: Buffer) => resolve(d))),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const client = new WebSocket(`wss://127.0.0.1:${port}/`, wssDialOptions({ ca: readFileSync(tls.caFile) }));
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('open', resolve);
      client.once('error', reject);
    });
    const payload = Buffer.from('append 17..42 term 3');
    client.send(payload, { binary: true });
    const frame = await firstFrame;
    assert.equal(frame[0], 0x82, 'one final binary frame');
    assert.equal(frame[1], 0x80 | payload.length, 'marked masked (a client must), short length');
    assert.deepEqual([...frame.subarray(2, 6)], [0, 0, 0, 0], 'the mask key is zeros');
    assert.ok(frame.subarray(6, 6 + payload.length).equals(payload), 'so the payload is sent as it is');
  } finally {
    client.terminate();
    wss.close();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
