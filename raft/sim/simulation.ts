// The deterministic cluster simulator. One seed fixes everything: the cluster size, the fault
// schedule, every network delay, drop, duplicate and partition, crashes and restarts, membership
// changes, leadership transfers, client proposals and reads. The real core (RawNode) runs unchanged;
// the simulator plays the caller exactly as the daemon will: persist, then send, then apply, then
// advance. A crash loses everything not yet persisted. Safety is checked after every step
// (checker.ts); liveness once the faults heal.
import { ConfChangeType, decodeConfChange, describeConf } from '../confchange.js';
import { defaultConfig } from '../config.js';
import { RaftInvariantError } from '../errors.js';
import type { Message } from '../message.js';
import { MessageType, describeMessage } from '../message.js';
import { SeededRandom } from '../prng.js';
import { StateType } from '../raft.js';
import type { Ready } from '../rawnode.js';
import { RawNode } from '../rawnode.js';
import type { SnapshotChunk } from '../snapshot-chunks.js';
import { SnapshotAssembler, splitSnapshot } from '../snapshot-chunks.js';
import { MemoryStorage } from '../storage.js';
import type { ConfState, Entry, NodeId } from '../types.js';
import { EntryType, NONE } from '../types.js';
import { SafetyChecker, SimViolation, chainHash, storageTerm } from './checker.js';
import { EventQueue } from './event-queue.js';

/** Virtual milliseconds per Raft tick. */
export const SIM_TICK_MS = 10;
/** A node's tick interval is SIM_TICK_MS ± this (clock rate skew between nodes). */
export const SIM_TICK_SKEW_MS = 2;
/** Ticks per election timeout in the simulator (the real timeout is 1x-2x this). */
export const SIM_ELECTION_TICKS = 10;
/** Bytes per snapshot chunk in the simulator: small, so that every snapshot takes several. */
export const SIM_SNAPSHOT_CHUNK_BYTES = 64;
/** Virtual time with faults injected before everything heals: drawn per seed in this range. */
export const SIM_CHAOS_MS_MIN = 1_000;
export const SIM_CHAOS_MS_MAX = 6_000;
/** After healing: a leader must be elected and a proposal committed within this virtual time. */
export const SIM_LIVENESS_BOUND_MS = 6_000;
/** After healing: every member must have applied that proposal within this virtual time. Longer,
 * because a learner added late may have to catch up hundreds of entries through the smallest flow
 * control window the simulator draws (1 message of 64 bytes in flight). */
export const SIM_CATCH_UP_BOUND_MS = 30_000;
/** Added to those bounds per entry of backlog when the probe is accepted (entries the quorum, or
 * the slowest member, still has to receive): with the smallest limits drawn (one entry per
 * MsgApp, a window of one) a follower receives about one entry per round trip. */
export const SIM_BACKLOG_MS_PER_ENTRY = 50;
/** Node ids ever used in one run (initial voters plus additions). */
export const SIM_NODE_IDS_MAX = 9;
/** Probability that a newly elected leader crashes within 40 ms (during the chaos phase). */
export const SIM_NEW_LEADER_CRASH_CHANCE = 0.15;
/** Trace lines kept for a failure report. */
export const SIM_TRACE_LINES_MAX = 400;
/** Hard cap on processed events per seed (a livelock would otherwise run forever). */
export const SIM_EVENTS_MAX = 2_000_000;

type SimEvent =
  | { kind: 'tick'; node: NodeId; inc: number }
  | { kind: 'deliver'; msg: Message }
  | { kind: 'chunk'; chunk: SnapshotChunk }
  | { kind: 'persist'; node: NodeId; inc: number }
  | { kind: 'snap-status'; leader: NodeId; inc: number; to: NodeId; ok: boolean }
  | { kind: 'chaos' }
  | { kind: 'crash'; node: NodeId; inc: number }
  | { kind: 'client' }
  | { kind: 'heal' }
  | { kind: 'liveness' };

