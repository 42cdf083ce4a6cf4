// RawNode.takeAppends: a leader replicates what is proposed while a Ready is outstanding (its own
// fsync in progress), and still counts itself towards commitment only once advance() says durable.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from './message.js';
import { MessageType } from './message.js';
import type { Ready } from './rawnode.js';
import { Harness, payload, type HarnessNode } from './sim/harness.js';

/** What a caller does with a Ready: persist, then advance; returns its messages. */
function persist(n: HarnessNode, rd: Ready): readonly Message[] {
  if (rd.entries.length > 0) n.storage.append(rd.entries);
  if (rd.hardState !== undefined) n.storage.setHardState(rd.hardState);
  n.r.advance(rd);
  return rd.messages;
}

/** Steps `msgs` into follower `n` and handles its Ready: its answers. */
function follow(n: HarnessNode, msgs: readonly Message[]): readonly Message[] {
  for (const m of msgs) if (m.to === n.id) n.r.step(m);
  return n.r.hasReady() ? persist(n, n.r.ready()) : [];
}

describe('RawNode.takeAppends', () => {
  it('sends entries proposed during the outstanding Ready at once; the leader counts itself only once durable', () => {
    const h = new Harness([1, 2, 3]);
    h.campaign(1);
    const [leader, f2] = [h.node(1), h.node(2)];
    const base = leader.r.raft.log.lastIndex();
    assert.equal(leader.r.raft.log.committed, base);
    leader.r.propose(payload('a'));
    const rd1 = leader.r.ready(); // outstanding: `a`, its fsync "in progress"
    assert.deepEqual(
      rd1.entries.map((e) => e.index),
      [base + 1],
    );
    leader.r.propose(payload('b'));
    const early = leader.r.takeAppends();
    assert.deepEqual(early.map((m) => m.to).sort(), [2, 3]);
    for (const m of early) {
      assert.equal(m.type, MessageType.App);
      assert.deepEqual(
        m.entries.map((e) => e.index),
        [base + 2],
      );
    }
    assert.deepEqual(leader.r.takeAppends(), [], 'nothing new: nothing to send');
    // Follower 2 holds both durably; the leader has neither on disk: no majority yet.
    const acks = follow(f2, [...rd1.messages, ...early]);
    for (const m of acks) leader.r.step(m);
    assert.equal(leader.r.raft.log.committed, base, 'the leader is not counted before its fsync');
    // The leader's disk has `a`: leader + follower 2 make a majority for it, not yet for `b`.
    persist(leader, rd1);
    assert.equal(leader.r.raft.log.committed, base + 1);
    assert.deepEqual(leader.r.takeAppends(), [], 'an append carrying only the new commit index waits for the Ready');
    // `b` comes in the next Ready to persist, without a second MsgApp carrying it.
    const rd2 = leader.r.ready();
    assert.deepEqual(
      rd2.entries.map((e) => e.index),
      [base + 2],
    );
    assert.deepEqual(
      rd2.messages.filter((m) => m.type === MessageType.App),
      [],
      '`b` is not sent twice, and no append goes only to carry the new commit index (the next append or heartbeat does)',
    );
    persist(leader, rd2);
    assert.equal(leader.r.raft.log.committed, base + 2);
  });

  it('is empty on a follower, whose messages wait for its Ready', () => {
    const h = new Harness([1, 2, 3]);
    h.campaign(1);
    assert.deepEqual(h.node(2).r.takeAppends(), []);
  });
});
