// RawNode: the caller's handle on the core. The caller feeds it (tick, step, propose, ...) and
// drains it with ready()/advance(). See README.md for the exact contract.
import type { RaftConfig } from './config.js';
import type { ConfChange } from './confchange.js';
import { assert } from './errors.js';
import type { Message } from './message.js';
import { MessageType, isLocalMessage, newMessage } from './message.js';
import type { RandomSource } from './prng.js';
import type { ProgressState } from './progress.js';
import type { ProposeResult, RequestResult } from './raft.js';
import { Raft, StateType } from './raft.js';
import type { ReadState } from './readonly.js';
import type { Storage } from './storage.js';
import type { ConfState, Entry, HardState, NodeId, Snapshot } from './types.js';

/** Volatile state worth telling the caller about when it changes (who leads, our role). */
export interface SoftState {
  readonly lead: NodeId;
  readonly state: StateType;
}

/**
 * One batch of work for the caller, to be handled IN THIS ORDER:
 *  1. persist `snapshot` (if any), then `entries` (truncating any conflicting suffix), then
 *     `hardState` (if any) — durably (fsync) when `mustSync`;
 *  2. send `messages` (only now: they may promise what step 1 made durable);
 *  3. apply `snapshot` to the state machine (if any), then `committedEntries` in order, calling
 *     `applyConfChange` for each ConfChange entry;
 *  4. serve `readStates` once the state machine has applied their index;
 *  5. call `advance(ready)`.
 */
export interface Ready {
  readonly softState: SoftState | undefined;
  readonly hardState: HardState | undefined;
  readonly entries: readonly Entry[];
  readonly snapshot: Snapshot | undefined;
  readonly messages: readonly Message[];
  readonly committedEntries: readonly Entry[];
  readonly readStates: readonly ReadState[];
  /** Whether step 1 needs an fsync (new entries, a new term or vote). A commit index change
   * alone does not: it can be recovered from the peers. */
  readonly mustSync: boolean;
}

/** What a leader knows of one member's log (etcd's `Status.Progress`). */
export interface ProgressStatus {
  /** Highest index known to match the leader's log. */
  readonly match: number;
  /** Next index the leader sends. */
  readonly next: number;
  readonly state: ProgressState;
  readonly learner: boolean;
}

