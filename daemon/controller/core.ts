// The controller core: one Raft member with its replicated state machine, driven through the
// ports (ports.ts) and nothing else. It reads no clock but ClockPort's, sets no timer but
// ClockPort's, and draws no randomness but from its seed, so that the daemon (real WAL, LevelDB,
// WebSocket links, Node's timers) and the deterministic simulator (in-memory stores, a virtual
// network and clock) run the very same code.
//
// This file coordinates the pieces (one concept each; see daemon/README.md): the phase, ticking,
// requests, stopping. Options and defaults: core-options.ts; the pieces wired together:
// core-parts.ts; recovery.ts, ready.ts, applier.ts, waiters.ts, snapshotter.ts, peer-frames.ts,
// leadership.ts, peer-links.ts, request-refusals.ts, graceful-stop.ts.
//
// Fail-stop: a storage failure, a broken Raft invariant or a broken state invariant stops the core
// for good. It stops ticking and stepping, closes its peer links, fails every waiter, logs one line
// naming the cause and the data directory, and tells its `onFatal` listeners (xcectld exits
// non-zero). It never serves again: its state can no longer be trusted.

import type { ConfChange } from '../../raft/confchange.js';
import { StateType } from '../../raft/raft.js';
import type { RawNode } from '../../raft/rawnode.js';
import type { MemoryStorage } from '../../raft/storage.js';
import type { ConfState } from '../../raft/types.js';
import type { ApplyResult } from '../../statemachine/facts.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { Applier, AppliedBatch } from './applier.js';
import {
  PENDING_PROPOSALS_MAX,
  TICK_MS_DEFAULT,
  coreStatus,
  readPrefix,
  recoveryOptions,
  type ControllerCoreOptions,
  type CorePhase,
  type CoreStatus,
} from './core-options.js';
import { ControllerFatalError, NodeUnavailableError, refusalError, type ProposalRejectedError } from './errors.js';
import type { Leadership } from './leadership.js';
import { wireCore } from './core-parts.js';
import { Listeners } from './listeners.js';
import type { PeerFrames } from './peer-frames.js';
import { peerLinks } from './peer-links.js';
import type { TimerHandle } from './ports.js';
import type { ReadyLoop } from './ready.js';
import { recover } from './recovery.js';
import { notLeaderError, phaseRefusal } from './request-refusals.js';
import type { Snapshotter } from './snapshotter.js';
import { closeStores, transferBeforeStop } from './graceful-stop.js';
import type { Waiters } from './waiters.js';

export {
  ELECTION_TICKS_DEFAULT,
  HEARTBEAT_TICKS_DEFAULT,
  PENDING_PROPOSALS_MAX,
  PROPOSAL_TIMEOUT_MS,
  STOP_TRANSFER_MS_MAX,
  TICK_MS_DEFAULT,
  type ControllerCoreOptions,
  type CoreLogger,
  type CoreStatus,
  type PeerAddress,
} from './core-options.js';

export class ControllerCore {
  readonly id: number;
  private readonly raw: RawNode;
  private readonly waiters: Waiters;
  private readonly applier: Applier;
  private readonly snapshotter: Snapshotter;
  private readonly frames: PeerFrames;
  private readonly loop: ReadyLoop;
  private readonly leadership: Leadership;
  private phase: CorePhase = 'running';
  private fatalCause: ControllerFatalError | null = null;
  private tickTimer: TimerHandle | null = null;
  private readCounter = 0;
  /** Read contexts are unique across nodes and restarts (readPrefix). */
  private readonly readPrefix: string;
  private readonly applied = new Listeners<[AppliedBatch]>();
  private readonly fsync = new Listeners<[seconds: number]>();
  private readonly fatal = new Listeners<[ControllerFatalError]>();

  /** Opens the core on its stores: recovers the state and Raft (recovery.ts). Does not tick yet. */
  static async open(opts: ControllerCoreOptions): Promise<ControllerCore> {
    const r = await recover(recoveryOptions(opts));
    return new ControllerCore(opts, r.raw, r.storage, r.state, r.snapshot.index, r.snapshot.conf);
  }

  private constructor(
    private readonly opts: ControllerCoreOptions,
    raw: RawNode,
    memory: MemoryStorage,
    state: ControllerState,
    snapshotIndex: number,
    conf: ConfState,
  ) {
    this.id = opts.id;
    this.raw = raw;
    this.readPrefix = readPrefix(opts.id, opts.seed);
    const parts = wireCore(
      opts,
      { raw, memory, state, snapshotIndex, conf },
      {
        applied: this.applied,
        fsync: this.fsync,
        membershipChanged: () => this.updatePeers(),
        kick: () => this.kick(),
        running: () => this.phase === 'running',
        live: () => this.phase !== 'crashed' && this.phase !== 'failed',
        fail: (err) => this.fail(err),
      },
    );
    this.waiters = parts.waiters;
    this.leadership = parts.leadership;
    this.applier = parts.applier;
    this.snapshotter = parts.snapshotter;
    this.frames = parts.frames;
    this.loop = parts.loop;
    this.updatePeers();
  }

