// Successor first (RaftConfig.successorFirst): when a leader dies, the voter after it in id order
// campaigns first and wins, so who leads next is known in advance (workers dial the controller after
// the lost leader in their list). Stories on the synchronous harness (raft/sim/harness.ts), whose
// safety checker runs after every step.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ELECTION_TICKS } from './config.js';
import { SUCCESSOR_FIRST_TICKS_MIN, successorOf } from './raft-core.js';
import { Harness, payload } from './sim/harness.js';
import type { NodeId } from './types.js';

/** A cluster of `ids` led by `leader`, one entry committed everywhere. */
function ledBy(ids: NodeId[], leader: NodeId, seed: number, successorFirst: boolean): Harness {
  const h = new Harness(ids, { seed, config: { successorFirst } });
  h.campaign(leader);
  assert.equal(h.leader(), leader);
  assert.ok(h.propose(leader, payload(`seed ${seed}`)).ok);
  h.tickAll(2); // heartbeats: every follower knows the leader and the commit index
  return h;
}

/** Crashes the leader and ticks the others until one leads; returns it. */
function nextLeader(h: Harness, dead: NodeId): NodeId {
  h.crash(dead);
  for (let t = 0; t < 10 * ELECTION_TICKS; t++) {
    const l = h.leader();
    if (l !== undefined && l !== dead) return l;
    h.tickAll(1);
  }
  assert.fail(`no leader ${10 * ELECTION_TICKS} ticks after node ${dead} died`);
}

describe('successor first: the voter after a dead leader campaigns first', () => {
  it('the successor is the next voter id after the leader, wrapping to the lowest', () => {
    assert.equal(successorOf(1, [1, 2, 3]), 2);
    assert.equal(successorOf(3, [1, 2, 3]), 1);
    assert.equal(successorOf(2, [5, 2, 9]), 5);
    assert.equal(successorOf(9, [5, 2, 9]), 2);
    assert.equal(successorOf(4, [1, 7]), 7, 'a leader that is no longer a voter: the next one after its id');
    assert.equal(successorOf(1, [1]), 1);
  });

  it("followers' timeouts: the successor's T + 1, the others' in [T + 3, 2T); with the option off, [T, 2T)", () => {
    const t = ELECTION_TICKS;
    assert.ok(t >= SUCCESSOR_FIRST_TICKS_MIN);
    const others = new Set<number>();
    for (let seed = 1; seed <= 40; seed++) {
      const h = ledBy([1, 2, 3, 4, 5], 3, seed, true);
      const timeout = (id: NodeId): number => h.raft(id).randomizedElectionTimeout;
      assert.equal(timeout(4), t + 1, `seed ${seed}: successor 4`);
      for (const id of [1, 2, 5]) {
        assert.ok(timeout(id) >= t + 3 && timeout(id) < 2 * t, `seed ${seed}: node ${id} drew ${timeout(id)}`);
        others.add(timeout(id));
      }
      const off = ledBy([1, 2, 3], 1, seed, false);
      for (const id of [2, 3]) {
        const d = off.raft(id).randomizedElectionTimeout;
        assert.ok(d >= t && d < 2 * t, `seed ${seed}, option off: node ${id} drew ${d}`);
      }
    }
    assert.equal(others.size, t - 3, 'the others still draw at random over their range');
  });

  it('a dead leader is followed by its successor, every seed; off, by either follower', () => {
    const winners = { on: new Set<NodeId>(), off: new Set<NodeId>() };
    for (let seed = 1; seed <= 40; seed++) {
      for (const [leader, successor] of [
        [1, 2],
        [3, 1],
      ] as const) {
        const h = ledBy([1, 2, 3], leader, seed, true);
        const next = nextLeader(h, leader);
        assert.equal(next, successor, `seed ${seed}: leader ${leader} died`);
        winners.on.add(next);
      }
      winners.off.add(nextLeader(ledBy([1, 2, 3], 1, seed, false), 1));
    }
    assert.deepEqual([...winners.off].sort(), [2, 3], 'without the option both followers win some elections');
  });

  it('a successor whose log is behind cannot win: the other follower does, one timeout later', () => {
    const h = ledBy([1, 2, 3], 1, 7, true);
    h.cutLink(1, 2); // node 2 (the successor) misses the next entries
    assert.ok(h.propose(1, payload('only 1 and 3 have this')).ok);
    h.tickAll(2);
    const behind = h.raft(2).log.lastIndex();
    assert.ok(behind < h.raft(3).log.lastIndex(), 'node 2 is behind node 3');
    const next = nextLeader(h, 1);
    assert.equal(next, 3, 'node 3 holds the committed entry node 2 lacks');
    h.tickAll(2);
    assert.equal(h.raft(2).lead, 3, 'node 2 follows node 3');
    assert.ok(h.raft(2).log.lastIndex() > behind, 'and has caught up');
  });
});