class SimNode {
  raw: RawNode | undefined = undefined;
  alive = false;
  inc = 0;
  outstanding: Ready | undefined = undefined;
  assembler = new SnapshotAssembler();
  /** The simulated state machine: applied index and a hash chain of everything applied. */
  smApplied = 0;
  smState = 0;
  /** Commit index already reported to the checker. */
  checkedCommit = 0;
  lastState = StateType.Follower;
  lastTerm = 0;
  /** This node's tick interval: clocks run at slightly different rates. */
  tickMs = SIM_TICK_MS;
  constructor(
    readonly id: NodeId,
    /** The durable state: written only when a Ready is persisted, kept across crashes. */
    readonly storage: MemoryStorage,
  ) {}
}

export interface SimOptions {
  readonly seed: number;
  readonly trace?: boolean;
  readonly chaosMs?: number;
}

export interface SimStats {
  events: number;
  virtualMs: number;
  elections: number;
  committed: number;
  crashes: number;
  confChanges: number;
  transfers: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  reads: number;
}

export interface SimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly error: Error | undefined;
  readonly trace: readonly string[];
  readonly stats: SimStats;
}

function encodeSmSnapshot(index: number, state: number, padding: number): Uint8Array {
  const b = new Uint8Array(8 + padding);
  const v = new DataView(b.buffer);
  v.setUint32(0, index, true);
  v.setUint32(4, state, true);
  for (let i = 0; i < padding; i++) b[8 + i] = (index + i) & 0xff;
  return b;
}

function decodeSmSnapshot(data: Uint8Array): { index: number; state: number } {
  if (data.byteLength < 8) return { index: 0, state: 0 };
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return { index: v.getUint32(0, true), state: v.getUint32(4, true) };
}

export class Simulation {
  readonly rng: SeededRandom;
  private readonly q = new EventQueue<SimEvent>();
  private now = 0;
  readonly nodes = new Map<NodeId, SimNode>();
  readonly checker = new SafetyChecker();
  private readonly traceOn: boolean;
  readonly trace: string[] = [];
  readonly stats: SimStats = {
    events: 0,
    virtualMs: 0,
    elections: 0,
    committed: 0,
    crashes: 0,
    confChanges: 0,
    transfers: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    reads: 0,
  };

  // Network faults.
  private dropRate = 0;
  private dupRate = 0;
  private maxDelayMs = 10;
  private readonly blocked = new Set<number>(); // from * 64 + to
  private healed = false;
  private readonly chaosMs: number;
  /** Most seeds run the production setting (both on); some run without one of them, for safety
   * under more disruptive election patterns. */
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;

  // Client bookkeeping.
  private proposalSeq = 0;
  private nextNodeId: NodeId;
  /** Proposals accepted by a leader: checked at the end if that leader is still in power. */
  private readonly accepted: { index: number; term: number; leader: NodeId }[] = [];
  /** ReadIndex requests: ctx → the highest committed index when the read began. */
  private readonly readsPending = new Map<string, number>();
  private readSeq = 0;

  // Liveness stage after healing.
  private liveStage: 'elect' | 'commit' | 'apply' | 'done' = 'elect';
  private liveLeader: NodeId = NONE;
  private liveTerm = 0;
  private liveIndex = 0;
  private liveRetries = 0;
  private healAt = 0;
  /** Extra time allowed for the commit and apply stages, from the backlog at the probe. */
  private commitBacklogMs = 0;
  private applyBacklogMs = 0;

  constructor(readonly opts: SimOptions) {
    this.rng = new SeededRandom(opts.seed);
    this.traceOn = opts.trace === true;
    this.chaosMs = opts.chaosMs ?? this.rng.intBetween(SIM_CHAOS_MS_MIN, SIM_CHAOS_MS_MAX);
    const mode = this.rng.intBelow(10);
    this.preVote = mode !== 8;
    this.checkQuorum = mode !== 9;
    const n = this.rng.pick([1, 3, 3, 3, 5, 5]);
    const voters: NodeId[] = [];
    for (let i = 1; i <= n; i++) voters.push(i);
    this.nextNodeId = n + 1;
    const conf: ConfState = { voters, learners: [] };
    this.log(
      `seed ${opts.seed}: ${n} voters ${describeConf(conf)} preVote=${this.preVote} checkQuorum=${this.checkQuorum}`,
    );
    this.checker.onRestored(0, 1, 0);
    for (const id of voters) {
      const node = new SimNode(id, MemoryStorage.bootstrap(conf, encodeSmSnapshot(1, 0, 0)));
      this.nodes.set(id, node);
      this.start(node);
    }
    this.maxDelayMs = this.rng.intBetween(1, 20);
    this.q.push(this.rng.intBetween(20, 100), { kind: 'chaos' });
    this.q.push(this.rng.intBetween(5, 30), { kind: 'client' });
    this.q.push(this.chaosMs, { kind: 'heal' });
  }

