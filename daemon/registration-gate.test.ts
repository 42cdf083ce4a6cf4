// The leader's bound on worker registrations (registration-gate.ts): per turn, queued in all, and
// the `busy` answer's retry time; workers that retry after it are all registered in the end.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BUSY_RETRY_MS_MAX,
  BUSY_RETRY_MS_MIN,
  BUSY_WINDOW_MS,
  QUEUE_WAIT_MS_MAX,
  RegistrationGate,
} from './registration-gate.js';
import { answerBusy, busyRetryOf } from './worker-busy.js';
import { PassThrough } from 'node:stream';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('past queued_max waiting, offers are answered busy with a growing retry time; per_turn are handled a turn', async () => {
  const now = 1_000_000;
  const gate = new RegistrationGate(
    () => ({ perTurn: 3, queuedMax: 5 }),
    () => now,
  );
  const handled: number[] = [];
  const retries: number[] = [];
  for (let i = 0; i < 12; i++) {
    const r = gate.offer(() => handled.push(i));
    if (r !== null) retries.push(r);
  }
  assert.equal(retries.length, 7, '12 offers in one turn, 5 queued: 7 answered busy');
  assert.deepEqual(gate.stats(), { queued: 5, deferred: 7 });
  for (const r of retries) assert.ok(r >= BUSY_RETRY_MS_MIN && r <= BUSY_RETRY_MS_MAX, `retry ${r} ms within bounds`);
  assert.deepEqual(handled, [], 'nothing handled in the turn of the offers');
  await turn();
  assert.deepEqual(handled, [0, 1, 2], 'per_turn (3) handled in the first turn');
  await turn();
  assert.deepEqual(handled, [0, 1, 2, 3, 4]);
  assert.equal(gate.stats().queued, 0);
});

test('the k-th busy answer of a window asks for a longer wait than the one before it (past the minimum)', () => {
  let now = 0;
  const gate = new RegistrationGate(
    () => ({ perTurn: 1, queuedMax: 1 }),
    () => now,
  );
  assert.equal(
    gate.offer(() => undefined),
    null,
  );
  const retries: number[] = [];
  for (let i = 0; i < 1_000; i++) retries.push(gate.offer(() => undefined) ?? -1);
  for (let i = 1; i < retries.length; i++) assert.ok(retries[i]! >= retries[i - 1]!, `retry ${i} not shorter`);
  assert.ok(retries.at(-1)! > retries[0]!, 'the later ones wait longer');
  assert.ok(retries.at(-1)! <= BUSY_RETRY_MS_MAX);
  now += BUSY_WINDOW_MS;
  assert.equal(
    gate.offer(() => undefined),
    BUSY_RETRY_MS_MIN,
    'a new window starts from the shortest wait',
  );
});

test('workers answered busy that offer again after their retry time are all registered in the end', async () => {
  let now = 0;
  const gate = new RegistrationGate(
    () => ({ perTurn: 4, queuedMax: 8 }),
    () => now,
  );
  const registered = new Set<number>();
  /** Worker → the time it dials again. */
  let waiting = new Map<number, number>();
  for (let w = 0; w < 100; w++) waiting.set(w, 0);
  let busy = 0;
  for (let round = 0; round < 1_000 && registered.size < 100; round++) {
    const next = new Map<number, number>();
    for (const [w, at] of waiting) {
      if (at > now) {
        next.set(w, at);
        continue;
      }
      const r = gate.offer(() => registered.add(w));
      if (r !== null) {
        busy++;
        next.set(w, now + r);
      }
    }
    waiting = next;
    await turn();
    now += 10;
  }
  assert.equal(registered.size, 100, 'every worker registered');
  assert.ok(busy > 0, 'some were answered busy first');
  assert.equal(gate.stats().deferred, busy);
});

test('once the oldest waiting has waited QUEUE_WAIT_MS_MAX, newcomers are answered busy whatever the count', async () => {
  let now = 0;
  const gate = new RegistrationGate(
    () => ({ perTurn: 10, queuedMax: 100 }),
    () => now,
  );
  const handled: number[] = [];
  assert.equal(
    gate.offer(() => handled.push(1)),
    null,
  );
  now += QUEUE_WAIT_MS_MAX - 1;
  assert.equal(
    gate.offer(() => handled.push(2)),
    null,
    'the oldest is not late yet',
  );
  now += 1;
  assert.notEqual(
    gate.offer(() => handled.push(3)),
    null,
    'the oldest is late: busy with 2 of 100 waiting',
  );
  await turn();
  assert.deepEqual(handled, [1, 2]);
  assert.equal(
    gate.offer(() => handled.push(4)),
    null,
    'the queue served: newcomers are queued again',
  );
});

test('the limits are read at each use (a configuration upgrade takes effect at once)', async () => {
  let limits = { perTurn: 1, queuedMax: 1 };
  const gate = new RegistrationGate(
    () => limits,
    () => 0,
  );
  const handled: number[] = [];
  assert.equal(
    gate.offer(() => handled.push(1)),
    null,
  );
  assert.notEqual(
    gate.offer(() => handled.push(2)),
    null,
    'busy at queued_max 1',
  );
  limits = { perTurn: 10, queuedMax: 10 };
  assert.equal(
    gate.offer(() => handled.push(3)),
    null,
  );
  gate.admit(() => handled.push(4));
  await turn();
  assert.deepEqual(handled, [1, 3, 4], 'per_turn 10 now: all in one turn');
});

test('a busy answer is a 503 whose body is a busy frame; the worker reads its retry time back', async () => {
  const socket = new PassThrough();
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  answerBusy(socket, 1_500);
  await new Promise<void>((r) => socket.on('end', () => r()));
  const text = Buffer.concat(chunks).toString('utf8');
  assert.match(text, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
  assert.match(text, /\r\nretry-after: 2\r\n/i);
  assert.equal(busyRetryOf(text.slice(text.indexOf('\r\n\r\n') + 4)), 1_500);
  assert.equal(busyRetryOf('upstream busy'), null, 'a 503 from something else is not a busy frame');
  assert.equal(busyRetryOf('{"type":"busy","retry_ms":0}'), null, 'retry_ms must be at least 1');
});
