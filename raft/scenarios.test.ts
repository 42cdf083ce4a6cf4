// The classic Raft scenarios, as stories on a synchronous cluster (raft/sim/harness.ts). The
// harness runs the simulator's safety checker after every step, so every story also checks
// election safety, log matching, leader completeness and state machine safety throughout.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfChangeType } from './confchange.js';
import { ELECTION_TICKS, HEARTBEAT_TICKS } from './config.js';
import type { Message } from './message.js';
import { MessageType } from './message.js';
import { SeededRandom } from './prng.js';
import { StateType } from './raft.js';
import { Harness, payload, storageWithLog } from './sim/harness.js';
import type { NodeId } from './types.js';

function electedCluster(n: number, config = {}): Harness {
  const ids: NodeId[] = [];
  for (let i = 1; i <= n; i++) ids.push(i);
  const h = new Harness(ids, { config });
  h.campaign(1);
  assert.equal(h.leader(), 1);
  return h;
}

function committed(h: Harness, id: NodeId): number {
  return h.raft(id).log.committed;
}

/**
 * Two heartbeat rounds of the leader `id`: they tell followers holding every entry the commit index,
 * which no append of its own carries (replication.ts sendAppendsTo). The first round skips a
 * follower that was sent an append since the round before (bcastHeartbeat); the second reaches it.
 */
function heartbeats(h: Harness, id: NodeId): void {
  h.tick(id, 2 * HEARTBEAT_TICKS);
}

/** Ticks every live node until `pred` holds; fails after `maxTicks`. */
function tickUntil(h: Harness, pred: () => boolean, maxTicks: number, what: string): number {
  for (let t = 0; t < maxTicks; t++) {
    if (pred()) return t;
    h.tickAll(1);
  }
  assert.ok(pred(), `${what} within ${maxTicks} ticks`);
  return maxTicks;
}

