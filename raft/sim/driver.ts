// The simulator's side of each node, played exactly as the daemon plays it: start and restart from
// durable state, crash (losing the unpersisted Ready), deliver messages and reassembled snapshots,
// check the node after every step, and handle each Ready (persist, send, apply, reads, advance).
import { ConfChangeType, decodeConfChange, describeConf } from '../confchange.js';
import { defaultConfig } from '../config.js';
import { RaftInvariantError } from '../errors.js';
import type { Message } from '../message.js';
import { describeMessage } from '../message.js';
import { SeededRandom } from '../prng.js';
import { StateType } from '../raft.js';
import { RawNode } from '../rawnode.js';
import type { SnapshotChunk } from '../snapshot-chunks.js';
import { SnapshotAssembler } from '../snapshot-chunks.js';
import { MemoryStorage } from '../storage.js';
import type { Entry, NodeId } from '../types.js';
import { EntryType } from '../types.js';
import { SimViolation, chainHash, storageTerm } from './checker.js';
import type { SimNetwork } from './network.js';
import { SIM_ELECTION_TICKS, SIM_NEW_LEADER_CRASH_CHANCE, SIM_TICK_MS, SIM_TICK_SKEW_MS } from './params.js';
import { SimNode, decodeSmSnapshot } from './sim-node.js';
import type { SimWorld } from './world.js';

/** The run's election settings: most seeds run the production setting (both on). */
export interface SimElectionMode {
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
}

export class NodeDriver {
  constructor(
    private readonly w: SimWorld,
    private readonly net: SimNetwork,
    private readonly mode: SimElectionMode,
  ) {}

  // ---------------------------------------------------------------- lifecycle

  start(node: SimNode): void {
    node.inc++;
    node.alive = true;
    node.outstanding = undefined;
    node.assembler = new SnapshotAssembler();
    const snap = node.storage.snapshot();
    const sm = decodeSmSnapshot(snap.data);
    node.smApplied = snap.meta.index;
    node.smState = sm.state;
    const cfg = defaultConfig(node.id, {
      electionTicks: SIM_ELECTION_TICKS,
      heartbeatTicks: 1,
      applied: snap.meta.index,
      // 1 byte: one entry per MsgApp, so followers acknowledge old-term entries one at a time.
      maxSizePerMsgBytes: this.w.rng.pick([1, 64, 256, 4096]),
      maxInflightMsgs: this.w.rng.pick([1, 4, 64]),
      maxInflightBytes: 1 << 20,
      // Small limits in some runs, so that 'overloaded' refusals and committed entries spread over
      // several Readys happen too.
      maxProposalBytes: 1024,
      maxUncommittedEntriesBytes: this.w.rng.pick([2048, 1 << 20]),
      maxCommittedSizePerReadyBytes: this.w.rng.pick([256, 1 << 20]),
      preVote: this.mode.preVote,
      checkQuorum: this.mode.checkQuorum,
    });
    node.raw = new RawNode(cfg, node.storage, new SeededRandom(this.w.rng.nextU32()));
    node.tickMs = this.w.rng.intBetween(SIM_TICK_MS - SIM_TICK_SKEW_MS, SIM_TICK_MS + SIM_TICK_SKEW_MS);
    node.checkedCommit = node.raw.raft.log.committed;
    node.lastState = StateType.Follower;
    node.lastTerm = node.raw.raft.term;
    this.w.q.push(this.w.now + this.w.rng.intBetween(1, SIM_TICK_MS), { kind: 'tick', node: node.id, inc: node.inc });
  }

  crash(node: SimNode): void {
    this.w.log(`n${node.id} CRASH (unpersisted Ready lost: ${node.outstanding !== undefined})`);
    node.alive = false;
    node.raw = undefined;
    node.outstanding = undefined;
    node.inc++;
    this.w.stats.crashes++;
  }

  restart(node: SimNode): void {
    this.w.log(
      `n${node.id} RESTART from hs=${JSON.stringify(node.storage.getHardState())} first=${node.storage.firstIndex()} last=${node.storage.lastIndex()}`,
    );
    this.start(node);
  }

  addNode(id: NodeId): SimNode {
    const node = new SimNode(id, new MemoryStorage());
    this.w.nodes.set(id, node);
    this.start(node);
    return node;
  }

  // ---------------------------------------------------------------- inputs

  deliver(m: Message): void {
    const node = this.w.nodes.get(m.to);
    if (node === undefined || !node.alive || node.raw === undefined) return;
    if (this.net.isBlocked(m.from, m.to)) return;
    if (this.w.traceOn) this.w.log(`n${m.to} <- ${describeMessage(m)}`);
    node.raw.step(m);
    this.afterActivity(node);
  }

  deliverChunk(c: SnapshotChunk): void {
    const node = this.w.nodes.get(c.to);
    if (node === undefined || !node.alive || node.raw === undefined) return;
    const res = node.assembler.add(c);
    if (res === undefined || typeof res === 'string') return;
    this.w.log(`n${c.to} <- snapshot ${res.snapshot!.meta.index}/t${res.snapshot!.meta.term} reassembled from chunks`);
    node.raw.step(res);
    this.afterActivity(node);
  }