export interface Status {
  readonly id: NodeId;
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly lead: NodeId;
  /** Ticks since this node last heard from `lead` (0 on the leader): see `liveLeader()`. */
  readonly leaderSilentTicks: number;
  readonly state: StateType;
  readonly conf: ConfState;
  readonly lastIndex: number;
  readonly firstIndex: number;
  readonly leadTransferee: NodeId;
  /** On the leader: every member's progress (this node's own included); empty elsewhere. */
  readonly progress: ReadonlyMap<NodeId, ProgressStatus>;
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export class RawNode {
  readonly raft: Raft;
  private prevHardState: HardState;
  private prevSoft: SoftState;
  private outstanding: Ready | undefined = undefined;

  constructor(config: RaftConfig, storage: Storage, rng: RandomSource) {
    this.raft = new Raft(config, storage, rng);
    this.prevHardState = this.hardState();
    this.prevSoft = this.softState();
  }

  private hardState(): HardState {
    const r = this.raft;
    return { term: r.term, vote: r.vote, commit: r.log.committed };
  }

  private softState(): SoftState {
    return { lead: this.raft.lead, state: this.raft.state };
  }

  /** Advances logical time by one tick (the caller's timer, e.g. every 100 ms). */
  tick(): void {
    this.raft.tick();
  }

  /** Starts an election now (e.g. to bootstrap a single-node cluster without waiting). */
  campaign(): void {
    this.raft.step(newMessage(MessageType.Hup, this.raft.id, this.raft.id, 0));
  }

  /** Feeds a message received from a peer. Local-only message types are refused. */
  step(m: Message): void {
    if (isLocalMessage(m.type))
      throw new RangeError(`message type ${MessageType[m.type]} is local and cannot come from a peer`);
    if (m.to !== this.raft.id) throw new RangeError(`message for node ${m.to} stepped into node ${this.raft.id}`);
    this.raft.step(m);
  }

  /** Proposes a command. On a follower: { ok: false, error.reason: 'not-leader', leaderHint }. */
  propose(data: Uint8Array): ProposeResult {
    return this.raft.propose(data);
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    return this.raft.proposeConfChange(cc);
  }

  /** Asks for a linearizable read point; a ReadState with `ctx` appears in a later Ready.
   * `ctx` must be unique among pending reads (e.g. a request id). */
  readIndex(ctx: string): RequestResult {
    return this.raft.readIndex(ctx);
  }

  /** Asks the leader (this node or the one it knows) to hand leadership to `to`. */
  transferLeader(to: NodeId): RequestResult {
    return this.raft.transferLeader(to);
  }

  /** The transport could not deliver to `id` (the leader stops pipelining to it). */
  reportUnreachable(id: NodeId): void {
    this.raft.step(newMessage(MessageType.Unreachable, id, this.raft.id, 0));
  }

  /** The transport finished streaming a snapshot to `id` (`ok`) or gave up. */
  reportSnapshot(id: NodeId, ok: boolean): void {
    const m = newMessage(MessageType.SnapStatus, id, this.raft.id, 0);
    m.reject = !ok;
    this.raft.step(m);
  }

  /** Applies a committed ConfChange entry's change; returns the configuration now in force
   * (the caller records it with its next snapshot). */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  hasReady(): boolean {
    if (this.outstanding !== undefined) return false;
    const r = this.raft;
    if (r.pendingBcast && r.state === StateType.Leader) return true;
    if (r.msgs.length > 0 || r.readStates.length > 0) return true;
    const u = r.log.unstable;
    if (u.entries.length > 0 || u.snapshot !== undefined) return true;
    if (r.log.hasNextCommittedEntries()) return true;
    if (!sameHardState(this.hardState(), this.prevHardState)) return true;
    return r.lead !== this.prevSoft.lead || r.state !== this.prevSoft.state;
  }

  /** The next batch of work. Only one Ready is outstanding at a time: call advance() first. */
  ready(): Ready {
    assert(this.outstanding === undefined, 'ready() called again before advance()');
    const r = this.raft;
    r.flush();
    const hs = this.hardState();
    const hsChanged = !sameHardState(hs, this.prevHardState);
    const soft = this.softState();
    const softChanged = soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state;
    const u = r.log.unstable;
    const entries = u.entries.slice();
    const rd: Ready = {
      softState: softChanged ? soft : undefined,
      hardState: hsChanged ? hs : undefined,
      entries,
      snapshot: u.snapshot,
      messages: r.msgs,
      committedEntries: r.log.nextCommittedEntries(r.cfg.maxCommittedSizePerReadyBytes),
      readStates: r.readStates,
      mustSync: entries.length > 0 || hs.term !== this.prevHardState.term || hs.vote !== this.prevHardState.vote,
    };
    r.msgs = [];
    r.readStates = [];
    if (softChanged) this.prevSoft = soft;
    this.outstanding = rd;
    return rd;
  }

  /**
   * A leader's appends of what accumulated since the last ready() (new proposals, acknowledgements
   * that open a follower's window), for sending at once, also while a Ready is outstanding: the
   * leader need not wait for its own fsync before replicating (Raft thesis §10.2.1; etcd-raft's
   * asynchronous storage writes), and it counts itself towards commitment only once advance()
   * reports its entries durable. The appended entries stay in the unstable log and come in the
   * next Ready's `entries` to persist. Every other message (an append that only moves the commit
   * index too) stays for the next Ready. Empty on a node that does not lead.
   */
  takeAppends(): Message[] {
    const r = this.raft;
    if (r.state !== StateType.Leader) return [];
    r.flush();
    const early = (m: Message) => m.type === MessageType.App && m.entries.length > 0;
    if (!r.msgs.some(early)) return [];
    const apps = r.msgs.filter(early);
    r.msgs = r.msgs.filter((m) => !early(m));
    return apps;
  }

  /** Acknowledges a Ready: its entries and snapshot are durable, its committed entries applied. */
  advance(rd: Ready): void {
    assert(rd === this.outstanding, 'advance() gets the Ready returned by the last ready()');
    this.outstanding = undefined;
    const r = this.raft;
    if (rd.hardState !== undefined) this.prevHardState = rd.hardState;
    if (rd.snapshot !== undefined) {
      r.log.stableSnapTo(rd.snapshot.meta.index);
      if (rd.snapshot.meta.index > r.log.applied) r.log.appliedTo(rd.snapshot.meta.index);
    }
    if (rd.entries.length > 0) {
      const last = rd.entries[rd.entries.length - 1]!;
      r.log.stableTo(last.index, last.term);
    }
    if (rd.committedEntries.length > 0) {
      const last = rd.committedEntries[rd.committedEntries.length - 1]!;
      if (last.index > r.log.applied) r.log.appliedTo(last.index);
      r.reduceUncommitted(rd.committedEntries);
    }
    r.onPersisted();
  }

  /**
   * The leader to name to a client or worker (0: none): this node while it leads, the leader it
   * follows while it has heard from it within an election timeout (Raft.liveLeader). `status().lead`
   * stays the leader of the term as far as this node knows, alive or not.
   */
  liveLeader(): NodeId {
    return this.raft.liveLeader();
  }

  status(): Status {
    const r = this.raft;
    return {
      id: r.id,
      term: r.term,
      vote: r.vote,
      commit: r.log.committed,
      applied: r.log.applied,
      lead: r.lead,
      leaderSilentTicks: r.leaderSilentTicks,
      state: r.state,
      conf: r.conf,
      lastIndex: r.log.lastIndex(),
      firstIndex: r.log.firstIndex(),
      leadTransferee: r.leadTransferee,
      progress: r.state === StateType.Leader ? progressOf(r) : NO_PROGRESS,
    };
  }
}

const NO_PROGRESS: ReadonlyMap<NodeId, ProgressStatus> = new Map();

function progressOf(r: Raft): Map<NodeId, ProgressStatus> {
  const out = new Map<NodeId, ProgressStatus>();
  for (const [id, pr] of r.prs) out.set(id, { match: pr.match, next: pr.next, state: pr.state, learner: pr.isLearner });
  return out;
}
