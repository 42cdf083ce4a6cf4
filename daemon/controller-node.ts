// One controller: the pure Raft core driven by real timers, the WAL and snapshot store under its
// data directory, the replicated state machine, and the peer transport. The API, the scheduler
// and the worker hub sit on top and reach the replicated state only through `propose`,
// `readBarrier` and `state`.
//
// The Ready loop follows raft/rawnode.ts's contract, in order: persist (snapshot, entries, hard
// state; one group-committed fdatasync), then send, then apply, then serve reads, then advance.
// Only one Ready is handled at a time; proposals that arrive meanwhile join the next batch, so
// one fsync covers many submits.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { RawNode } from '../raft/rawnode.js';
import { defaultConfig } from '../raft/config.js';
import { MemoryStorage } from '../raft/storage.js';
import { SnapshotAssembler, splitSnapshot } from '../raft/snapshot-chunks.js';
import { MessageType, type Message } from '../raft/message.js';
import { StateType, type ProposalError } from '../raft/raft.js';
import { ConfChangeType, decodeConfChange, type ConfChange } from '../raft/confchange.js';
import type { ReadState } from '../raft/readonly.js';
import { EntryType, type ConfState, type Entry, type Snapshot } from '../raft/types.js';
import { SeededRandom } from '../raft/prng.js';
import { Wal } from '../wal/wal.js';
import { SnapshotStore } from '../wal/snapshot-store.js';
import { apply } from '../statemachine/apply.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import { restore, SnapshotEncoder } from '../statemachine/snapshot.js';
import type { ApplyResult } from '../statemachine/facts.js';
import type { ControllerAddress } from '../statemachine/config-types.js';
import { decodeFrame, encodeMessage, encodeSnapshotChunk, FrameError } from './raft-codec.js';
import { PeerTransport } from './peer-transport.js';
import type { Logger } from './log.js';

/** Wall-clock length of one Raft tick. */
export const TICK_MS_DEFAULT = 50;
/** Election timeout in ticks: drawn from [5, 10) ticks = [250, 500) ms with the default tick, which
 * suits a LAN (a heartbeat every tick; pre-vote and check-quorum keep a slow node from disrupting). */
export const ELECTION_TICKS_DEFAULT = 5;
export const HEARTBEAT_TICKS_DEFAULT = 1;
/** Take a snapshot (and compact the WAL) after this many applied entries. */
export const SNAPSHOT_EVERY_ENTRIES_DEFAULT = 10_000;
/** A snapshot is encoded this many jobs at a time between looks at the clock (about 2.5 ms). */
export const SNAPSHOT_SLICE_JOBS = 1_000;
/** ...and yields to the event loop after this long, so that heartbeats, votes and appends go on
 * while a large state is encoded (a million jobs take seconds; the election timeout is 250 ms). */
export const SNAPSHOT_SLICE_MS = 20;
/** Entries kept in memory below a snapshot so that a briefly lagging follower needs no snapshot. */
export const SNAPSHOT_CATCHUP_ENTRIES = 2_000;
/** A proposal or read not answered within this is failed as `unavailable` (the client retries). */
export const PROPOSAL_TIMEOUT_MS = 10_000;
/** Proposals waiting for commit at once; past this the node answers `unavailable` (back-pressure). */
export const PENDING_PROPOSALS_MAX = 100_000;

export class NodeUnavailableError extends Error {
  override readonly name = 'NodeUnavailableError';
  constructor(
    readonly code: 'not-leader' | 'no-leader' | 'unavailable',
    message: string,
    readonly leaderId = 0,
  ) {
    super(message);
  }
}

