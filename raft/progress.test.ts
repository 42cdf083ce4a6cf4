import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Inflights, Progress, ProgressState } from './progress.js';

describe('Inflights (the pipelining window)', () => {
  // Filled until full, then freed up to `freeTo`: what is left in flight, and the window has room again.
  const bounds: Array<{
    name: string;
    window: [count: number, bytes: number];
    adds: Array<[index: number, bytes: number]>;
    freeTo: number;
    left: { count: number } | { bytes: number };
  }> = [
    {
      name: 'is bounded by message count',
      window: [3, 1 << 20],
      adds: [
        [1, 10],
        [2, 10],
        [3, 10],
      ],
      freeTo: 2,
      left: { count: 1 },
    },
    {
      name: 'is bounded by bytes',
      window: [100, 1000],
      adds: [
        [5, 600],
        [9, 500],
      ],
      freeTo: 5,
      left: { bytes: 500 },
    },
  ];
  for (const c of bounds)
    it(c.name, () => {
      const w = new Inflights(...c.window);
      c.adds.forEach(([index, bytes], i) => {
        if (i === c.adds.length - 1) assert.ok(!w.full());
        w.add(index, bytes);
      });
      assert.ok(w.full());
      w.freeLE(c.freeTo);
      if ('count' in c.left) assert.equal(w.count, c.left.count);
      else assert.equal(w.bytes, c.left.bytes);
      assert.ok(!w.full());
    });

  it('wraps around its ring', () => {
    const w = new Inflights(2, 1 << 20);
    for (let i = 1; i <= 10; i++) {
      w.add(i, 1);
      w.freeLE(i - 1);
      assert.ok(w.count <= 2);
    }
    w.freeFirstOne();
    assert.equal(w.count, 0);
  });
});

describe('Progress', () => {
  it('probe sends one message, then waits', () => {
    const p = new Progress(5, false, 4, 1 << 20);
    assert.equal(p.state, ProgressState.Probe);
    assert.ok(!p.isPaused());
    p.sentEntries(6, 2, 20);
    assert.ok(p.isPaused());
    assert.equal(p.next, 5, 'probe does not move next optimistically');
  });

  it('replicate moves next optimistically and pauses when the window is full', () => {
    const p = new Progress(1, false, 2, 1 << 20);
    p.maybeUpdate(0);
    p.becomeReplicate();
    p.sentEntries(3, 3, 30);
    p.sentEntries(5, 2, 20);
    assert.equal(p.next, 6);
    assert.ok(p.isPaused());
    assert.ok(p.maybeUpdate(3));
    p.inflights.freeLE(3);
    assert.ok(!p.isPaused());
  });

  it('a rejection in replicate falls back to match + 1; a stale one is ignored', () => {
    const p = new Progress(1, false, 8, 1 << 20);
    p.maybeUpdate(4);
    p.becomeReplicate();
    p.sentEntries(9, 5, 50);
    assert.ok(!p.maybeDecrTo(3, 3), 'index 3 is already known to match');
    assert.ok(p.maybeDecrTo(7, 6));
    assert.equal(p.next, 5);
  });

  it('a rejection in probe uses the conflict hint, but never goes below match + 1', () => {
    const p = new Progress(11, false, 8, 1 << 20);
    p.maybeUpdate(2);
    p.next = 11;
    assert.ok(!p.maybeDecrTo(7, 3), 'not the answer to the outstanding probe');
    assert.ok(p.maybeDecrTo(10, 4));
    assert.equal(p.next, 5);
    assert.ok(p.maybeDecrTo(4, 0));
    assert.equal(p.next, 3);
  });

  it('after a snapshot, probing starts just after it', () => {
    const p = new Progress(3, false, 8, 1 << 20);
    p.becomeSnapshot(40);
    assert.ok(p.isPaused());
    p.becomeProbe();
    assert.equal(p.next, 41);
  });
});
