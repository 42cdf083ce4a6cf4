// The worker's redial delays (redial.ts) with a fake clock and fixed random draws: after losing
// the leader, a first dial within the spread window; while the controllers elect, each dial that
// found no leader is followed within the election timeout, not after a growing back-off; past the
// failover window, and before any loss, the usual doubling back-off; a refusal waits the longest.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FAILOVER_ELECTION_LEAD_MS,
  FAILOVER_RETRY_MS,
  FAILOVER_WINDOW_MS,
  RECONNECT_SPREAD_MS_DEFAULT,
  RECONNECT_SPREAD_MS_PER_HOST,
} from './link-contract.js';
import { RedialSchedule } from './redial.js';

/** A schedule on a clock the test moves, whose random draws come from `draws` in turn. */
function schedule(draws: number[], opts: { min?: number; max?: number } = {}) {
  let now = 1_000_000;
  let i = 0;
  const s = new RedialSchedule({
    now: () => now,
    random: () => draws[i++ % draws.length]!,
    reconnectMin_ms: opts.min ?? 100,
    reconnectMax_ms: opts.max ?? 5_000,
  });
  return { s, advance: (ms: number) => void (now += ms) };
}

test('after losing the leader the first dial waits a random time within the spread window, which starts after the election', () => {
  const { s } = schedule([0, 0.5, 1]);
  const lead = FAILOVER_ELECTION_LEAD_MS;
  assert.deepEqual(
    [s.afterLoss(), s.afterLoss(), s.afterLoss()],
    [lead, lead + RECONNECT_SPREAD_MS_DEFAULT / 2, lead + 2_000],
  );
});

test('while the controllers elect, a dial that found no leader is followed within the election timeout', () => {
  const { s, advance } = schedule([0, 1, 0.25]);
  s.afterLoss();
  const waits: number[] = [];
  // Twenty "no leader yet" answers in a row, 300 ms apart (well inside the failover window).
  for (let k = 0; k < 20; k++) {
    advance(300);
    waits.push(s.afterFailedDial());
  }
  for (const w of waits) assert.ok(w >= FAILOVER_RETRY_MS / 2 && w <= FAILOVER_RETRY_MS, `wait ${w} ms`);
  // Jittered (afterLoss took the first draw): the draws 1, 0.25 and 0 give the bounds and a point
  // between, and the wait does not grow.
  assert.deepEqual(waits.slice(0, 4), [500, 313, 250, 500]);
  assert.equal(waits[19], waits[1]);
});

test('past the failover window, and before any loss, the back-off doubles from its minimum', () => {
  const before = schedule([1]).s;
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map(() => before.afterFailedDial()),
    [100, 200, 400, 800, 1_600, 3_200, 5_000],
  );
  const { s, advance } = schedule([1]);
  s.afterLoss();
  advance(FAILOVER_WINDOW_MS);
  assert.deepEqual([s.afterFailedDial(), s.afterFailedDial(), s.afterFailedDial()], [100, 200, 400]);
});

test('registered again: the next loss starts a new failover window', () => {
  const { s, advance } = schedule([1]);
  s.afterLoss();
  advance(FAILOVER_WINDOW_MS + 1);
  assert.equal(s.afterFailedDial(), 100, 'the window is over');
  s.reached();
  advance(60_000);
  s.afterLoss();
  advance(1_000);
  assert.equal(s.afterFailedDial(), FAILOVER_RETRY_MS);
});

test('a worker configured with a shorter back-off retries no later than its maximum while electing', () => {
  const { s } = schedule([1], { min: 10, max: 20 });
  s.afterLoss();
  assert.equal(s.afterFailedDial(), 20);
});

test('a refusal waits the longest back-off', () => {
  const { s } = schedule([1]);
  assert.equal(s.afterRefusal(), 5_000);
});

test('the spread after a loss is 2 ms per host the leader said the cluster lists, within [minimum, 2 s]', () => {
  const { s } = schedule([1]);
  // The draw is 1: the end of the window, which starts FAILOVER_ELECTION_LEAD_MS after the loss or
  // one spread later when the spread is shorter (a small site is not held back for the election).
  const lead = FAILOVER_ELECTION_LEAD_MS;
  const end = RECONNECT_SPREAD_MS_DEFAULT + lead;
  assert.equal(s.afterLoss(), end, 'no count said (an older leader): the whole window');
  s.reached(300);
  assert.equal(s.afterLoss(), lead + 300 * RECONNECT_SPREAD_MS_PER_HOST);
  s.reached(20);
  assert.equal(s.afterLoss(), 100 + 100, 'never under the back-off minimum, and the window starts one spread later');
  s.reached(1_000);
  assert.equal(s.afterLoss(), end, '1,000 hosts and more: the whole window, as before');
  s.reached(50_000);
  assert.equal(s.afterLoss(), end, 'never over the window');
  s.reached(300);
  s.reached();
  assert.equal(s.afterLoss(), lead + 600, 'a later leader that says nothing: the last count is kept');
});