export interface ControllerNodeOptions {
  readonly id: number;
  readonly dataDir: string;
  /** Controllers of the bootstrap configuration (the config directory's xce.yaml). */
  readonly bootstrapControllers: readonly ControllerAddress[];
  readonly secret: Uint8Array;
  readonly log: Logger;
  readonly tick_ms?: number;
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  readonly snapshotEveryEntries?: number;
  /** Jobs encoded between looks at the clock, and how long to encode before yielding (tests). */
  readonly snapshotSliceJobs?: number;
  readonly snapshotSliceMs?: number;
  /** Awaited between slices instead of a turn of the event loop (tests hold the encoder with it). */
  readonly snapshotBetweenSlices?: () => Promise<void>;
  /** Entries kept below a snapshot for lagging followers (default SNAPSHOT_CATCHUP_ENTRIES). */
  readonly snapshotCatchupEntries?: number;
  /** Start with no membership and wait to be added by the leader (`xceadmin cluster add-member`). */
  readonly join?: boolean;
  /** Seed for the election timer's randomness (tests); random by default. */
  readonly seed?: number;
  readonly walSegmentBytes?: number;
}

interface Waiter {
  readonly term: number;
  resolve(r: ApplyResult): void;
  reject(e: Error): void;
  readonly timer: NodeJS.Timeout;
}

interface ReadWaiter {
  resolve(): void;
  reject(e: Error): void;
  readonly timer: NodeJS.Timeout;
}

export interface NodeEvents {
  /** This node became leader (true) or stopped being leader (false). */
  onLeadership?(leader: boolean, term: number): void;
  /** Called after a batch of committed entries was applied. */
  onApplied?(results: ReadonlyArray<{ index: number; result: ApplyResult }>): void;
  /** A persisted fsync took this long (metrics). */
  onFsync?(seconds: number): void;
}

export class ControllerNode {
  readonly id: number;
  state: ControllerState = emptyState();
  private raw!: RawNode;
  private storage!: MemoryStorage;
  private wal!: Wal;
  private snaps!: SnapshotStore;
  readonly transport: PeerTransport;
  private readonly assembler = new SnapshotAssembler();
  private readonly waiters = new Map<number, Waiter>();
  private readonly reads = new Map<string, ReadWaiter>();
  private readyReads: ReadState[] = [];
  private applied = 0;
  private conf: ConfState = { voters: [], learners: [] };
  private snapshotIndex = 0;
  /** A local snapshot being written to the store (off the Ready loop); null when none. */
  private snapshotting: Promise<void> | null = null;
  /** Set while a snapshot is being encoded: committed entries wait in `held` until it is done. */
  private encoding: SnapshotEncoder | null = null;
  private held: Entry[] = [];
  /** Membership changes among `held` already in force (they cannot wait: see applyEntries). */
  private readonly confAppliedEarly = new Set<number>();
  private tickTimer: NodeJS.Timeout | null = null;
  private looping = false;
  private again = false;
  private stopped = false;
  private readCounter = 0;
  private readonly readPrefix = randomBytes(6).toString('hex');
  private leader = false;
  private failed: Error | null = null;
  events: NodeEvents = {};

  constructor(private readonly opts: ControllerNodeOptions) {
    this.id = opts.id;
    this.transport = new PeerTransport({
      self: opts.id,
      secret: opts.secret,
      log: opts.log.child({ component: 'transport' }),
      onFrame: (from, frame) => this.onFrame(from, frame),
    });
  }

  get log(): Logger {
    return this.opts.log;
  }