  // ---------------------------------------------------------------- after each step

  /** After anything happened to a node: check it, and hand out its next Ready. */
  afterActivity(node: SimNode): void {
    const raw = node.raw;
    if (raw === undefined) return;
    const r = raw.raft;
    try {
      r.checkInvariants();
    } catch (e) {
      if (e instanceof RaftInvariantError) throw new SimViolation('invariant', `node ${node.id}: ${e.message}`);
      throw e;
    }
    if (r.log.committed > node.checkedCommit) {
      this.w.checker.onCommitted(node.id, r.log, node.checkedCommit, r.log.committed, r.term);
      node.checkedCommit = r.log.committed;
    }
    if (r.state !== node.lastState || r.term !== node.lastTerm) {
      if (r.state === StateType.Leader) {
        this.w.log(
          `n${node.id} becomes LEADER of term ${r.term} (last=${r.log.lastIndex()} commit=${r.log.committed}) ${describeConf(r.conf)}`,
        );
        this.w.checker.onLeader(node.id, r.term, r.log);
        this.w.stats.elections++;
        // Sometimes the new leader dies moments later, its log half replicated (Figure 8).
        if (!this.w.healed && this.w.rng.chance(SIM_NEW_LEADER_CRASH_CHANCE)) {
          this.w.q.push(this.w.now + this.w.rng.intBetween(0, 40), { kind: 'crash', node: node.id, inc: node.inc });
        }
      } else if (this.w.traceOn) {
        this.w.log(`n${node.id} is ${StateType[r.state]} term ${r.term} lead=${r.lead}`);
      }
      node.lastState = r.state;
      node.lastTerm = r.term;
    }
    if (node.outstanding === undefined && raw.hasReady()) {
      node.outstanding = raw.ready();
      // Usually a quick fsync, sometimes a stall during which the node keeps receiving messages.
      const diskMs = this.w.rng.chance(0.03) ? this.w.rng.intBetween(10, 60) : this.w.rng.intBetween(0, 2);
      this.w.q.push(this.w.now + diskMs, { kind: 'persist', node: node.id, inc: node.inc });
    } else if (node.outstanding !== undefined) {
      // While its disk works, a leader sends what was proposed meanwhile (as daemon/ does).
      for (const m of raw.takeAppends()) this.net.send(m);
    }
  }

  /** The caller's side of a Ready: persist, send, apply, advance. */
  persist(node: SimNode): void {
    const raw = node.raw!;
    const rd = node.outstanding!;
    node.outstanding = undefined;
    // 1. Persist: snapshot, entries, hard state.
    if (rd.snapshot !== undefined) node.storage.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      node.storage.append(rd.entries);
      this.w.checker.onPersisted(node.id, rd.entries, storageTerm(node.storage));
    }
    if (rd.hardState !== undefined) node.storage.setHardState(rd.hardState);
    // 2. Send.
    for (const m of rd.messages) this.net.send(m);
    // 3. Apply.
    if (rd.snapshot !== undefined) {
      const sm = decodeSmSnapshot(rd.snapshot.data);
      if (sm.index !== rd.snapshot.meta.index)
        throw new SimViolation('invariant', `snapshot data index ${sm.index} != meta ${rd.snapshot.meta.index}`);
      this.w.checker.onRestored(node.id, sm.index, sm.state);
      node.smApplied = sm.index;
      node.smState = sm.state;
      this.w.stats.snapshotsInstalled++;
      this.w.log(
        `n${node.id} installed snapshot ${rd.snapshot.meta.index}/t${rd.snapshot.meta.term} ${describeConf(rd.snapshot.meta.conf)}`,
      );
    }
    for (const e of rd.committedEntries) this.apply(node, raw, e);
    // 4. Reads.
    for (const rs of rd.readStates) {
      const began = this.w.readsPending.get(rs.ctx);
      if (began !== undefined && rs.index < began) {
        throw new SimViolation(
          'read-linearizability',
          `node ${node.id} read ${rs.ctx} at index ${rs.index}, but ${began} was committed when it began`,
        );
      }
      this.w.readsPending.delete(rs.ctx);
      this.w.stats.reads++;
      this.w.log(`n${node.id} read ${rs.ctx} safe at index ${rs.index}`);
    }
    // 5. Advance.
    raw.advance(rd);
  }

  private apply(node: SimNode, raw: RawNode, e: Entry): void {
    if (e.index <= node.smApplied) return;
    if (e.index !== node.smApplied + 1)
      throw new SimViolation('invariant', `node ${node.id} applies ${e.index} after ${node.smApplied}`);
    node.smState = chainHash(node.smState, e);
    node.smApplied = e.index;
    this.w.checker.onApplied(node.id, e, node.smState);
    if (e.type === EntryType.ConfChange) {
      const cc = decodeConfChange(e.data);
      const conf = raw.applyConfChange(cc);
      this.w.log(`n${node.id} applied ${ConfChangeType[cc.type]}(${cc.nodeId}) at ${e.index} → ${describeConf(conf)}`);
    }
  }
}
