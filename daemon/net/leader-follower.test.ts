import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, LeaderFollower, REDIRECTS_MAX } from './leader-follower.js';

const url = (address: string): string => `ws://${address}/api`;

test('the back-off doubles from its minimum to its maximum, and starts again after a success', () => {
  const b = new Backoff(10, 50);
  assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [10, 20, 40, 50]);
  b.reset();
  assert.equal(b.next(), 10);
  b.toMax();
  assert.equal(b.next(), 50);
});

test('with a random source each delay is drawn from the upper half of the step', () => {
  const low = new Backoff(100, 1000, () => 0);
  const high = new Backoff(100, 1000, () => 1);
  assert.deepEqual([low.next(), low.next()], [50, 100]);
  assert.deepEqual([high.next(), high.next()], [100, 200]);
});

test('back-off bounds that make no sense are refused, naming them', () => {
  assert.throws(() => new Backoff(100, 10), /min <= max, got min 100 ms, max 10 ms/);
});

test('the addresses are tried in turn', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1', 'c:1'], toUrl: url });
  const tried: string[] = [];
  for (let i = 0; i < 4; i++) {
    tried.push(f.current());
    f.next(f.current());
  }
  assert.deepEqual(tried, [url('a:1'), url('b:1'), url('c:1'), url('a:1')]);
});

test('a not-leader hint is followed to the leader, even one that is not in the list', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1'], toUrl: url });
  assert.equal(f.follow(url('a:1'), 'b:1'), true);
  assert.equal(f.current(), url('b:1'));
  assert.equal(f.follow(url('b:1'), 'z:9'), true);
  assert.equal(f.current(), url('z:9'));
  assert.deepEqual(f.addresses(), ['a:1', 'b:1', 'z:9']);
});

test('no hint, or a hint back to the controller that answered, means backing off', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1'], toUrl: url });
  assert.equal(f.follow(url('a:1'), undefined), false);
  assert.equal(f.follow(url('a:1'), 'a:1'), false);
  assert.equal(f.current(), url('a:1'));
});

test(`a chain of hints is followed for ${REDIRECTS_MAX} hops, then the caller backs off; then a new chain`, () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1'], toUrl: url });
  const hops: boolean[] = [];
  for (let i = 0; i <= REDIRECTS_MAX; i++) {
    const from = f.current();
    hops.push(f.follow(from, from === url('a:1') ? 'b:1' : 'a:1'));
  }
  assert.deepEqual(hops, [...Array<boolean>(REDIRECTS_MAX).fill(true), false]);
  f.next(f.current());
  assert.equal(f.follow(f.current(), f.current() === url('a:1') ? 'b:1' : 'a:1'), true);
});

test('a leader reached ends the chain: a later hint is a first hop again', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1'], toUrl: url, redirectsMax: 1 });
  assert.equal(f.follow(url('a:1'), 'b:1'), true);
  f.reached();
  assert.equal(f.follow(url('b:1'), 'a:1'), true);
  assert.equal(f.follow(url('a:1'), 'b:1'), false, 'the second hop of a chain of at most one');
});

test('answers to requests sent before the move name the leader already dialled: not another hop', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1'], toUrl: url, redirectsMax: 1 });
  assert.equal(f.follow(url('a:1'), 'b:1'), true);
  for (let i = 0; i < 5; i++) assert.equal(f.follow(url('a:1'), 'b:1'), true);
  assert.equal(f.current(), url('b:1'));
});

test('a failure on a controller another request has moved away from does not move on from the new one', () => {
  const f = new LeaderFollower({ addresses: ['a:1', 'b:1', 'c:1'], toUrl: url });
  f.follow(url('a:1'), 'c:1');
  f.next(url('a:1'));
  assert.equal(f.current(), url('c:1'));
  f.next(url('c:1'));
  assert.equal(f.current(), url('a:1'));
});

test('a follower needs an address, and says when its owner closed it', () => {
  assert.throws(() => new LeaderFollower({ addresses: [], toUrl: url }), /no controller address given/);
  const f = new LeaderFollower({ addresses: ['a:1'], toUrl: url });
  assert.equal(f.closed, false);
  f.close();
  assert.equal(f.closed, true);
});