  /** Opens the data directory, recovers state (snapshot + WAL replay), and starts ticking. */
  async start(): Promise<void> {
    const log = this.opts.log;
    const { wal, recovered } = await Wal.open(join(this.opts.dataDir, 'wal'), {
      logger: log.child({ component: 'wal' }),
      dataDir: this.opts.dataDir,
      ...(this.opts.walSegmentBytes !== undefined ? { segmentBytes: this.opts.walSegmentBytes } : {}),
    });
    this.wal = wal;
    this.snaps = await SnapshotStore.open(join(this.opts.dataDir, 'snap'));
    const stored = this.snaps.latest();
    let snap: Snapshot;
    if (stored !== undefined) {
      const { meta, data } = await this.snaps.readAll();
      snap = { meta, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
      this.state = data.byteLength === 0 ? emptyState() : restore(snap.data);
      this.storage = new MemoryStorage();
      this.storage.applySnapshot(snap);
      log.info('restored snapshot', { index: meta.index, term: meta.term, bytes: data.byteLength, jobs: this.state.jobs.size });
    } else if (this.opts.join) {
      // A member joining an existing cluster starts empty, at index 0. It must not start from a
      // bootstrap snapshot: one with no members at the index and term of the cluster's own
      // (index 1, term 1) would pass Raft's log-matching check, and the joiner would replay the log
      // from index 2 without the founding membership. Empty, it matches nothing, and the leader
      // sends it a snapshot first. Nothing is stored until that snapshot arrives; a vote it gave
      // meanwhile is in the WAL and is kept across a restart (below).
      this.storage = new MemoryStorage();
      snap = this.storage.snapshot();
      log.info('started empty, to be added to a cluster', { join: true });
    } else {
      // A brand-new member: its first membership is the bootstrap configuration's controllers.
      // Every member starts from the same bootstrap snapshot (index 1, term 1, see
      // MemoryStorage.bootstrap); it is persisted so that a restart no longer depends on the
      // config directory.
      const voters = this.opts.bootstrapControllers.map((c) => c.id);
      this.storage = MemoryStorage.bootstrap({ voters, learners: [] });
      snap = this.storage.snapshot();
      await this.snaps.save(snap.meta, snap.data);
      await this.wal.saveSnapshot({ index: snap.meta.index, term: snap.meta.term });
      await this.wal.save(this.storage.getHardState(), []);
      log.info('bootstrapped a new member', { voters, join: false });
    }
    const walEntries = recovered.entries.filter((e) => e.index > snap.meta.index);
    if (walEntries.length > 0) this.storage.append(walEntries);
    if (stored !== undefined || (this.opts.join && recovered.hardState.term > 0)) this.storage.setHardState(recovered.hardState);
    this.applied = snap.meta.index;
    this.snapshotIndex = snap.meta.index;
    this.conf = snap.meta.conf;
    const cfg = defaultConfig(this.id, {
      applied: snap.meta.index,
      electionTicks: this.opts.electionTicks ?? ELECTION_TICKS_DEFAULT,
      heartbeatTicks: this.opts.heartbeatTicks ?? HEARTBEAT_TICKS_DEFAULT,
    });
    this.raw = new RawNode(cfg, this.storage, new SeededRandom(this.opts.seed ?? randomBytes(4).readUInt32LE(0)));
    this.updatePeers();
    log.info('recovered log', {
      snapshotIndex: snap.meta.index,
      walEntries: walEntries.length,
      term: recovered.hardState.term,
      commit: recovered.hardState.commit,
      tornTail: recovered.tornTail ?? null,
    });
    this.tickTimer = setInterval(() => {
      this.raw.tick();
      this.kick();
    }, this.opts.tick_ms ?? TICK_MS_DEFAULT);
    this.kick();
  }

  /** Addresses of the members: the replicated configuration's, else the bootstrap one's. */
  addresses(): readonly ControllerAddress[] {
    return this.state.config?.cluster.cluster.controllers ?? this.opts.bootstrapControllers;
  }

  addressOf(id: number): string | null {
    const c = this.addresses().find((a) => a.id === id);
    return c === undefined ? null : `${c.host}:${c.port}`;
  }

  /**
   * Links to the other members. A node that is not a member itself (started with `join`, waiting
   * to be added) links to every listed controller: it must answer the leader's first append, or
   * the leader never learns that it needs a snapshot.
   */
  private updatePeers(): void {
    const members = new Set([...this.conf.voters, ...this.conf.learners]);
    const outside = !members.has(this.id);
    const peers = this.addresses()
      .filter((a) => (outside || members.has(a.id)) && a.id !== this.id)
      .map((a) => ({ id: a.id, address: `${a.host}:${a.port}` }));
    this.transport.setPeers(peers);
  }

  // ---- what the API, scheduler and worker hub use ----

  isLeader(): boolean {
    return this.raw?.status().state === StateType.Leader;
  }

  leaderId(): number {
    return this.raw?.status().lead ?? 0;
  }

  /** Raft's status, plus the membership in force, the last snapshot's index, the state machine's
   * applied index, and the jobs left to encode while a snapshot is being written (else null). */
  status(): ReturnType<RawNode['status']> & { conf: ConfState; snapshotIndex: number; appliedIndex: number; snapshotJobsLeft: number | null } {
    return { ...this.raw.status(), conf: this.conf, snapshotIndex: this.snapshotIndex, appliedIndex: this.applied, snapshotJobsLeft: this.encoding?.jobsLeft ?? null };
  }

  /** On the leader: each member's matched log index (for `cluster status`); empty elsewhere. */
  matchIndexes(): Map<number, number> {
    const out = new Map<number, number>();
    if (!this.isLeader()) return out;
    for (const [id, pr] of this.raw.raft.prs) out.set(id, pr.match);
    return out;
  }

  private notLeader(): NodeUnavailableError {
    const lead = this.leaderId();
    return lead === 0
      ? new NodeUnavailableError('no-leader', 'the cluster has no leader right now (an election is under way); retry shortly')
      : new NodeUnavailableError('not-leader', `node ${this.id} is not the leader; the leader is node ${lead}`, lead);
  }

  private refusal(err: ProposalError): NodeUnavailableError {
    if (err.reason === 'not-leader') return this.notLeader();
    return new NodeUnavailableError('unavailable', err.message);
  }

  /** Proposes an encoded fact; resolves with its apply result once committed and applied here. */
  propose(fact: Uint8Array): Promise<ApplyResult> {
    if (this.failed) return Promise.reject(new NodeUnavailableError('unavailable', `node ${this.id} stopped: ${this.failed.message}`));
    if (!this.isLeader()) return Promise.reject(this.notLeader());
    if (this.waiters.size >= PENDING_PROPOSALS_MAX) {
      return Promise.reject(new NodeUnavailableError('unavailable', `too many proposals in flight (${PENDING_PROPOSALS_MAX}); retry`));
    }
    const r = this.raw.propose(fact);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    return this.waitFor(r.index, r.term);
  }

  proposeConfChange(cc: ConfChange): Promise<ApplyResult> {
    if (!this.isLeader()) return Promise.reject(this.notLeader());
    const r = this.raw.proposeConfChange(cc);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    return this.waitFor(r.index, r.term);
  }

  transferLeader(to: number): void {
    const r = this.raw.transferLeader(to);
    if (!r.ok) throw this.refusal(r.error);
    this.kick();
  }

  private waitFor(index: number, term: number): Promise<ApplyResult> {
    return new Promise<ApplyResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(index);
        reject(new NodeUnavailableError('unavailable', `entry ${index} was not committed within ${PROPOSAL_TIMEOUT_MS} ms; retry`));
      }, PROPOSAL_TIMEOUT_MS);
      this.waiters.set(index, { term, resolve, reject, timer });
      this.kick();
    });
  }

  /** Resolves once this node has applied everything committed before the call (ReadIndex). */
  readBarrier(): Promise<void> {
    if (this.failed) return Promise.reject(new NodeUnavailableError('unavailable', `node ${this.id} stopped`));
    const ctx = `${this.readPrefix}-${++this.readCounter}`;
    const r = this.raw.readIndex(ctx);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.reads.delete(ctx);
        reject(new NodeUnavailableError('unavailable', `linearizable read not confirmed within ${PROPOSAL_TIMEOUT_MS} ms (no quorum?)`));
      }, PROPOSAL_TIMEOUT_MS);
      this.reads.set(ctx, { resolve, reject, timer });
      this.kick();
    });
  }

  // ---- the Ready loop ----

  private kick(): void {
    if (this.stopped || this.failed) return;
    if (this.looping) {
      this.again = true;
      return;
    }
    this.looping = true;
    setImmediate(() => void this.loop());
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        while (!this.stopped && this.raw.hasReady()) {
          const rd = this.raw.ready();
          await this.handleReady(rd);
          this.raw.advance(rd);
        }
      } while (this.again && !this.stopped);
    } catch (err) {
      this.fail(err as Error);
    } finally {
      this.looping = false;
    }
  }

  private fail(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    this.opts.log.error('the controller node stopped on an unrecoverable error', { error: err.message, stack: err.stack });
    for (const [, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new NodeUnavailableError('unavailable', `node ${this.id} stopped: ${err.message}`));
    }
    this.waiters.clear();
  }

  private async handleReady(rd: ReturnType<RawNode['ready']>): Promise<void> {
    // A leader's appends and heartbeats go out BEFORE its own fsync (Raft thesis §10.2.1): they
    // promise nothing about this node's disk, and the leader counts itself towards commitment
    // only once advance() reports its entries durable. So a commit costs one fsync + one round
    // trip instead of two fsyncs in a row. Votes and append responses still wait for the disk.
    const early = this.raw.raft.state === StateType.Leader;
    let late: readonly Message[] = rd.messages;
    if (early && rd.messages.length > 0) {
      const rest: Message[] = [];
      for (const m of rd.messages) {
        if (m.type === MessageType.App || m.type === MessageType.Heartbeat) this.send(m);
        else rest.push(m);
      }
      late = rest;
    }
    // 1. Persist.
    if (rd.snapshot !== undefined) await this.persistReceivedSnapshot(rd.snapshot);
    if (rd.entries.length > 0 || rd.hardState !== undefined) {
      const t0 = process.hrtime.bigint();
      await this.wal.save(rd.hardState, rd.entries);
      if (rd.mustSync) this.events.onFsync?.(Number(process.hrtime.bigint() - t0) / 1e9);
      if (rd.entries.length > 0) this.storage.append(rd.entries);
      if (rd.hardState !== undefined) this.storage.setHardState(rd.hardState);
    }
    // 2. Send.
    for (const m of late) this.send(m);
    // 3. Apply.
    if (rd.snapshot !== undefined) this.installSnapshotState(rd.snapshot);
    if (rd.committedEntries.length > 0) this.applyEntries(rd.committedEntries);
    // 4. Reads.
    if (rd.readStates.length > 0) this.readyReads.push(...rd.readStates);
    this.serveReads();
    // Leadership changes.
    if (rd.softState !== undefined) this.onSoftState(rd.softState.state === StateType.Leader, rd.softState.lead);
    await this.maybeSnapshot();
  }

  private send(m: Message): void {
    if (m.type === MessageType.Snap) {
      this.sendSnapshot(m).catch((err: Error) => {
        // Not expected (encoding a chunk of bytes we hold); the follower is retried as after a loss.
        this.opts.log.error('could not send a snapshot', { to: m.to, error: err.message });
        if (!this.stopped && this.failed === null) this.raw.reportSnapshot(m.to, false);
      });
      return;
    }
    if (!this.transport.send(m.to, encodeMessage(m)) && m.type === MessageType.App) this.raw.reportUnreachable(m.to);
  }

  /**
   * Streams a MsgSnap's chunks to its follower at the pace its link drains (a snapshot is often
   * larger than a socket may queue), encoding each chunk as it goes, then tells Raft how it went.
   * Raft sends a follower no other snapshot until it is told, so there is one stream per follower.
   */
  private async sendSnapshot(m: Message): Promise<void> {
    const t0 = performance.now();
    const bytes = m.snapshot?.data.byteLength ?? 0;
    this.opts.log.info('sending snapshot', { to: m.to, index: m.snapshot?.meta.index, bytes });
    const chunks = splitSnapshot(m);
    const frames = (function* () {
      for (const c of chunks) yield encodeSnapshotChunk(c);
    })();
    const ok = await this.transport.stream(m.to, frames);
    if (this.stopped || this.failed) return;
    this.raw.reportSnapshot(m.to, ok);
    this.kick();
    this.opts.log.info('sent snapshot', { to: m.to, index: m.snapshot?.meta.index, bytes, ok, ms: Math.round(performance.now() - t0) });
  }

  private onFrame(from: number, frame: Uint8Array): void {
    if (this.stopped || this.raw === undefined) return;
    let decoded;
    try {
      decoded = decodeFrame(frame);
    } catch (err) {
      if (err instanceof FrameError) {
        this.opts.log.warn('dropped a bad frame from a peer', { peer: from, error: err.message });
        return;
      }
      throw err;
    }
    let m: Message;
    if (decoded.kind === 'chunk') {
      if (decoded.chunk.from !== from) return;
      const r = this.assembler.add(decoded.chunk);
      if (r === undefined) return;
      if (typeof r === 'string') {
        this.opts.log.warn('abandoned a snapshot transfer', { peer: from, why: r });
        return;
      }
      m = r;
    } else m = decoded.message;
    if (m.from !== from || m.to !== this.id) return;
    try {
      this.raw.step(m);
    } catch (err) {
      this.opts.log.warn('refused a peer message', { peer: from, error: (err as Error).message });
      return;
    }
    this.kick();
  }

  /**
   * Applies committed entries to the state, or holds them while a snapshot is being encoded (the
   * state must stay as it was at the snapshot's index). A held membership change still takes
   * effect in Raft at once: Raft counts it applied already and would otherwise accept the next
   * change before this one is in force. The state machine gets it in order with the rest.
   */
  private applyEntries(entries: readonly Entry[]): void {
    if (this.encoding !== null) {
      for (const e of entries) {
        if (e.index <= this.applied) continue;
        if (e.type === EntryType.ConfChange) {
          this.applyConfChange(e);
          this.confAppliedEarly.add(e.index);
        }
        this.held.push(e);
      }
      return;
    }
    const results: Array<{ index: number; result: ApplyResult }> = [];
    let confChanged = false;
    for (const e of entries) {
      if (e.index <= this.applied) continue;
      let result: ApplyResult;
      if (e.type === EntryType.ConfChange) {
        if (!this.confAppliedEarly.delete(e.index)) this.applyConfChange(e);
        confChanged = true;
        result = { kind: 'noop' };
      } else {
        result = apply(this.state, e.data, e.index);
      }
      this.applied = e.index;
      results.push({ index: e.index, result });
      const w = this.waiters.get(e.index);
      if (w !== undefined) {
        this.waiters.delete(e.index);
        clearTimeout(w.timer);
        if (w.term === e.term) w.resolve(result);
        else w.reject(new NodeUnavailableError('unavailable', `the proposal at index ${e.index} was replaced by a new leader's entry; retry`));
      }
    }
    // A config change may have moved controller addresses.
    if (confChanged || results.some((r) => r.result.kind === 'configApplied')) this.updatePeers();
    if (results.length > 0) this.events.onApplied?.(results);
  }

  private applyConfChange(e: Entry): void {
    const cc = decodeConfChange(e.data);
    this.conf = this.raw.applyConfChange(cc);
    this.opts.log.info('membership changed', { change: ConfChangeType[cc.type], node: cc.nodeId, voters: this.conf.voters, learners: this.conf.learners });
  }

  /** Applies what was held during a snapshot's encoding, and serves the reads that waited on it. */
  private releaseHeld(): void {
    const held = this.held;
    this.held = [];
    if (held.length > 0) this.applyEntries(held);
    this.serveReads();
  }

  private serveReads(): void {
    if (this.readyReads.length === 0) return;
    const keep: ReadState[] = [];
    for (const rs of this.readyReads) {
      if (rs.index > this.applied) {
        keep.push(rs);
        continue;
      }
      const w = this.reads.get(rs.ctx);
      if (w === undefined) continue;
      this.reads.delete(rs.ctx);
      clearTimeout(w.timer);
      w.resolve();
    }
    this.readyReads = keep;
  }

  private onSoftState(leader: boolean, lead: number): void {
    const term = this.raw.status().term;
    this.opts.log.info(leader ? 'became leader' : 'following', { term, leader: lead });
    if (leader !== this.leader) {
      this.leader = leader;
      if (!leader) this.failPendingOnStepDown(term);
      this.events.onLeadership?.(leader, term);
    }
  }

  /**
   * A leader that steps down (check-quorum in a minority, a higher term seen) answers what it still
   * holds at once with a retryable error, so that clients move to the new leader instead of
   * waiting out PROPOSAL_TIMEOUT_MS: the pending reads were never confirmed, and the pending writes
   * may or may not commit under the new leader. A client retries a write under the same session
   * and sequence number, so an entry that does commit is applied once and its first result is what
   * the retry gets.
   */
  private failPendingOnStepDown(term: number): void {
    for (const [index, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new NodeUnavailableError('unavailable', `node ${this.id} stopped being the leader (term ${term}) before entry ${index} was committed; retry (it is applied at most once)`));
    }
    this.waiters.clear();
    for (const [, r] of this.reads) {
      clearTimeout(r.timer);
      r.reject(new NodeUnavailableError('unavailable', `node ${this.id} stopped being the leader (term ${term}) before the read was confirmed; retry`));
    }
    this.reads.clear();
  }

  // ---- snapshots ----

  /** How long storing the last received snapshot took (for the log line that installs it). */
  private receivedStoreMs = 0;

  private async persistReceivedSnapshot(snap: Snapshot): Promise<void> {
    if (this.snapshotting !== null) await this.snapshotting;
    const t0 = performance.now();
    await this.snaps.save(snap.meta, snap.data);
    await this.wal.saveSnapshot({ index: snap.meta.index, term: snap.meta.term });
    this.storage.applySnapshot(snap);
    this.receivedStoreMs = Math.round(performance.now() - t0);
  }

  private installSnapshotState(snap: Snapshot): void {
    const t0 = performance.now();
    this.state = snap.data.byteLength === 0 ? emptyState() : restore(snap.data);
    this.applied = snap.meta.index;
    this.snapshotIndex = snap.meta.index;
    this.conf = snap.meta.conf;
    this.updatePeers();
    this.opts.log.info('installed a snapshot from the leader', { index: snap.meta.index, jobs: this.state.jobs.size, bytes: snap.data.byteLength, storeMs: this.receivedStoreMs, restoreMs: Math.round(performance.now() - t0) });
    // Proposals that waited on entries the snapshot replaced cannot be matched to results.
    for (const [index, w] of this.waiters) {
      if (index > snap.meta.index) continue;
      clearTimeout(w.timer);
      w.reject(new NodeUnavailableError('unavailable', 'the log was replaced by a snapshot; retry'));
      this.waiters.delete(index);
    }
  }

  /**
   * Takes a snapshot when enough entries were applied since the last one. The state is encoded at
   * the applied index, a slice at a time with the event loop free in between (encodeInSlices), so
   * that the Ready loop goes on persisting, sending and committing meanwhile; only applying waits
   * (applyEntries holds the entries), since the snapshot must be of one index. Writing it to the
   * store, marking the WAL and compacting follow, also off the Ready loop. The threshold grows with
   * the number of jobs, so that the encoding cost (linear in the state) stays a small share.
   */
  private async maybeSnapshot(force = false): Promise<void> {
    while (this.snapshotting !== null) {
      if (!force) return;
      await this.snapshotting;
    }
    const every = Math.max(this.opts.snapshotEveryEntries ?? SNAPSHOT_EVERY_ENTRIES_DEFAULT, this.opts.snapshotEveryEntries === undefined ? this.state.jobs.size : 0);
    if (this.applied <= this.snapshotIndex) return;
    if (!force && this.applied - this.snapshotIndex < every) return;
    const index = this.applied;
    const conf = this.conf;
    const encoder = new SnapshotEncoder(this.state);
    this.encoding = encoder;
    const write = (async () => {
      const t0 = performance.now();
      try {
        await this.encodeInSlices(encoder);
      } finally {
        this.encoding = null;
        this.releaseHeld();
      }
      const encodeMs = performance.now() - t0;
      const data = encoder.bytes();
      const snap = this.storage.createSnapshot(index, conf, data);
      this.snapshotIndex = index;
      await this.snaps.save(snap.meta, data);
      await this.wal.saveSnapshot({ index, term: snap.meta.term });
      const keepFrom = index - (this.opts.snapshotCatchupEntries ?? SNAPSHOT_CATCHUP_ENTRIES);
      if (keepFrom > this.storage.firstIndex() && keepFrom <= this.storage.snapshot().meta.index) this.storage.compact(keepFrom);
      const removed = await this.wal.compact(index);
      this.opts.log.info('took a snapshot', { index, bytes: data.byteLength, jobs: encoder.jobCount, encodeMs: Math.round(encodeMs), walSegmentsRemoved: removed });
    })();
    this.snapshotting = write.then(
      () => {
        this.snapshotting = null;
      },
      (err: Error) => {
        this.snapshotting = null;
        this.fail(err);
      },
    );
    if (force) await this.snapshotting;
  }

  /** Runs the encoder to the end, yielding to the event loop every SNAPSHOT_SLICE_MS. */
  private async encodeInSlices(encoder: SnapshotEncoder): Promise<void> {
    const sliceJobs = this.opts.snapshotSliceJobs ?? SNAPSHOT_SLICE_JOBS;
    const sliceMs = this.opts.snapshotSliceMs ?? SNAPSHOT_SLICE_MS;
    const between = this.opts.snapshotBetweenSlices ?? (() => new Promise<void>((r) => setImmediate(r)));
    let sliceStart = performance.now();
    while (!encoder.step(sliceJobs)) {
      if (performance.now() - sliceStart < sliceMs) continue;
      await between();
      sliceStart = performance.now();
    }
  }

  /** Takes a snapshot now (tests, benchmarks); resolves with its index once it is stored. */
  async snapshotNow(): Promise<number> {
    await this.maybeSnapshot(true);
    return this.snapshotIndex;
  }

  /** Graceful stop: hands leadership to the most caught-up peer first when leader. */
  async stop(opts: { transfer?: boolean } = {}): Promise<void> {
    if (this.stopped) return;
    if (opts.transfer && this.isLeader() && this.conf.voters.length > 1) {
      const target = this.bestTransferee();
      if (target !== 0) {
        this.opts.log.info('transferring leadership before stopping', { to: target });
        try {
          this.transferLeader(target);
          const until = Date.now() + 2_000;
          while (this.isLeader() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        } catch (err) {
          this.opts.log.warn('leadership transfer failed; stopping anyway', { error: (err as Error).message });
        }
      }
    }
    this.stopped = true;
    if (this.tickTimer !== null) clearInterval(this.tickTimer);
    while (this.looping) await new Promise((r) => setTimeout(r, 5));
    if (this.snapshotting !== null) await this.snapshotting;
    this.transport.close();
    for (const [, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new NodeUnavailableError('unavailable', `node ${this.id} is shutting down; retry on another controller`));
    }
    this.waiters.clear();
    for (const [, r] of this.reads) {
      clearTimeout(r.timer);
      r.reject(new NodeUnavailableError('unavailable', `node ${this.id} is shutting down`));
    }
    this.reads.clear();
    await this.wal?.close();
    await this.snaps?.close();
  }

  private bestTransferee(): number {
    const prs = this.raw.raft.prs;
    let best = 0;
    let bestMatch = -1;
    for (const id of this.conf.voters) {
      if (id === this.id || !this.transport.connected(id)) continue;
      const match = prs.get(id)?.match ?? -1;
      if (match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    return best;
  }
}
