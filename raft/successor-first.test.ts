// Successor first (RaftConfig.successorFirst): when a leader dies, the voter after it in id order
// campaigns first and wins, so who leads next is known in advance (workers dial the controller after
// the lost leader in their list). Stories on the synchronous harness (raft/sim/harness.ts), whose
// safety checker runs after every step.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ELECTION_TICKS } from './config.js';
import { MessageType } from './message.js';
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

  it('a refused successor is forgotten as soon as a leader is heard from: no hand-over later', () => {
    const h = ledBy([1, 2, 3], 1, 11, true);
    const handoff = (): NodeId => (h.raft(3) as unknown as { successorHandoff: NodeId }).successorHandoff;
    h.filter = (m) => m.to === 2 && m.type === MessageType.App && m.entries.length > 0;
    assert.ok(h.propose(1, payload('only 1 and 3 have this')).ok);
    h.tickAll(2);
    // The leader goes silent (not dead) until node 2, behind, campaigns and node 3 refuses it.
    h.filter = (m) => m.from === 1 || m.to === 1;
    for (let t = 0; t < 2 * ELECTION_TICKS && handoff() === 0; t++) h.tickAll(1);
    assert.equal(handoff(), 2, 'node 3 refused the successor for its log and noted it');
    assert.equal(h.leader(), 1, 'node 1 still leads');
    h.filter = undefined;
    h.tick(1, 2); // the leader's heartbeats reach node 3 again
    assert.equal(handoff(), 0, 'forgotten once the leader is heard from');
  });

  it('a successor whose log is behind cannot win: the other follower does, catches it up and hands over', () => {
    for (const successorFirst of [true, false]) {
      const h = ledBy([1, 2, 3], 1, 7, successorFirst);
      // Node 2 (the successor) misses the next entries, but hears the leader's heartbeats as node 3
      // does: their election timers run from the same moment, as when a leader dies mid-send.
      h.filter = (m) => m.to === 2 && m.type === MessageType.App && m.entries.length > 0;
      assert.ok(h.propose(1, payload('only 1 and 3 have this')).ok);
      h.tickAll(2);
      const behind = h.raft(2).log.lastIndex();
      assert.ok(behind < h.raft(3).log.lastIndex(), 'node 2 is behind node 3');
      h.crash(1);
      h.filter = undefined;
      const term0 = h.raft(3).term;
      const first = nextLeader(h, 1);
      if (!successorFirst) {
        assert.deepEqual([first, h.raft(3).term], [3, term0 + 1], 'off: node 3, the one with every entry, wins');
        h.tickAll(4 * ELECTION_TICKS);
        assert.equal(h.leader(), 3, 'and keeps leading: no leadership is handed over');
        continue;
      }
      // Node 3 refused node 2's vote, won the next term, caught node 2 up and handed over: node 2 leads
      // in the term after (the harness delivers every message of a tick, so both happen in one).
      assert.equal(first, 2, 'the successor leads once caught up');
      assert.equal(h.raft(2).term, term0 + 2, 'after node 3 led one term');
      assert.equal(h.raft(3).lead, 2, 'node 3 follows it');
      assert.ok(h.raft(2).log.lastIndex() > behind, 'with the entries it lacked');
      h.tickAll(4 * ELECTION_TICKS);
      assert.equal(h.leader(), 2, 'and keeps leading: nothing hands it back');
    }
  });
});
