// liveLeader(): the leader a node vouches for in a "not leader" answer. A follower names its leader
// only while it has heard from it within an election timeout (electionTicks ticks); a heartbeat
// makes it vouch again. Stories on the synchronous harness (raft/sim/harness.ts), whose safety
// checker runs after every step.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfChangeType } from './confchange.js';
import { ELECTION_TICKS } from './config.js';
import { StateType } from './raft.js';
import { Harness, payload } from './sim/harness.js';
import { NONE } from './types.js';

function electedCluster(): Harness {
  const h = new Harness([1, 2, 3]);
  h.campaign(1);
  assert.equal(h.leader(), 1);
  return h;
}

describe('liveLeader: the leader a node names', () => {
  it('a follower stops naming a silent leader after one election timeout; a heartbeat makes it name it again', () => {
    const h = electedCluster();
    const f = h.node(2);
    // Node 2's own election timer drawn at the top of its range: it would campaign (and forget the
    // leader) only after 2 * ELECTION_TICKS - 1 ticks; until then Raft's `lead` still names node 1.
    f.r.raft.randomizedElectionTimeout = 2 * ELECTION_TICKS - 1;
    h.isolate(1); // the leader's machine is gone: nothing from it arrives
    for (let t = 1; t < ELECTION_TICKS; t++) {
      h.tick(2);
      assert.equal(f.r.status().leaderSilentTicks, t);
      assert.equal(f.r.liveLeader(), 1, `still named after ${t} silent ticks`);
    }
    h.tick(2);
    const s = f.r.status();
    assert.deepEqual([s.state, s.lead, s.leaderSilentTicks], [StateType.Follower, 1, ELECTION_TICKS]);
    assert.equal(f.r.liveLeader(), NONE, 'not named after an election timeout of silence');
    const refused = f.r.propose(payload('x'));
    assert.ok(!refused.ok && refused.error.reason === 'not-leader');
    assert.equal(refused.error.leaderHint, NONE, 'a refused proposal names no leader either');
    assert.match(refused.error.message, /no leader is known/);

    h.heal();
    // The leader's next heartbeat reaches node 2 (its first round since the election skips node 2,
    // which was sent the election's append since the round before: replication.ts bcastHeartbeat).
    h.tick(1, 2);
    assert.equal(f.r.status().leaderSilentTicks, 0);
    assert.equal(f.r.liveLeader(), 1);
    const again = f.r.propose(payload('y'));
    assert.ok(!again.ok && again.error.leaderHint === 1);
  });

  it('the leader names itself however long it leads; its followers name it while its heartbeats arrive', () => {
    const h = electedCluster();
    h.tickAll(3 * ELECTION_TICKS);
    assert.equal(h.leader(), 1);
    for (const id of [1, 2, 3]) assert.equal(h.node(id).r.liveLeader(), 1, `node ${id}`);
    assert.equal(h.node(1).r.status().leaderSilentTicks, 0);
    assert.ok(h.node(2).r.status().leaderSilentTicks <= 1);
  });

  it('once the two others elect one of them, both name the winner', () => {
    const h = electedCluster();
    h.isolate(1);
    let ticks = 0;
    while (h.leader() === 1 && ticks < 4 * ELECTION_TICKS) {
      for (const id of [2, 3]) h.tick(id);
      ticks++;
    }
    const winner = h.leader();
    assert.ok(winner === 2 || winner === 3, `nodes 2 and 3 elected one of them (leader: ${winner})`);
    for (const id of [2, 3]) assert.equal(h.node(id).r.liveLeader(), winner, `node ${id}`);
    assert.equal(h.node(1).r.liveLeader(), 1, 'the cut-off old leader still names itself until check-quorum');
  });

  it('a follower alone, campaigning without a quorum, names no one', () => {
    const h = electedCluster();
    h.isolate(2);
    let ticks = 0;
    while (h.node(2).r.status().state === StateType.Follower && ticks < 4 * ELECTION_TICKS) {
      h.tick(2);
      ticks++;
    }
    assert.equal(h.node(2).r.status().state, StateType.PreCandidate);
    assert.equal(h.node(2).r.liveLeader(), NONE);
    assert.equal(h.node(3).r.liveLeader(), 1, 'node 3 was not ticked: it heard from node 1 just now');
  });

  it('a learner, which never campaigns, stops naming a silent leader too (Raft keeps it as lead)', () => {
    const h = electedCluster();
    assert.ok(h.node(1).r.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 }).ok);
    h.stabilize();
    h.addNode(4);
    h.tickAll(2);
    assert.equal(h.node(4).r.liveLeader(), 1, 'the learner follows node 1');
    h.isolate(1);
    h.tick(4, 5 * ELECTION_TICKS);
    const s = h.node(4).r.status();
    assert.deepEqual([s.state, s.lead], [StateType.Follower, 1], 'no campaign: Raft still has node 1 as lead');
    assert.equal(h.node(4).r.liveLeader(), NONE);
  });
});
