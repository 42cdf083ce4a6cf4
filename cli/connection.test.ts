import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KEEPALIVE_MS, keepaliveAction } from './connection.js';

/**
 * Drives keepaliveAction over ticks every KEEPALIVE_MS, with frames from the controller at the
 * times given (ms, ascending); a ping is answered by a pong at once when `pongs` is true. Returns
 * the pings sent and the time the connection was abandoned (null: never, within `until`).
 */
function run(frames_ms: readonly number[], pongs: boolean, until: number): { pings: number; abandoned: number | null } {
  let lastHeard = -Infinity;
  let awaitingPong = false;
  let pings = 0;
  let next = 0;
  for (let now = KEEPALIVE_MS; now <= until; now += KEEPALIVE_MS) {
    while (next < frames_ms.length && frames_ms[next]! <= now) lastHeard = frames_ms[next++]!;
    const action = keepaliveAction(now, lastHeard, awaitingPong);
    if (action === 'abandon') return { pings, abandoned: now };
    if (action === 'heard') awaitingPong = false;
    else {
      pings++;
      awaitingPong = !pongs;
    }
  }
  return { pings, abandoned: null };
}

test('a client whose answers keep coming (every 10 ms) sends no keepalive ping', () => {
  const answers = Array.from({ length: 1000 }, (_, i) => i * 10);
  assert.deepEqual(run(answers, false, 9_990), { pings: 0, abandoned: null });
});

test('a controller that answers only pings is pinged every tick and kept', () => {
  assert.deepEqual(run([], true, 10 * KEEPALIVE_MS), { pings: 10, abandoned: null });
});

test('a controller that falls silent is abandoned within 2.5 keepalives of its last frame', () => {
  // The last frame at every offset into a tick: just after one, half-way, just before the next.
  for (const last of [751, 1000, 1124, 1125, 1126, 1499]) {
    const { abandoned } = run([0, last], false, 20 * KEEPALIVE_MS);
    assert.ok(abandoned !== null, `last frame at ${last} ms: never abandoned`);
    assert.ok(abandoned - last <= 2.5 * KEEPALIVE_MS, `last frame at ${last} ms: abandoned at ${abandoned}`);
  }
});

test('answers that stop for longer than half a keepalive bring the pings back, and a pong keeps the connection', () => {
  // Answers for 2 s, a 3 s gap (a long request), then answers again: pings only in the gap.
  const frames = [
    ...Array.from({ length: 200 }, (_, i) => i * 10),
    ...Array.from({ length: 200 }, (_, i) => 5_000 + i * 10),
  ];
  const r = run(frames, true, 6_990);
  assert.equal(r.abandoned, null);
  assert.ok(r.pings >= 3 && r.pings <= 4, `${r.pings} pings in the 3 s gap`);
});