describe('Raft paper, Figure 7: a new leader brings every kind of follower log in line with its own', () => {
  const leaderLog = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
  const followers: Record<string, number[]> = {
    '(a) missing one entry': [1, 1, 1, 4, 4, 5, 5, 6, 6],
    '(b) missing many entries': [1, 1, 1, 4],
    '(c) one extra uncommitted entry of term 6': [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
    '(d) extra entries of term 7': [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
    '(e) missing entries and extra entries of term 4': [1, 1, 1, 4, 4, 4, 4],
    '(f) extra entries of terms 2 and 3': [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
  };
  for (const [name, flog] of Object.entries(followers)) {
    it(`follower ${name}`, () => {
      const conf = { voters: [1, 2, 3], learners: [] };
      const storages = new Map([
        [1, storageWithLog(conf, leaderLog, 7)],
        [2, storageWithLog(conf, flog, flog[flog.length - 1]!)],
        [3, storageWithLog(conf, leaderLog, 7)],
      ]);
      const h = new Harness([1, 2, 3], { storages });
      h.recordDelivered = true;
      h.campaign(1);
      assert.equal(h.leader(), 1);
      assert.equal(h.raft(1).term, 8);
      // The leader's log plus its no-op of term 8; the follower's extra entries are gone.
      const expected = [...leaderLog, 8].map((t, i) => `${i + 1}:${t}`).join(' ');
      assert.equal(h.logOf(1), expected);
      assert.equal(h.logOf(2), expected);
      heartbeats(h, 1);
      assert.equal(committed(h, 2), 11);
      // Fast back-off: the conflict hint skips whole terms, so few rejections are needed.
      const rejects = h.delivered.filter((m) => m.type === MessageType.AppResp && m.reject && m.from === 2).length;
      assert.ok(rejects <= 2, `at most 2 rejections with conflict hints, got ${rejects}`);
    });
  }
});

describe('Raft paper, Figure 8: a leader never commits an entry of an earlier term by counting replicas', () => {
  it('the term-2 entry replicated on a majority by the term-4 leader is not committed, and is safely overwritten', () => {
    const h = new Harness([1, 2, 3, 4, 5], { config: { preVote: false, checkQuorum: false, maxSizePerMsgBytes: 1 } });
    // (a) S1 leads term 2; its entry at index 2 reaches only S2.
    h.filter = (m) => m.type === MessageType.App && m.from === 1 && m.to >= 3 && m.entries.length > 0;
    h.campaign(1);
    assert.equal(h.raft(1).term, 2);
    assert.equal(h.logOf(2), '2:2');
    assert.equal(committed(h, 1), 1);
    // (b) S1 crashes; S5 wins term 3 with S3 and S4 and appends index 2 of term 3 (not replicated).
    h.crash(1);
    h.filter = (m) => m.type === MessageType.App && m.from === 5;
    h.campaign(5);
    assert.equal(h.leader(), 5);
    assert.equal(h.raft(5).term, 3);
    assert.equal(h.raft(5).log.term(2), 3);
    h.crash(5);
    // (c) S1 restarts and wins term 4 (after losing term 3, where S3 and S4 already voted).
    h.restart(1);
    h.filter = undefined;
    // Strip every term-4 entry from S1's appends: the old entry 2/t2 reaches S3, the new one does not.
    h.intercept = (m) =>
      m.type === MessageType.App && m.from === 1 ? { ...m, entries: m.entries.filter((e) => e.term !== 4) } : m;
    h.campaign(1);
    if (h.leader() !== 1) h.campaign(1);
    assert.equal(h.leader(), 1);
    assert.equal(h.raft(1).term, 4);
    assert.equal(h.raft(3).log.term(2), 2, 'S3 now holds 2/t2: a majority (S1, S2, S3) has it');
    assert.equal(committed(h, 1), 1, 'yet the term-4 leader does not commit it (Figure 8 rule)');
    // (d) S1 crashes; S5 (last term 3) wins term 5 and overwrites index 2 everywhere: allowed,
    // because 2/t2 was never committed. The checker would fail the test had it been.
    h.crash(1);
    h.intercept = undefined;
    h.restart(5);
    h.campaign(5); // term 4: S2, S3 and S4 already voted for S1 in term 4
    if (h.leader() !== 5) h.campaign(5); // term 5
    assert.equal(h.leader(), 5);
    assert.equal(h.raft(5).term, 5);
    for (const id of [2, 3, 4, 5]) assert.equal(h.raft(id).log.term(2), 3, `node ${id} has 2/t3`);
    assert.ok(committed(h, 5) >= 3);
  });

  it('the rule at unit level: an ack of an old-term entry does not advance commit, an ack of a current-term entry does', () => {
    const conf = { voters: [1, 2, 3], learners: [] };
    const storages = new Map([
      [1, storageWithLog(conf, [1, 2], 3)],
      [2, storageWithLog(conf, [1], 3)],
      [3, storageWithLog(conf, [1], 3)],
    ]);
    const h = new Harness([1, 2, 3], { storages, config: { preVote: false } });
    h.filter = (m) => m.type === MessageType.App; // keep replication under manual control
    h.campaign(1);
    assert.equal(h.raft(1).term, 4);
    const r = h.raft(1);
    const ack = (from: NodeId, index: number): Message => ({
      type: MessageType.AppResp,
      from,
      to: 1,
      term: 4,
      logTerm: 0,
      index,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
      snapshot: undefined,
      context: '',
    });
    h.node(1).r.step(ack(2, 2));
    assert.equal(r.log.committed, 0, 'index 2 (term 2) is on a majority but not committed');
    h.node(1).r.step(ack(2, 3));
    assert.equal(r.log.committed, 3, 'index 3 (term 4) commits, and index 2 with it');
  });
});

describe('the commit index reaches followers with the next append or heartbeat', () => {
  it('a commit sends no append of its own: the next append carries it, or the next heartbeat', () => {
    const h = electedCluster(3);
    heartbeats(h, 1);
    h.recordDelivered = true;
    const first = h.propose(1, payload('first'));
    assert.ok(first.ok);
    assert.equal(committed(h, 1), first.index, 'the leader committed it (both followers hold it)');
    const apps = h.delivered.filter((m) => m.type === MessageType.App);
    assert.equal(apps.length, 2, 'one append per follower, with the entry');
    assert.ok(apps.every((m) => m.entries.length === 1));
    assert.equal(h.delivered.filter((m) => m.type === MessageType.AppResp).length, 2, 'one answer each');
    assert.ok(committed(h, 2) < first.index && committed(h, 3) < first.index, 'followers not told yet');
    // The next proposal's append carries the earlier commit.
    const second = h.propose(1, payload('second'));
    assert.ok(second.ok);
    assert.equal(committed(h, 2), first.index);
    assert.equal(h.node(3).appliedIndex, first.index);
    // The next heartbeat round skips followers sent an append since the round before ...
    h.delivered = [];
    h.tick(1, HEARTBEAT_TICKS);
    assert.equal(h.delivered.length, 0, 'no heartbeat: the appends just sent did its work');
    assert.equal(committed(h, 2), first.index);
    // ... and the round after, with nothing sent in between, carries the commit index.
    h.tick(1, HEARTBEAT_TICKS);
    assert.equal(committed(h, 2), second.index);
    assert.equal(h.node(3).appliedIndex, second.index);
    assert.deepEqual(
      h.delivered.filter((m) => m.from === 1).map((m) => MessageType[m.type]),
      ['Heartbeat', 'Heartbeat'],
      'a heartbeat each, no empty append',
    );
  });

  it('a heartbeat round waiting for a ReadIndex acknowledgement goes to every follower', () => {
    const h = electedCluster(3);
    heartbeats(h, 1);
    assert.ok(h.propose(1, payload('x')).ok);
    // The followers' answers are lost: the read waits, and an append goes out after its heartbeats.
    h.cutOneWay(2, 1);
    h.cutOneWay(3, 1);
    assert.ok(h.node(1).r.readIndex('read-1').ok);
    h.stabilize();
    assert.ok(h.propose(1, payload('y')).ok);
    h.heal();
    h.recordDelivered = true;
    h.tick(1, HEARTBEAT_TICKS);
    const beats = h.delivered.filter((m) => m.type === MessageType.Heartbeat && m.from === 1);
    assert.deepEqual(beats.map((m) => [m.to, m.context]).sort(), [
      [2, 'read-1'],
      [3, 'read-1'],
    ]);
  });

  it('a follower whose appends were lost is sent them again once it acknowledged nothing between two heartbeats', () => {
    const h = electedCluster(3);
    heartbeats(h, 1);
    assert.ok(h.propose(1, payload('acknowledged')).ok);
    h.cutOneWay(1, 3);
    const r = h.propose(1, payload('lost'));
    assert.ok(r.ok);
    assert.equal(committed(h, 1), r.index, 'committed with node 2');
    h.heal();
    h.recordDelivered = true;
    // Round 1 skips it (an append went to it since the round before); in round 2 it answers a
    // heartbeat having acknowledged an entry since its last answer, so no append yet; round 3 sends.
    heartbeats(h, 1);
    assert.equal(h.raft(3).log.lastIndex(), r.index - 1, 'it acknowledged an entry since its last heartbeat');
    assert.ok(!h.delivered.some((m) => m.type === MessageType.App && m.to === 3), 'so no append yet');
    h.tick(1, HEARTBEAT_TICKS);
    assert.equal(h.raft(3).log.lastIndex(), r.index, 'nothing since: the append goes with the next heartbeat');
    assert.equal(committed(h, 3), r.index);
    assert.equal(h.node(3).appliedIndex, r.index);
  });
});

describe('partitions', () => {
  it('a leader partitioned away keeps nothing it accepted; the majority elects a new leader', () => {
    const h = electedCluster(5);
    h.isolate(1);
    const lost = h.propose(1, payload('lost'));
    assert.ok(lost.ok);
    tickUntil(h, () => h.leader() !== undefined && h.leader() !== 1, 10 * ELECTION_TICKS, 'a new leader among 2..5');
    const newLeader = h.leader()!;
    assert.ok(h.raft(newLeader).term > h.raft(1).term || h.raft(1).state !== StateType.Leader);
    const kept = h.propose(newLeader, payload('kept'));
    assert.ok(kept.ok);
    assert.ok(committed(h, newLeader) >= kept.index);
    h.heal();
    tickUntil(
      h,
      () => h.logOf(1) === h.logOf(newLeader) && committed(h, 1) === committed(h, newLeader),
      5 * ELECTION_TICKS,
      'node 1 converges',
    );
    assert.notEqual(h.raft(1).state, StateType.Leader);
    assert.ok(
      !h.node(1).applied.some((e) => new TextDecoder().decode(e.data) === 'lost'),
      'the partitioned proposal was never applied',
    );
  });

  it("a node rejoining with a stale long log is truncated to the leader's, in a few round trips", () => {
    const h = electedCluster(3);
    h.isolate(1);
    for (let i = 0; i < 50; i++) assert.ok(h.propose(1, payload(`stale-${i}`)).ok);
    const staleLast = h.raft(1).log.lastIndex();
    for (let t = 0; t < 10 * ELECTION_TICKS && (h.leader() === undefined || h.leader() === 1); t++) {
      h.tick(2);
      h.tick(3);
    }
    const l = h.leader()!;
    assert.notEqual(l, 1);
    for (let i = 0; i < 5; i++) assert.ok(h.propose(l, payload(`new-${i}`)).ok);
    h.heal();
    h.recordDelivered = true;
    tickUntil(h, () => h.logOf(1) === h.logOf(l), 5 * ELECTION_TICKS, 'node 1 converges');
    assert.ok(h.raft(1).log.lastIndex() < staleLast, 'the stale suffix was truncated');
    const rejects = h.delivered.filter((m) => m.type === MessageType.AppResp && m.reject && m.from === 1).length;
    assert.ok(rejects <= 3, `fast back-off: ${rejects} rejections for a 50-entry conflict`);
  });

  it('repeated elections under 30% message loss each elect one leader and lose nothing committed', () => {
    const h = electedCluster(5);
    const rng = new SeededRandom(42);
    h.filter = () => rng.chance(0.3);
    for (let round = 0; round < 8; round++) {
      const old = h.leader();
      if (old !== undefined) h.crash(old);
      tickUntil(h, () => h.leader() !== undefined, 40 * ELECTION_TICKS, `round ${round}: a leader under loss`);
      h.propose(h.leader()!, payload(`round-${round}`));
      if (old !== undefined) h.restart(old);
    }
    h.heal();
    tickUntil(
      h,
      () => {
        const l = h.leader();
        return (
          l !== undefined &&
          [1, 2, 3, 4, 5].every((id) => h.logOf(id) === h.logOf(l) && committed(h, id) === committed(h, l))
        );
      },
      20 * ELECTION_TICKS,
      'all five logs converge after the loss stops',
    );
  });
});

describe('snapshots', () => {
  it('a node that missed everything catches up from a snapshot streamed in chunks', () => {
    const h = electedCluster(3);
    h.crash(3);
    for (let i = 0; i < 30; i++) assert.ok(h.propose(1, payload(`e${i}`)).ok);
    h.compact(1);
    h.compact(2);
    assert.ok(h.raft(1).log.firstIndex() > 10, 'the leader compacted its log');
    h.restart(3);
    h.recordDelivered = true;
    tickUntil(
      h,
      () => h.node(3).appliedIndex === h.node(1).appliedIndex,
      5 * ELECTION_TICKS,
      'node 3 applies everything',
    );
    assert.ok(
      h.delivered.some((m) => m.type === MessageType.Snap && m.to === 3),
      'InstallSnapshot was used',
    );
    assert.equal(h.node(3).state, h.node(1).state, 'same state machine state');
    // The follower keeps working after the snapshot: new entries replicate normally.
    const r = h.propose(1, payload('after'));
    assert.ok(r.ok);
    heartbeats(h, 1);
    assert.equal(h.node(3).appliedIndex, r.index);
  });
});

describe('elections that must not be disrupted', () => {
  it('a removed node that keeps timing out does not disrupt the cluster', () => {
    const h = electedCluster(3);
    h.isolate(3);
    const rm = h.node(1).r.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 3 });
    assert.ok(rm.ok);
    h.stabilize();
    assert.deepEqual(h.raft(1).conf.voters, [1, 2]);
    h.heal();
    const term = h.raft(1).term;
    const term3 = h.raft(3).term;
    h.tickAll(20 * ELECTION_TICKS);
    assert.equal(h.leader(), 1);
    assert.equal(h.raft(1).term, term, "the leader's term did not move");
    assert.equal(h.raft(3).term, term3, 'pre-vote kept the removed node from raising its term');
    assert.ok(h.propose(1, payload('still-works')).ok);
    heartbeats(h, 1);
    assert.equal(committed(h, 2), h.raft(1).log.lastIndex());
  });

  it('pre-vote: a node back from a partition does not depose a healthy leader', () => {
    const h = electedCluster(3);
    const term = h.raft(1).term;
    h.isolate(3);
    for (let i = 0; i < 5 * ELECTION_TICKS; i++) h.tick(3);
    assert.equal(h.raft(3).term, term, 'pre-candidates do not raise their term');
    h.heal();
    h.tickAll(3 * ELECTION_TICKS);
    assert.equal(h.leader(), 1);
    assert.equal(h.raft(1).term, term);
  });

  it('without pre-vote and check-quorum, the same rejoin does depose the leader (what pre-vote prevents)', () => {
    const h = electedCluster(3, { preVote: false, checkQuorum: false });
    const term = h.raft(1).term;
    h.isolate(3);
    for (let i = 0; i < 5 * ELECTION_TICKS; i++) h.tick(3);
    assert.ok(h.raft(3).term > term);
    h.heal();
    tickUntil(h, () => h.raft(1).term > term, 3 * ELECTION_TICKS, 'the healthy leader forced into a new term');
  });

  it('check-quorum: a leader that cannot hear a quorum steps down within two election timeouts', () => {
    const h = electedCluster(3);
    h.isolate(1);
    // The first check after the partition still sees the answers from before it; the second fails.
    for (let i = 0; i < 2 * ELECTION_TICKS; i++) h.tick(1);
    assert.equal(h.raft(1).state, StateType.Follower);
    const res = h.node(1).r.propose(payload('x'));
    assert.ok(!res.ok && res.error.reason === 'not-leader');
  });
});

describe('leadership transfer', () => {
  it('hands leadership to an up-to-date follower at once', () => {
    const h = electedCluster(3);
    const term = h.raft(1).term;
    assert.ok(h.node(1).r.transferLeader(2).ok);
    h.stabilize();
    assert.equal(h.leader(), 2);
    assert.equal(h.raft(2).term, term + 1);
    assert.equal(h.raft(1).lead, 2);
  });

  it('a lagging transferee is caught up first; a follower can ask too', () => {
    const h = electedCluster(3);
    h.isolate(3);
    for (let i = 0; i < 5; i++) h.propose(1, payload(`p${i}`));
    h.heal();
    assert.ok(h.node(2).r.transferLeader(3).ok, 'a follower forwards the request to the leader');
    h.stabilize();
    assert.equal(h.leader(), 3);
    assert.ok(h.raft(3).log.lastIndex() >= 7);
  });

  it('proposals are refused while a transfer is pending, and the transfer is abandoned after an election timeout', () => {
    const h = electedCluster(3);
    h.filter = (m) => m.type === MessageType.TimeoutNow;
    h.node(1).r.transferLeader(2);
    h.stabilize();
    const refused = h.node(1).r.propose(payload('x'));
    assert.ok(!refused.ok && refused.error.reason === 'transfer-in-progress');
    h.tickAll(ELECTION_TICKS);
    assert.equal(h.leader(), 1);
    assert.ok(h.node(1).r.propose(payload('y')).ok);
  });
});

describe('ReadIndex', () => {
  it('a leader read is safe at the commit index once a quorum answers the heartbeat', () => {
    const h = electedCluster(3);
    for (let i = 0; i < 3; i++) h.propose(1, payload(`w${i}`));
    assert.ok(h.node(1).r.readIndex('read-1').ok);
    h.stabilize();
    assert.deepEqual(h.node(1).readStates, [{ index: committed(h, 1), ctx: 'read-1' }]);
  });

  it('a follower read is forwarded to the leader and answered with an index covering every earlier write', () => {
    const h = electedCluster(3);
    const w = h.propose(1, payload('w'));
    assert.ok(w.ok);
    assert.ok(h.node(2).r.readIndex('read-2').ok);
    h.stabilize();
    assert.equal(h.node(2).readStates.length, 1);
    assert.ok(h.node(2).readStates[0]!.index >= w.index);
  });

  it('a deposed leader cannot answer a read (it would be stale)', () => {
    const h = electedCluster(3);
    h.isolate(1);
    h.node(1).r.readIndex('stale');
    h.stabilize();
    for (let t = 0; t < 10 * ELECTION_TICKS && (h.leader() === undefined || h.leader() === 1); t++) {
      h.tick(2);
      h.tick(3);
    }
    const l = h.leader()!;
    h.propose(l, payload('newer write'));
    h.heal();
    h.tickAll(3 * ELECTION_TICKS);
    assert.deepEqual(h.node(1).readStates, [], 'no read state for the isolated leader');
  });

  it('lease-based reads (opt-in) are answered from the leader lease, without a heartbeat round', () => {
    const h = electedCluster(3, { readOnlyOption: 'lease-based' });
    h.propose(1, payload('w'));
    h.filter = (m) => m.type === MessageType.Heartbeat;
    h.node(1).r.readIndex('lease');
    h.stabilize();
    assert.deepEqual(h.node(1).readStates, [{ index: committed(h, 1), ctx: 'lease' }]);
  });

  it('a read on a node that knows no leader is refused with not-leader', () => {
    const h = new Harness([1, 2, 3]);
    const res = h.node(2).r.readIndex('x');
    assert.ok(!res.ok && res.error.reason === 'not-leader' && res.error.leaderHint === 0);
  });
});

describe('membership', () => {
  it('a learner catches up without voting, then is promoted to voter', () => {
    const h = electedCluster(3);
    for (let i = 0; i < 10; i++) h.propose(1, payload(`e${i}`));
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 }).ok);
    h.stabilize();
    h.addNode(4);
    h.tickAll(2);
    assert.equal(h.node(4).appliedIndex, h.node(1).appliedIndex, 'the learner caught up');
    assert.deepEqual(h.raft(1).conf, { voters: [1, 2, 3], learners: [4] });
    // A learner neither counts for commit nor campaigns.
    h.isolate(4);
    assert.ok(h.propose(1, payload('without-learner')).ok);
    assert.equal(committed(h, 1), h.raft(1).log.lastIndex());
    const term4 = h.raft(4).term;
    for (let i = 0; i < 5 * ELECTION_TICKS; i++) h.tick(4);
    assert.equal(h.raft(4).term, term4);
    assert.equal(h.raft(4).state, StateType.Follower);
    h.heal();
    h.tickAll(2);
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 4 }).ok);
    h.stabilize();
    for (const id of [1, 2, 3, 4]) assert.deepEqual(h.raft(id).conf, { voters: [1, 2, 3, 4], learners: [] });
    // Now 3 of 4 are needed: with node 2 down, 1, 3 and 4 still commit.
    h.crash(2);
    const r = h.propose(1, payload('quorum-of-4'));
    assert.ok(r.ok);
    assert.equal(committed(h, 1), r.index);
  });

  it('a 3-node cluster replaces a dead node without downtime', () => {
    const h = electedCluster(3);
    h.crash(3);
    const step = (label: string): void => {
      const r = h.propose(1, payload(label));
      assert.ok(r.ok, label);
      assert.equal(committed(h, 1), r.index, `${label} commits`);
    };
    step('with node 3 dead');
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 3 }).ok);
    h.stabilize();
    assert.deepEqual(h.raft(1).conf.voters, [1, 2]);
    step('after removing node 3');
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 }).ok);
    h.stabilize();
    h.addNode(4);
    h.tickAll(2);
    step('while node 4 learns');
    heartbeats(h, 1);
    assert.equal(h.node(4).appliedIndex, h.node(1).appliedIndex);
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 4 }).ok);
    h.stabilize();
    assert.deepEqual(h.raft(1).conf.voters, [1, 2, 4]);
    step('after promoting node 4');
    h.crash(2);
    step('with node 2 down too: nodes 1 and 4 are a quorum of {1,2,4}');
  });

  it('a 2-node cluster that removes its leader: the node left learns the commit at once and leads alone', () => {
    const h = electedCluster(2);
    heartbeats(h, 1);
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.RemoveNode, nodeId: 1 }).ok);
    h.stabilize();
    assert.notEqual(h.raft(1).state, StateType.Leader, 'the leader stepped down once it applied its removal');
    assert.deepEqual(h.raft(2).conf.voters, [2], 'node 2 applied the removal without another heartbeat');
    h.crash(1);
    tickUntil(h, () => h.leader() === 2, 10 * ELECTION_TICKS, 'node 2 leads alone');
    const r = h.propose(2, payload('alone'));
    assert.ok(r.ok);
    assert.equal(committed(h, 2), r.index);
  });

  it('only one membership change may be pending at a time', () => {
    const h = electedCluster(3);
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 }).ok);
    const second = h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 5 });
    assert.ok(!second.ok && second.error.reason === 'conf-change-pending');
    h.stabilize();
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 5 }).ok);
  });

  it('an invalid membership change is refused with the reason', () => {
    const h = electedCluster(3);
    const r = h.node(1).r.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 2 });
    assert.ok(!r.ok && r.error.reason === 'invalid-conf-change');
    assert.match(r.error.message, /already a voter/);
  });
});

describe('proposals on a follower', () => {
  it("are refused with not-leader and the leader's id", () => {
    const h = electedCluster(3);
    const r = h.node(2).r.propose(payload('x'));
    assert.ok(!r.ok);
    assert.equal(r.error.reason, 'not-leader');
    assert.equal(r.error.leaderHint, 1);
    assert.match(r.error.message, /the leader is node 1/);
  });

  it('before any election, say that no leader is known', () => {
    const h = new Harness([1, 2, 3]);
    const r = h.node(1).r.propose(payload('x'));
    assert.ok(!r.ok && r.error.leaderHint === 0);
    assert.match(r.error.message, /no leader is known/);
  });
});

describe('a single-node cluster', () => {
  it('elects itself and commits once its own log is durable', () => {
    const h = new Harness([1]);
    h.campaign(1);
    assert.equal(h.leader(), 1);
    const r = h.propose(1, payload('solo'));
    assert.ok(r.ok);
    assert.equal(committed(h, 1), r.index);
    assert.equal(h.node(1).appliedIndex, r.index);
  });
});
