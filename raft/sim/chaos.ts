// Fault injection during the chaos phase: one random fault per chaos event (crashes, often of a
// fresh leader; restarts; partitions and one-way blocks; network conditions; membership changes;
// leadership transfers; snapshots with compaction; reads), until the faults heal.
import { ConfChangeType } from '../confchange.js';
import type { NodeId } from '../types.js';
import { SimViolation } from './checker.js';
import type { NodeDriver } from './driver.js';
import type { SimNetwork } from './network.js';
import { SIM_NODE_IDS_MAX } from './params.js';
import { encodeSmSnapshot } from './sim-node.js';
import type { Workload } from './workload.js';
import type { SimWorld } from './world.js';

export class Chaos {
  constructor(
    private readonly w: SimWorld,
    private readonly net: SimNetwork,
    private readonly driver: NodeDriver,
    private readonly workload: Workload,
    /** The id the next added learner gets. */
    private nextNodeId: NodeId,
  ) {}

  chaos(): void {
    const r = this.w.rng.intBelow(100);
    const all = [...this.w.nodes.values()];
    if (r < 6) {
      const alive = this.w.aliveNodes();
      if (alive.length > 0) this.driver.crash(this.w.rng.pick(alive));
    } else if (r < 12) {
      // Crash a leader, often right after it was elected: old-term entries are then half
      // replicated, the situation of the paper's Figure 8.
      const ls = this.w.leaders();
      if (ls.length > 0) this.driver.crash(this.w.rng.pick(ls));
    } else if (r < 26) {
      const dead = all.filter((n) => !n.alive);
      if (dead.length > 0) this.driver.restart(this.w.rng.pick(dead));
    } else if (r < 34) {
      this.net.partition(all);
    } else if (r < 40) {
      this.net.blockOneWay(all);
    } else if (r < 50) {
      this.net.unblockAll();
    } else if (r < 58) {
      this.net.redraw();
    } else if (r < 70) {
      this.membershipChange();
    } else if (r < 76) {
      this.transfer();
    } else if (r < 90) {
      this.compact();
    } else {
      const alive = this.w.aliveNodes();
      if (alive.length > 0) this.workload.readIndex(this.w.rng.pick(alive));
    }
    if (!this.w.healed) this.w.q.push(this.w.now + this.w.rng.intBetween(20, 150), { kind: 'chaos' });
  }

  private membershipChange(): void {
    const ls = this.w.leaders();
    if (ls.length === 0) return;
    const leader = this.w.rng.pick(ls);
    const raw = leader.raw!;
    const conf = raw.raft.conf;
    const choice = this.w.rng.intBelow(4);
    let cc: { type: ConfChangeType; nodeId: NodeId } | undefined;
    if (choice === 0 && this.nextNodeId <= SIM_NODE_IDS_MAX) {
      cc = { type: ConfChangeType.AddLearner, nodeId: this.nextNodeId };
    } else if (choice === 1 && conf.learners.length > 0) {
      cc = { type: ConfChangeType.AddVoter, nodeId: this.w.rng.pick(conf.learners) };
    } else if (choice === 2 && conf.voters.length > 2) {
      // Prefer removing a dead voter: replacing a failed node.
      const dead = conf.voters.filter((id) => !this.w.nodes.get(id)?.alive);
      cc = {
        type: ConfChangeType.RemoveNode,
        nodeId: dead.length > 0 ? this.w.rng.pick(dead) : this.w.rng.pick(conf.voters),
      };
    } else if (choice === 3 && conf.learners.length > 0) {
      cc = { type: ConfChangeType.RemoveNode, nodeId: this.w.rng.pick(conf.learners) };
    }
    if (cc === undefined) return;
    const res = raw.proposeConfChange(cc);
    this.w.log(
      `n${leader.id} propose ${ConfChangeType[cc.type]}(${cc.nodeId}): ${res.ok ? `accepted at ${res.index}` : res.error.message}`,
    );
    if (res.ok) {
      this.w.stats.confChanges++;
      if (cc.type === ConfChangeType.AddLearner) {
        this.nextNodeId++;
        this.driver.addNode(cc.nodeId);
      }
    }
    this.driver.afterActivity(leader);
  }

  private transfer(): void {
    const alive = this.w.aliveNodes();
    if (alive.length === 0) return;
    const from = this.w.rng.pick(alive);
    const voters = from.raw!.raft.conf.voters;
    if (voters.length === 0) return;
    const to = this.w.rng.pick(voters);
    const res = from.raw!.transferLeader(to);
    this.w.log(`n${from.id} transferLeader(${to}): ${res.ok ? 'requested' : res.error.message}`);
    if (res.ok) this.w.stats.transfers++;
    this.driver.afterActivity(from);
  }

  /** A node snapshots its state machine and compacts its log (as the daemon does periodically). */
  private compact(): void {
    const alive = this.w.aliveNodes().filter((n) => n.outstanding === undefined);
    if (alive.length === 0) return;
    const node = this.w.rng.pick(alive);
    const raw = node.raw!;
    const applied = node.smApplied;
    if (applied !== raw.raft.log.applied)
      throw new SimViolation(
        'invariant',
        `node ${node.id} sm applied ${applied} != raft applied ${raw.raft.log.applied}`,
      );
    const st = node.storage;
    if (applied <= st.snapshot().meta.index || applied > st.lastIndex()) return;
    st.createSnapshot(applied, raw.raft.conf, encodeSmSnapshot(applied, node.smState, this.w.rng.intBelow(300)));
    const keep = this.w.rng.intBelow(4);
    const to = applied - keep;
    if (to > st.firstIndex() - 1) st.compact(to);
    this.w.log(`n${node.id} snapshot at ${applied}, log compacted to first=${st.firstIndex()}`);
  }
}