  // ---- events ----

  /** This node became leader (true) or stopped being leader (false). Returns the unsubscriber. */
  onLeadership(fn: (leader: boolean, term: number) => void): () => void {
    return this.leadership.listeners.add(fn);
  }

  /** A batch of committed entries was applied to `state`. */
  onApplied(fn: (results: AppliedBatch) => void): () => void {
    return this.applied.add(fn);
  }

  /** A persist that had to be durable took this many seconds. */
  onFsync(fn: (seconds: number) => void): () => void {
    return this.fsync.add(fn);
  }

  /** The core fail-stopped (called once). */
  onFatal(fn: (err: ControllerFatalError) => void): () => void {
    return this.fatal.add(fn);
  }

  // ---- driving ----

  /** Starts ticking on the clock. */
  start(): void {
    if (this.phase !== 'running' || this.tickTimer !== null) return;
    this.tickTimer = this.opts.clock.setInterval(() => this.tick(), this.opts.tick_ms ?? TICK_MS_DEFAULT);
    this.kick();
  }

  /** One Raft tick (start() calls it on the clock; a simulator may call it itself instead). */
  tick(): void {
    if (this.phase !== 'running') return;
    try {
      this.raw.tick();
    } catch (err) {
      this.fail(err);
      return;
    }
    this.kick();
  }

