import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SCHEDULER_PASS_INTERVAL_MS_MIN, SCHEDULER_PASS_SHARE_MAX, PassPacer } from './scheduler-pacing.js';

test('the first pass may start at once, and again after a reset', () => {
  const p = new PassPacer();
  assert.equal(p.wait_ms(0), 0);
  p.ran(1_000, 1_001);
  assert.ok(p.wait_ms(1_001) > 0);
  p.reset();
  assert.equal(p.wait_ms(1_001), 0);
});

test('short passes start SCHEDULER_PASS_INTERVAL_MS_MIN apart, counted from the start of the last', () => {
  const p = new PassPacer();
  p.ran(1_000, 1_002);
  assert.equal(p.wait_ms(1_002), SCHEDULER_PASS_INTERVAL_MS_MIN - 2);
  assert.equal(p.wait_ms(1_000 + SCHEDULER_PASS_INTERVAL_MS_MIN), 0);
  assert.equal(p.wait_ms(5_000), 0);
});

test('after a long pass the gap keeps passes to SCHEDULER_PASS_SHARE_MAX of the time', () => {
  const p = new PassPacer();
  p.ran(1_000, 1_120); // a 120 ms pass (100,000 pending jobs)
  const gap_ms = p.wait_ms(1_120);
  assert.equal(gap_ms, 120 * (1 / SCHEDULER_PASS_SHARE_MAX - 1));
  // Back-to-back passes of that length, each started as soon as allowed: passes take SCHEDULER_PASS_SHARE_MAX of the time.
  let now_ms = 1_120 + gap_ms;
  let busy_ms = 120;
  for (let i = 0; i < 10; i++) {
    assert.equal(p.wait_ms(now_ms), 0);
    p.ran(now_ms, now_ms + 120);
    busy_ms += 120;
    now_ms += 120 + p.wait_ms(now_ms + 120);
  }
  assert.equal(busy_ms / (now_ms - 1_000), SCHEDULER_PASS_SHARE_MAX);
});

test('a clock that steps back never makes a negative wait', () => {
  const p = new PassPacer();
  p.ran(1_000, 990);
  assert.equal(p.wait_ms(10_000), 0);
  assert.equal(p.wait_ms(990), SCHEDULER_PASS_INTERVAL_MS_MIN + 10);
});
