// LongTimeout on node:test's fake clock: a delay beyond Node's timer range waits the whole delay.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { setLongTimeout, TIMER_STEP_MS_MAX } from './long-timer.js';

const DAY_MS = 24 * 3600 * 1000;

test('a 30-day delay fires after 30 days, not at once (setTimeout alone fires it after 1 ms)', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let fired = 0;
    setLongTimeout(() => fired++, 30 * DAY_MS);
    mock.timers.tick(7);
    assert.equal(fired, 0, 'not after 7 ms');
    // (The fake clock re-arms from the end of a tick: tick to the end of the first step exactly.)
    mock.timers.tick(TIMER_STEP_MS_MAX - 7);
    assert.equal(fired, 0, 'not after the first step of 24.8 days');
    mock.timers.tick(30 * DAY_MS - TIMER_STEP_MS_MAX - 1);
    assert.equal(fired, 0, 'not 1 ms early');
    mock.timers.tick(1);
    assert.equal(fired, 1, 'at 30 days');
    mock.timers.tick(100 * DAY_MS);
    assert.equal(fired, 1, 'once');
  } finally {
    mock.timers.reset();
  }
});

test('a delay within the range is one plain timer; clear stops it in any step; Infinity never fires', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    let fired = 0;
    setLongTimeout(() => fired++, 500);
    mock.timers.tick(499);
    assert.equal(fired, 0);
    mock.timers.tick(1);
    assert.equal(fired, 1);
    const t = setLongTimeout(() => fired++, 60 * DAY_MS);
    mock.timers.tick(40 * DAY_MS);
    t.clear();
    mock.timers.tick(40 * DAY_MS);
    assert.equal(fired, 1, 'cleared during its second step');
    setLongTimeout(() => fired++, Infinity);
    mock.timers.tick(1000 * DAY_MS);
    assert.equal(fired, 1);
    assert.throws(() => setLongTimeout(() => fired++, NaN), RangeError);
  } finally {
    mock.timers.reset();
  }
});