  private log(line: string): void {
    if (!this.traceOn) return;
    this.trace.push(`${String(this.now).padStart(6)}ms ${line}`);
  }

  // ---------------------------------------------------------------- nodes

  private start(node: SimNode): void {
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
      maxSizePerMsgBytes: this.rng.pick([1, 64, 256, 4096]),
      maxInflightMsgs: this.rng.pick([1, 4, 64]),
      maxInflightBytes: 1 << 20,
      // Small limits in some runs, so that 'overloaded' refusals and committed entries spread over
      // several Readys happen too.
      maxProposalBytes: 1024,
      maxUncommittedEntriesBytes: this.rng.pick([2048, 1 << 20]),
      maxCommittedSizePerReadyBytes: this.rng.pick([256, 1 << 20]),
      preVote: this.preVote,
      checkQuorum: this.checkQuorum,
    });
    node.raw = new RawNode(cfg, node.storage, new SeededRandom(this.rng.nextU32()));
    node.tickMs = this.rng.intBetween(SIM_TICK_MS - SIM_TICK_SKEW_MS, SIM_TICK_MS + SIM_TICK_SKEW_MS);
    node.checkedCommit = node.raw.raft.log.committed;
    node.lastState = StateType.Follower;
    node.lastTerm = node.raw.raft.term;
    this.q.push(this.now + this.rng.intBetween(1, SIM_TICK_MS), { kind: 'tick', node: node.id, inc: node.inc });
  }

  private crash(node: SimNode): void {
    this.log(`n${node.id} CRASH (unpersisted Ready lost: ${node.outstanding !== undefined})`);
    node.alive = false;
    node.raw = undefined;
    node.outstanding = undefined;
    node.inc++;
    this.stats.crashes++;
  }

  private restart(node: SimNode): void {
    this.log(
      `n${node.id} RESTART from hs=${JSON.stringify(node.storage.getHardState())} first=${node.storage.firstIndex()} last=${node.storage.lastIndex()}`,
    );
    this.start(node);
  }

  private addNode(id: NodeId): SimNode {
    const node = new SimNode(id, new MemoryStorage());
    this.nodes.set(id, node);
    this.start(node);
    return node;
  }

  /** After anything happened to a node: check it, and hand out its next Ready. */
  private afterActivity(node: SimNode): void {
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
      this.checker.onCommitted(node.id, r.log, node.checkedCommit, r.log.committed, r.term);
      node.checkedCommit = r.log.committed;
    }
    if (r.state !== node.lastState || r.term !== node.lastTerm) {
      if (r.state === StateType.Leader) {
        this.log(
          `n${node.id} becomes LEADER of term ${r.term} (last=${r.log.lastIndex()} commit=${r.log.committed}) ${describeConf(r.conf)}`,
        );
        this.checker.onLeader(node.id, r.term, r.log);
        this.stats.elections++;
        // Sometimes the new leader dies moments later, its log half replicated (Figure 8).
        if (!this.healed && this.rng.chance(SIM_NEW_LEADER_CRASH_CHANCE)) {
          this.q.push(this.now + this.rng.intBetween(0, 40), { kind: 'crash', node: node.id, inc: node.inc });
        }
      } else if (this.traceOn) {
        this.log(`n${node.id} is ${StateType[r.state]} term ${r.term} lead=${r.lead}`);
      }
      node.lastState = r.state;
      node.lastTerm = r.term;
    }
    if (node.outstanding === undefined && raw.hasReady()) {
      node.outstanding = raw.ready();
      // Usually a quick fsync, sometimes a stall during which the node keeps receiving messages.
      const diskMs = this.rng.chance(0.03) ? this.rng.intBetween(10, 60) : this.rng.intBetween(0, 2);
      this.q.push(this.now + diskMs, { kind: 'persist', node: node.id, inc: node.inc });
    }
  }

  /** The caller's side of a Ready: persist, send, apply, advance. */
  private persist(node: SimNode): void {
    const raw = node.raw!;
    const rd = node.outstanding!;
    node.outstanding = undefined;
    // 1. Persist: snapshot, entries, hard state.
    if (rd.snapshot !== undefined) node.storage.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      node.storage.append(rd.entries);
      this.checker.onPersisted(node.id, rd.entries, storageTerm(node.storage));
    }
    if (rd.hardState !== undefined) node.storage.setHardState(rd.hardState);
    // 2. Send.
    for (const m of rd.messages) this.send(m);
    // 3. Apply.
    if (rd.snapshot !== undefined) {
      const sm = decodeSmSnapshot(rd.snapshot.data);
      if (sm.index !== rd.snapshot.meta.index)
        throw new SimViolation('invariant', `snapshot data index ${sm.index} != meta ${rd.snapshot.meta.index}`);
      this.checker.onRestored(node.id, sm.index, sm.state);
      node.smApplied = sm.index;
      node.smState = sm.state;
      this.stats.snapshotsInstalled++;
      this.log(
        `n${node.id} installed snapshot ${rd.snapshot.meta.index}/t${rd.snapshot.meta.term} ${describeConf(rd.snapshot.meta.conf)}`,
      );
    }
    for (const e of rd.committedEntries) this.apply(node, raw, e);
    // 4. Reads.
    for (const rs of rd.readStates) {
      const began = this.readsPending.get(rs.ctx);
      if (began !== undefined && rs.index < began) {
        throw new SimViolation(
          'read-linearizability',
          `node ${node.id} read ${rs.ctx} at index ${rs.index}, but ${began} was committed when it began`,
        );
      }
      this.readsPending.delete(rs.ctx);
      this.stats.reads++;
      this.log(`n${node.id} read ${rs.ctx} safe at index ${rs.index}`);
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
    this.checker.onApplied(node.id, e, node.smState);
    if (e.type === EntryType.ConfChange) {
      const cc = decodeConfChange(e.data);
      const conf = raw.applyConfChange(cc);
      this.log(`n${node.id} applied ${ConfChangeType[cc.type]}(${cc.nodeId}) at ${e.index} → ${describeConf(conf)}`);
    }
  }

  // ---------------------------------------------------------------- network

  private isBlocked(from: NodeId, to: NodeId): boolean {
    return this.blocked.size > 0 && this.blocked.has(from * 64 + to);
  }

  private delay(): number {
    // Mostly short, sometimes a long spike (reordering).
    if (!this.healed && this.rng.chance(0.03)) return this.rng.intBetween(this.maxDelayMs, this.maxDelayMs * 8);
    return this.rng.intBetween(1, this.maxDelayMs);
  }

  private send(m: Message): void {
    if (m.type === MessageType.Snap) {
      this.sendSnapshot(m);
      return;
    }
    if (this.isBlocked(m.from, m.to) || (this.dropRate > 0 && this.rng.chance(this.dropRate))) {
      if (this.traceOn) this.log(`drop ${describeMessage(m)}`);
      return;
    }
    this.q.push(this.now + this.delay(), { kind: 'deliver', msg: m });
    if (this.dupRate > 0 && this.rng.chance(this.dupRate))
      this.q.push(this.now + this.delay(), { kind: 'deliver', msg: m });
  }

  /** Streams a snapshot in chunks over one ordered connection; a lost chunk fails the transfer. */
  private sendSnapshot(m: Message): void {
    this.stats.snapshotsSent++;
    const chunks = splitSnapshot(m, SIM_SNAPSHOT_CHUNK_BYTES);
    const leader = this.nodes.get(m.from)!;
    let t = this.now;
    let ok = true;
    for (const c of chunks) {
      if (this.isBlocked(m.from, m.to) || (this.dropRate > 0 && this.rng.chance(this.dropRate))) {
        ok = false;
        break;
      }
      t += this.rng.intBetween(1, Math.max(1, this.maxDelayMs >> 1));
      this.q.push(t, { kind: 'chunk', chunk: c });
    }
    this.log(
      `snapshot ${m.from}->${m.to} at ${m.snapshot!.meta.index}: ${chunks.length} chunks, ${ok ? 'streamed' : 'a chunk was lost'}`,
    );
    this.q.push(t + 1, { kind: 'snap-status', leader: m.from, inc: leader.inc, to: m.to, ok });
  }

  private deliver(m: Message): void {
    const node = this.nodes.get(m.to);
    if (node === undefined || !node.alive || node.raw === undefined) return;
    if (this.isBlocked(m.from, m.to)) return;
    if (this.traceOn) this.log(`n${m.to} <- ${describeMessage(m)}`);
    node.raw.step(m);
    this.afterActivity(node);
  }

  private deliverChunk(c: SnapshotChunk): void {
    const node = this.nodes.get(c.to);
    if (node === undefined || !node.alive || node.raw === undefined) return;
    const res = node.assembler.add(c);
    if (res === undefined || typeof res === 'string') return;
    this.log(`n${c.to} <- snapshot ${res.snapshot!.meta.index}/t${res.snapshot!.meta.term} reassembled from chunks`);
    node.raw.step(res);
    this.afterActivity(node);
  }

  // ---------------------------------------------------------------- faults and clients

  private aliveNodes(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.alive) out.push(n);
    return out;
  }

  private leaders(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.alive && n.raw!.raft.state === StateType.Leader) out.push(n);
    return out;
  }

  private propose(node: SimNode): void {
    const seq = ++this.proposalSeq;
    const data = new Uint8Array(4 + this.rng.intBelow(24));
    new DataView(data.buffer).setUint32(0, seq, true);
    const res = node.raw!.propose(data);
    if (res.ok) {
      this.accepted.push({ index: res.index, term: res.term, leader: node.id });
      this.log(`n${node.id} accepted proposal #${seq} at ${res.index}/t${res.term}`);
    } else if (this.traceOn) {
      this.log(`n${node.id} refused proposal #${seq}: ${res.error.message}`);
    }
    this.afterActivity(node);
  }

  private client(): void {
    const alive = this.aliveNodes();
    if (alive.length > 0) {
      const target =
        this.rng.chance(0.7) && this.leaders().length > 0 ? this.rng.pick(this.leaders()) : this.rng.pick(alive);
      const n = this.rng.chance(0.2) ? this.rng.intBetween(2, 20) : 1;
      for (let i = 0; i < n; i++) this.propose(target);
      if (this.rng.chance(0.2)) this.readIndex(this.rng.pick(alive));
    }
    if (!this.healed) this.q.push(this.now + this.rng.intBetween(5, 40), { kind: 'client' });
  }

  private readIndex(node: SimNode): void {
    const ctx = `r${++this.readSeq}`;
    const res = node.raw!.readIndex(ctx);
    if (res.ok) this.readsPending.set(ctx, this.checker.maxCommitted);
    this.log(`n${node.id} readIndex ${ctx}: ${res.ok ? 'requested' : res.error.message}`);
    this.afterActivity(node);
  }

  private chaos(): void {
    const r = this.rng.intBelow(100);
    const all = [...this.nodes.values()];
    if (r < 6) {
      const alive = this.aliveNodes();
      if (alive.length > 0) this.crash(this.rng.pick(alive));
    } else if (r < 12) {
      // Crash a leader, often right after it was elected: old-term entries are then half
      // replicated, the situation of the paper's Figure 8.
      const ls = this.leaders();
      if (ls.length > 0) this.crash(this.rng.pick(ls));
    } else if (r < 26) {
      const dead = all.filter((n) => !n.alive);
      if (dead.length > 0) this.restart(this.rng.pick(dead));
    } else if (r < 34) {
      // Symmetric partition: a random split.
      this.blocked.clear();
      const side = new Set(all.filter(() => this.rng.chance(0.5)).map((n) => n.id));
      for (const a of all)
        for (const b of all) if (side.has(a.id) !== side.has(b.id)) this.blocked.add(a.id * 64 + b.id);
      this.log(`PARTITION {${[...side].join(',')}} | rest`);
    } else if (r < 40) {
      const a = this.rng.pick(all).id;
      const b = this.rng.pick(all).id;
      if (a !== b) {
        this.blocked.add(a * 64 + b);
        this.log(`ONE-WAY block ${a}->${b}`);
      }
    } else if (r < 50) {
      this.blocked.clear();
      this.log('network healed');
    } else if (r < 58) {
      this.dropRate = this.rng.pick([0, 0, 0.05, 0.2, 0.5]);
      this.dupRate = this.rng.pick([0, 0.05, 0.2]);
      this.maxDelayMs = this.rng.intBetween(1, 30);
      this.log(`network drop=${this.dropRate} dup=${this.dupRate} maxDelay=${this.maxDelayMs}ms`);
    } else if (r < 70) {
      this.membershipChange();
    } else if (r < 76) {
      this.transfer();
    } else if (r < 90) {
      this.compact();
    } else {
      const alive = this.aliveNodes();
      if (alive.length > 0) this.readIndex(this.rng.pick(alive));
    }
    if (!this.healed) this.q.push(this.now + this.rng.intBetween(20, 150), { kind: 'chaos' });
  }

  private membershipChange(): void {
    const ls = this.leaders();
    if (ls.length === 0) return;
    const leader = this.rng.pick(ls);
    const raw = leader.raw!;
    const conf = raw.raft.conf;
    const choice = this.rng.intBelow(4);
    let cc: { type: ConfChangeType; nodeId: NodeId } | undefined;
    if (choice === 0 && this.nextNodeId <= SIM_NODE_IDS_MAX) {
      cc = { type: ConfChangeType.AddLearner, nodeId: this.nextNodeId };
    } else if (choice === 1 && conf.learners.length > 0) {
      cc = { type: ConfChangeType.AddVoter, nodeId: this.rng.pick(conf.learners) };
    } else if (choice === 2 && conf.voters.length > 2) {
      // Prefer removing a dead voter: replacing a failed node.
      const dead = conf.voters.filter((id) => !this.nodes.get(id)?.alive);
      cc = {
        type: ConfChangeType.RemoveNode,
        nodeId: dead.length > 0 ? this.rng.pick(dead) : this.rng.pick(conf.voters),
      };
    } else if (choice === 3 && conf.learners.length > 0) {
      cc = { type: ConfChangeType.RemoveNode, nodeId: this.rng.pick(conf.learners) };
    }
    if (cc === undefined) return;
    const res = raw.proposeConfChange(cc);
    this.log(
      `n${leader.id} propose ${ConfChangeType[cc.type]}(${cc.nodeId}): ${res.ok ? `accepted at ${res.index}` : res.error.message}`,
    );
    if (res.ok) {
      this.stats.confChanges++;
      if (cc.type === ConfChangeType.AddLearner) {
        this.nextNodeId++;
        this.addNode(cc.nodeId);
      }
    }
    this.afterActivity(leader);
  }

  private transfer(): void {
    const alive = this.aliveNodes();
    if (alive.length === 0) return;
    const from = this.rng.pick(alive);
    const voters = from.raw!.raft.conf.voters;
    if (voters.length === 0) return;
    const to = this.rng.pick(voters);
    const res = from.raw!.transferLeader(to);
    this.log(`n${from.id} transferLeader(${to}): ${res.ok ? 'requested' : res.error.message}`);
    if (res.ok) this.stats.transfers++;
    this.afterActivity(from);
  }

  /** A node snapshots its state machine and compacts its log (as the daemon does periodically). */
  private compact(): void {
    const alive = this.aliveNodes().filter((n) => n.outstanding === undefined);
    if (alive.length === 0) return;
    const node = this.rng.pick(alive);
    const raw = node.raw!;
    const applied = node.smApplied;
    if (applied !== raw.raft.log.applied)
      throw new SimViolation(
        'invariant',
        `node ${node.id} sm applied ${applied} != raft applied ${raw.raft.log.applied}`,
      );
    const st = node.storage;
    if (applied <= st.snapshot().meta.index || applied > st.lastIndex()) return;
    st.createSnapshot(applied, raw.raft.conf, encodeSmSnapshot(applied, node.smState, this.rng.intBelow(300)));
    const keep = this.rng.intBelow(4);
    const to = applied - keep;
    if (to > st.firstIndex() - 1) st.compact(to);
    this.log(`n${node.id} snapshot at ${applied}, log compacted to first=${st.firstIndex()}`);
  }

  private heal(): void {
    this.healed = true;
    this.healAt = this.now;
    this.blocked.clear();
    this.dropRate = 0;
    this.maxDelayMs = Math.min(this.maxDelayMs, 10);
    this.log('HEAL: network repaired, every crashed node restarts');
    for (const n of this.nodes.values()) if (!n.alive) this.restart(n);
    this.q.push(this.now + SIM_TICK_MS, { kind: 'liveness' });
  }

  /** Drives the liveness check after healing: a leader, a committed proposal, applied everywhere. */
  private liveness(): void {
    const bound =
      this.liveStage === 'apply'
        ? SIM_CATCH_UP_BOUND_MS + this.applyBacklogMs
        : this.liveStage === 'commit'
          ? SIM_LIVENESS_BOUND_MS + this.commitBacklogMs
          : SIM_LIVENESS_BOUND_MS;
    if (this.now - this.healAt > bound) {
      const st = [...this.nodes.values()]
        .map(
          (n) =>
            `n${n.id}:${n.alive ? StateType[n.raw!.raft.state] : 'down'} t${n.raw?.raft.term} c${n.raw?.raft.log.committed} a${n.smApplied}`,
        )
        .join(' ');
      const l = this.nodes.get(this.liveLeader)?.raw?.raft;
      const prs = l === undefined ? '' : [...l.prs].map(([id, pr]) => `${id}:${pr.describe()}`).join('; ');
      throw new SimViolation(
        'liveness',
        `stage '${this.liveStage}' not done ${bound}ms after healing: ${st} | leader progress ${prs}`,
      );
    }
    const leader = this.nodes.get(this.liveLeader);
    const stillLeads =
      leader !== undefined &&
      leader.alive &&
      leader.raw!.raft.state === StateType.Leader &&
      leader.raw!.raft.term === this.liveTerm;
    if (this.liveStage !== 'elect' && !stillLeads) {
      // The leader lost power before finishing: no promise was made; elect again.
      this.liveRetries++;
      this.liveStage = 'elect';
    }
    if (this.liveStage === 'elect') {
      const ls = this.leaders().filter((n) => n.raw!.raft.isVoter(n.id));
      if (ls.length > 0) {
        const l = ls.reduce((a, b) => (a.raw!.raft.term >= b.raw!.raft.term ? a : b));
        const res = l.raw!.propose(new Uint8Array([0xfe, this.liveRetries & 0xff]));
        if (res.ok) {
          this.liveLeader = l.id;
          this.liveTerm = res.term;
          this.liveIndex = res.index;
          this.liveStage = 'commit';
          const lr = l.raw!.raft;
          const members = [...lr.conf.voters, ...lr.conf.learners];
          const minApplied = Math.min(...members.map((id) => this.nodes.get(id)?.smApplied ?? 0));
          this.commitBacklogMs = (res.index - lr.log.committed) * SIM_BACKLOG_MS_PER_ENTRY;
          this.applyBacklogMs = (res.index - minApplied) * SIM_BACKLOG_MS_PER_ENTRY;
          this.accepted.push({ index: res.index, term: res.term, leader: l.id });
          this.log(`LIVENESS: leader n${l.id} term ${res.term} accepted the probe at ${res.index}`);
        }
        this.afterActivity(l);
      }
    } else if (this.liveStage === 'commit') {
      const r = leader!.raw!.raft;
      if (r.log.committed >= this.liveIndex) {
        if (r.log.term(this.liveIndex) !== this.liveTerm && r.log.firstIndex() <= this.liveIndex) {
          throw new SimViolation(
            'liveness',
            `probe at ${this.liveIndex}/t${this.liveTerm} replaced while its leader stayed in power`,
          );
        }
        this.liveStage = 'apply';
      }
    } else if (this.liveStage === 'apply') {
      const r = leader!.raw!.raft;
      const members = [...r.conf.voters, ...r.conf.learners];
      if (members.every((id) => (this.nodes.get(id)?.smApplied ?? 0) >= this.liveIndex)) {
        this.liveStage = 'done';
        this.log(`LIVENESS: probe applied on every member ${describeConf(r.conf)}`);
        return;
      }
    }
    this.q.push(this.now + SIM_TICK_MS, { kind: 'liveness' });
  }

  /** At the end: every proposal accepted by the final leader in its term is committed. */
  private finalChecks(): void {
    const leader = this.nodes.get(this.liveLeader);
    if (leader === undefined) return;
    const r = leader.raw!.raft;
    for (const a of this.accepted) {
      // Proposals after the probe may still be in flight when the run ends: not yet a promise.
      if (a.leader !== leader.id || a.term !== r.term || a.index > this.liveIndex) continue;
      if (a.index > r.log.committed) {
        throw new SimViolation(
          'liveness',
          `proposal at ${a.index}/t${a.term} accepted by leader n${a.leader}, which stayed in power, never committed`,
        );
      }
      const t = r.log.term(a.index);
      if (t !== undefined && t !== a.term) {
        throw new SimViolation(
          'committed-entry-lost',
          `proposal at ${a.index}/t${a.term} accepted by the still-leader n${a.leader} was replaced`,
        );
      }
    }
  }

  // ---------------------------------------------------------------- loop

  run(): SimResult {
    let error: Error | undefined;
    try {
      while (this.liveStage !== 'done') {
        const item = this.q.pop();
        if (item === undefined) throw new SimViolation('liveness', 'no event left to run');
        this.now = item.timeMs;
        if (++this.stats.events > SIM_EVENTS_MAX)
          throw new SimViolation('liveness', `more than ${SIM_EVENTS_MAX} events`);
        this.handle(item.event);
      }
      this.finalChecks();
    } catch (e) {
      error = e instanceof Error ? e : new Error(String(e));
      if (error instanceof RaftInvariantError) error = new SimViolation('invariant', error.message);
      this.log(`FAILED: ${error.message}`);
    }
    this.stats.virtualMs = this.now;
    this.stats.committed = this.checker.maxCommitted;
    return { seed: this.opts.seed, ok: error === undefined, error, trace: this.trace, stats: this.stats };
  }

  private handle(ev: SimEvent): void {
    switch (ev.kind) {
      case 'tick': {
        const node = this.nodes.get(ev.node)!;
        if (!node.alive || node.inc !== ev.inc) return;
        node.raw!.tick();
        this.afterActivity(node);
        this.q.push(this.now + node.tickMs, ev);
        return;
      }
      case 'deliver':
        this.deliver(ev.msg);
        return;
      case 'chunk':
        this.deliverChunk(ev.chunk);
        return;
      case 'persist': {
        const node = this.nodes.get(ev.node)!;
        if (!node.alive || node.inc !== ev.inc || node.outstanding === undefined) return;
        this.persist(node);
        this.afterActivity(node);
        return;
      }
      case 'snap-status': {
        const node = this.nodes.get(ev.leader)!;
        if (!node.alive || node.inc !== ev.inc) return;
        node.raw!.reportSnapshot(ev.to, ev.ok);
        this.afterActivity(node);
        return;
      }
      case 'crash': {
        const node = this.nodes.get(ev.node)!;
        if (node.alive && node.inc === ev.inc && !this.healed) this.crash(node);
        return;
      }
      case 'chaos':
        if (!this.healed) this.chaos();
        return;
      case 'client':
        this.client();
        return;
      case 'heal':
        this.heal();
        return;
      case 'liveness':
        this.liveness();
        return;
    }
  }
}

/** Runs one seed. With `trace`, the result carries a readable trace of the whole run. */
export function runSeed(seed: number, trace = false): SimResult {
  return new Simulation({ seed, trace }).run();
}