  /** A frame from peer `from` (the PeerPort's receiving side). */
  receive(from: number, frame: Uint8Array): void {
    if (this.phase !== 'running') return;
    let stepped: boolean;
    try {
      stepped = this.frames.receive(from, frame);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (stepped) this.kick();
  }

  private kick(): void {
    this.loop.kick();
  }

  // ---- requests ----

  /** The replicated state as of the last applied entry (read-only for callers). */
  get state(): ControllerState {
    return this.applier.state;
  }

  /** The fail-stop error once the core stopped on one, else null. */
  get fatalError(): ControllerFatalError | null {
    return this.fatalCause;
  }

  isLeader(): boolean {
    return this.phase === 'running' && this.raw.status().state === StateType.Leader;
  }

  /** The leader to name in every `not-leader` answer (0: none known): this node while it leads, the
   * one it follows while it has heard from it within an election timeout (RawNode.liveLeader). */
  leaderId(): number {
    return this.phase === 'running' ? this.raw.liveLeader() : 0;
  }

  /** Raft's status, plus the membership in force, the last snapshot's index, the state machine's
   * applied index, and the jobs left to encode while a snapshot is being written (else null). */
  status(): CoreStatus {
    return coreStatus(this.raw, this.applier, this.snapshotter);
  }

  /** Peer frames refused since start, by reason (peer-frames.ts). */
  framesRefused(): ReadonlyMap<string, number> {
    return this.frames.refused;
  }

  /** On the leader: each member's matched log index (for `cluster status`); empty elsewhere. */
  matchIndexes(): Map<number, number> {
    const out = new Map<number, number>();
    if (!this.isLeader()) return out;
    for (const [id, pr] of this.raw.status().progress) out.set(id, pr.match);
    return out;
  }

  /** Proposes an encoded fact; resolves with its apply result once committed and applied here. */
  propose(fact: Uint8Array): Promise<ApplyResult> {
    const refused = this.refuseRequest();
    if (refused !== undefined) return Promise.reject(refused);
    if (!this.isLeader()) return Promise.reject(this.notLeader());
    const max = this.opts.pendingProposalsMax ?? PENDING_PROPOSALS_MAX;
    if (this.waiters.proposalCount >= max)
      return Promise.reject(new NodeUnavailableError('unavailable', `too many proposals in flight (${max}); retry`));
    const r = this.raw.propose(fact);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    this.opts.trace?.hop('propose', r.index, r.index, 0);
    return this.waitFor(r.index, r.term);
  }

  /** Proposes a membership change; resolves once applied here. A change Raft refuses as invalid
   * (already a voter, not a member, the last voter) rejects with ProposalRejectedError. */
  proposeConfChange(cc: ConfChange): Promise<ApplyResult> {
    const refused = this.refuseRequest();
    if (refused !== undefined) return Promise.reject(refused);
    if (!this.isLeader()) return Promise.reject(this.notLeader());
    const r = this.raw.proposeConfChange(cc);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    return this.waitFor(r.index, r.term);
  }

  /** Asks for leadership to go to `to` (forwarded to the leader on a follower). Throws the typed
   * refusal (ProposalRejectedError for a node that is not a voter). */
  transferLeader(to: number): void {
    const refused = this.refuseRequest();
    if (refused !== undefined) throw refused;
    const r = this.raw.transferLeader(to);
    if (!r.ok) throw this.refusal(r.error);
    this.kick();
  }

  /** Resolves once this node has applied everything committed before the call (ReadIndex). */
  readBarrier(): Promise<void> {
    const refused = this.refuseRequest();
    if (refused !== undefined) return Promise.reject(refused);
    const ctx = `${this.readPrefix}-${++this.readCounter}`;
    const r = this.raw.readIndex(ctx);
    if (!r.ok) return Promise.reject(this.refusal(r.error));
    const p = this.waiters.read(ctx);
    this.kick();
    return p;
  }

  private waitFor(index: number, term: number): Promise<ApplyResult> {
    const p = this.waiters.proposal(index, term);
    this.kick();
    return p;
  }

  private refuseRequest(): NodeUnavailableError | undefined {
    return phaseRefusal(this.phase, this.id, this.fatalError);
  }

  private notLeader(): NodeUnavailableError {
    return notLeaderError(this.id, this.leaderId());
  }

  private refusal(err: Parameters<typeof refusalError>[0]): NodeUnavailableError | ProposalRejectedError {
    return refusalError(err, () => this.notLeader());
  }

  /** Links to the other members (peer-links.ts). */
  private updatePeers(): void {
    this.opts.peers.setPeers(peerLinks(this.id, this.applier.conf, this.applier.state, this.opts.addresses));
  }

  // ---- snapshots ----

  /** Takes a snapshot now (tests, benchmarks); resolves with its index once it is stored. */
  async snapshotNow(): Promise<number> {
    const refused = this.refuseRequest();
    if (refused !== undefined) throw refused;
    await this.snapshotter.maybe(true);
    if (this.fatalError !== null) throw this.fatalError;
    return this.snapshotter.index;
  }

  // ---- stopping ----

  /** Graceful stop: hands leadership to the most caught-up connected voter first when asked,
   * finishes the Ready in hand and the snapshot being taken, then closes the links and stores. */
  async stop(opts: { transfer?: boolean } = {}): Promise<void> {
    if (this.phase === 'stopping' || this.phase === 'stopped' || this.phase === 'crashed') return;
    if (this.phase === 'running' && opts.transfer && this.isLeader() && this.applier.conf.voters.length > 1)
      await transferBeforeStop(this.opts, {
        raw: this.raw,
        conf: this.applier.conf,
        isLeader: () => this.isLeader(),
        transferLeader: (to) => this.transferLeader(to),
      });
    const failed = this.phase === 'failed';
    if (!failed) this.phase = 'stopping';
    this.stopTicking();
    this.snapshotter.hurry();
    await this.loop.idle();
    await this.snapshotter.idle();
    this.opts.peers.close();
    this.waiters.failAll(`node ${this.id} shut down`);
    await closeStores(this.opts);
    if (!failed) this.phase = 'stopped';
  }

  /**
   * Stops everything at once, as a power loss would (for the simulator): no more ticks, steps or
   * Readies, nothing awaited, nothing written, the links closed. What was in flight is abandoned
   * where it is; the stores are left as they are (the simulator's disk decides what survived).
   */
  crash(): void {
    if (this.phase === 'crashed') return;
    this.phase = 'crashed';
    this.stopTicking();
    this.opts.peers.close();
    this.waiters.failAll(`node ${this.id} crashed`);
  }

  /** Fail-stop (see the file's header). Idempotent: only the first cause counts. */
  private fail(cause: unknown): void {
    if (this.phase === 'failed' || this.phase === 'crashed') return;
    const wasLeader = this.leadership.leader;
    const err = new ControllerFatalError(this.id, this.opts.dataDir, cause);
    this.fatalCause = err;
    this.phase = 'failed';
    this.stopTicking();
    this.opts.peers.close();
    this.opts.log.error(err.message, { cause: err.kind, dataDir: this.opts.dataDir });
    this.waiters.failAll(`node ${this.id} stopped on a fatal error`);
    if (wasLeader) this.leadership.stepDown(this.raw.status().term);
    this.fatal.emit(err);
  }

  private stopTicking(): void {
    if (this.tickTimer === null) return;
    this.opts.clock.clearInterval(this.tickTimer);
    this.tickTimer = null;
  }
}
