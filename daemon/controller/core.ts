// The controller core: one Raft member with its replicated state machine, driven through the
// ports (ports.ts) and nothing else. It reads no clock but ClockPort's, sets no timer but
// ClockPort's, and draws no randomness but from its seed, so that the daemon (real WAL, LevelDB,
// WebSocket links, Node's timers) and the deterministic simulator (in-memory stores, a virtual
// network and clock) run the very same code.
//
// Pieces, one concept each: recovery.ts (start from the stores), ready.ts (the Ready loop),
// applier.ts (state machine, held entries, reads), waiters.ts (proposals and reads waiting),
// snapshotter.ts (own snapshots, received snapshots), peer-frames.ts (frames in and out).
//
// Fail-stop: a storage failure, a broken Raft invariant or a broken state invariant stops the core
// for good. It stops ticking and stepping, closes its peer links, fails every waiter, logs one line
// naming the cause and the data directory, and tells its `onFatal` listeners (xcectld exits
// non-zero). It never serves again: its state can no longer be trusted.

import type { ConfChange } from '../../raft/confchange.js';
import { StateType } from '../../raft/raft.js';
import type { RawNode, SoftState, Status } from '../../raft/rawnode.js';
import { SeededRandom } from '../../raft/prng.js';
import type { MemoryStorage } from '../../raft/storage.js';
import type { ConfState } from '../../raft/types.js';
import { apply as statemachineApply } from '../../statemachine/apply.js';
import type { ApplyResult } from '../../statemachine/facts.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { Logger } from '../log.js';
import { Applier, type AppliedBatch } from './applier.js';
import { ControllerFatalError, NodeUnavailableError, refusalError, type ProposalRejectedError } from './errors.js';
import { Listeners } from './listeners.js';
import { PeerFrames } from './peer-frames.js';
import type { ClockPort, LogStore, PeerPort, SnapshotStorePort, TimerHandle } from './ports.js';
import { ReadyLoop } from './ready.js';
import { recover } from './recovery.js';
import { Snapshotter, type SnapshotPolicy } from './snapshotter.js';
import { Waiters } from './waiters.js';

/** Wall-clock length of one Raft tick. */
export const TICK_MS_DEFAULT = 50;
/** Election timeout in ticks: drawn from [5, 10) ticks = [250, 500) ms with the default tick, which
 * suits a LAN (a heartbeat every tick; pre-vote and check-quorum keep a slow node from disrupting). */
export const ELECTION_TICKS_DEFAULT = 5;
export const HEARTBEAT_TICKS_DEFAULT = 1;
/** A proposal or read not answered within this is failed as `unavailable` (the client retries). */
export const PROPOSAL_TIMEOUT_MS = 10_000;
/** Proposals waiting for commit at once; past this the node answers `unavailable` (back-pressure). */
export const PENDING_PROPOSALS_MAX = 100_000;
/** How long a graceful stop waits for a leadership transfer to finish. */
export const STOP_TRANSFER_MS_MAX = 2_000;
/** How often a graceful stop looks whether the transfer is done. */
const STOP_TRANSFER_POLL_MS = 20;

export interface PeerAddress {
  readonly id: number;
  readonly address: string;
}

export type CoreLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface ControllerCoreOptions extends SnapshotPolicy {
  readonly id: number;
  readonly log: CoreLogger;
  readonly logStore: LogStore;
  readonly snapshots: SnapshotStorePort;
  readonly peers: PeerPort;
  readonly clock: ClockPort;
  /** Seeds every random draw of the core (election timeouts, read contexts). */
  readonly seed: number;
  /** The voters of a brand-new cluster (the bootstrap configuration's controllers). */
  readonly bootstrapVoters: readonly number[];
  /** Start empty and wait to be added by the leader. */
  readonly join?: boolean;
  /** The controllers' addresses for a state (its replicated configuration, else the bootstrap
   * one's); the core links to the members among them. */
  readonly addresses: (state: ControllerState) => readonly PeerAddress[];
  /** Where the node's durable state lives, named in the fail-stop line (a data directory). */
  readonly dataDir: string;
  readonly tick_ms?: number;
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  readonly proposalTimeout_ms?: number;
  readonly pendingProposalsMax?: number;
  /** The largest snapshot accepted from a leader, in bytes (default SNAPSHOT_BYTES_MAX, 4 GiB). */
  readonly snapshotBytesMax?: number;
  /** The state machine's apply (default statemachine/apply.ts; the simulator injects faulty ones). */
  readonly apply?: typeof statemachineApply;
}

export type CoreStatus = Status & {
  /** The membership in force at the applied index. */
  readonly conf: ConfState;
  readonly snapshotIndex: number;
  /** The state machine's applied index (behind Raft's `applied` while a snapshot holds entries). */
  readonly appliedIndex: number;
  /** Jobs left to encode while a snapshot is being taken, else null. */
  readonly snapshotJobsLeft: number | null;
};

/** running: serving; stopping/stopped: graceful stop; crashed: crash(); failed: fail-stop. */
type Phase = 'running' | 'stopping' | 'stopped' | 'crashed' | 'failed';

export class ControllerCore {
  readonly id: number;
  private readonly raw: RawNode;
  private readonly waiters: Waiters;
  private readonly applier: Applier;
  private readonly snapshotter: Snapshotter;
  private readonly frames: PeerFrames;
  private readonly loop: ReadyLoop;
  private phase: Phase = 'running';
  private fatalCause: ControllerFatalError | null = null;
  private tickTimer: TimerHandle | null = null;
  private leader = false;
  private readCounter = 0;
  /** Read contexts are unique across nodes (the id) and across restarts (drawn from the seed). */
  private readonly readPrefix: string;
  private readonly leadership = new Listeners<[leader: boolean, term: number]>();
  private readonly applied = new Listeners<[AppliedBatch]>();
  private readonly fsync = new Listeners<[seconds: number]>();
  private readonly fatal = new Listeners<[ControllerFatalError]>();

  /** Opens the core on its stores: recovers the state and Raft (recovery.ts). Does not tick yet. */
  static async open(opts: ControllerCoreOptions): Promise<ControllerCore> {
    const r = await recover({
      id: opts.id,
      log: opts.log,
      logStore: opts.logStore,
      snapshots: opts.snapshots,
      seed: opts.seed,
      bootstrapVoters: opts.bootstrapVoters,
      join: opts.join ?? false,
      electionTicks: opts.electionTicks ?? ELECTION_TICKS_DEFAULT,
      heartbeatTicks: opts.heartbeatTicks ?? HEARTBEAT_TICKS_DEFAULT,
    });
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
    const clock = opts.clock;
    const rng = new SeededRandom((opts.seed ^ 0x5eed_c0de) >>> 0);
    this.readPrefix = `${opts.id}.${rng.nextU32().toString(16)}${rng.nextU32().toString(16)}`;
    const live = () => this.phase !== 'crashed' && this.phase !== 'failed';
    const fail = (err: unknown) => this.fail(err);
    this.waiters = new Waiters(clock, opts.proposalTimeout_ms ?? PROPOSAL_TIMEOUT_MS);
    this.applier = new Applier(
      {
        raw,
        waiters: this.waiters,
        apply: opts.apply ?? statemachineApply,
        clock,
        log: opts.log,
        onApplied: this.applied,
        membershipChanged: () => this.updatePeers(),
      },
      { state, index: snapshotIndex, conf },
    );
    this.snapshotter = new Snapshotter(
      {
        ...pickPolicy(opts),
        applier: this.applier,
        storage: memory,
        logStore: opts.logStore,
        snapshots: opts.snapshots,
        clock,
        log: opts.log,
        live,
        fail,
      },
      snapshotIndex,
    );
    this.frames = new PeerFrames({
      id: opts.id,
      raw,
      peers: opts.peers,
      clock,
      log: opts.log,
      live,
      kick: () => this.kick(),
      snapshotBytesMax: opts.snapshotBytesMax,
    });
    this.loop = new ReadyLoop({
      raw,
      storage: memory,
      logStore: opts.logStore,
      clock,
      frames: this.frames,
      applier: this.applier,
      snapshotter: this.snapshotter,
      onFsync: this.fsync,
      softState: (s, term) => this.onSoftState(s, term),
      running: () => this.phase === 'running',
      live,
      fail,
    });
    this.updatePeers();
  }

  // ---- events ----

  /** This node became leader (true) or stopped being leader (false). Returns the unsubscriber. */
  onLeadership(fn: (leader: boolean, term: number) => void): () => void {
    return this.leadership.add(fn);
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

  leaderId(): number {
    return this.phase === 'running' ? this.raw.status().lead : 0;
  }

  /** Raft's status, plus the membership in force, the last snapshot's index, the state machine's
   * applied index, and the jobs left to encode while a snapshot is being written (else null). */
  status(): CoreStatus {
    return {
      ...this.raw.status(),
      conf: this.applier.conf,
      snapshotIndex: this.snapshotter.index,
      appliedIndex: this.applier.applied,
      snapshotJobsLeft: this.snapshotter.jobsLeft,
    };
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
    switch (this.phase) {
      case 'running':
        return undefined;
      case 'failed':
        return new NodeUnavailableError(
          'unavailable',
          `node ${this.id} stopped on a fatal error and serves nothing (${this.fatalError?.kind ?? 'fail-stop'}); retry on another controller`,
        );
      default:
        return new NodeUnavailableError('unavailable', `node ${this.id} is shutting down; retry on another controller`);
    }
  }

  private notLeader(): NodeUnavailableError {
    const lead = this.leaderId();
    return lead === 0
      ? new NodeUnavailableError(
          'no-leader',
          'the cluster has no leader right now (an election is under way); retry shortly',
        )
      : new NodeUnavailableError('not-leader', `node ${this.id} is not the leader; the leader is node ${lead}`, lead);
  }

  private refusal(err: Parameters<typeof refusalError>[0]): NodeUnavailableError | ProposalRejectedError {
    return refusalError(err, () => this.notLeader());
  }

  // ---- leadership and peers ----

  private onSoftState(s: SoftState, term: number): void {
    const leader = s.state === StateType.Leader;
    this.opts.log.info(leader ? 'became leader' : 'following', { term, leader: s.lead });
    if (leader === this.leader) return;
    this.leader = leader;
    // A leader that steps down (check-quorum in a minority, a higher term seen) answers what it
    // still holds at once, so that clients move to the new leader instead of waiting out
    // PROPOSAL_TIMEOUT_MS: the reads were never confirmed, the writes may or may not commit.
    if (!leader) this.waiters.failAll(`node ${this.id} stopped being the leader (term ${term})`);
    this.leadership.emit(leader, term);
  }

  /**
   * Links to the other members. A node that is not a member itself (started with `join`, waiting to
   * be added) links to every listed controller: it must answer the leader's first append, or the
   * leader never learns that it needs a snapshot.
   */
  private updatePeers(): void {
    const conf = this.applier.conf;
    const members = new Set([...conf.voters, ...conf.learners]);
    const outside = !members.has(this.id);
    const peers = this.opts
      .addresses(this.applier.state)
      .filter((a) => (outside || members.has(a.id)) && a.id !== this.id);
    this.opts.peers.setPeers(peers);
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
      await this.transferBeforeStop();
    const failed = this.phase === 'failed';
    if (!failed) this.phase = 'stopping';
    this.stopTicking();
    await this.loop.idle();
    await this.snapshotter.idle();
    this.opts.peers.close();
    this.waiters.failAll(`node ${this.id} shut down`);
    await this.opts.logStore
      .close()
      .catch((err: unknown) => this.opts.log.warn('closing the log store failed', { error: String(err) }));
    await this.opts.snapshots
      .close()
      .catch((err: unknown) => this.opts.log.warn('closing the snapshot store failed', { error: String(err) }));
    if (!failed) this.phase = 'stopped';
  }

  private async transferBeforeStop(): Promise<void> {
    const target = this.bestTransferee();
    if (target === 0) return;
    this.opts.log.info('transferring leadership before stopping', { to: target });
    try {
      this.transferLeader(target);
      const until = this.opts.clock.now() + STOP_TRANSFER_MS_MAX;
      while (this.isLeader() && this.opts.clock.now() < until) await this.sleep(STOP_TRANSFER_POLL_MS);
    } catch (err) {
      this.opts.log.warn('leadership transfer failed; stopping anyway', { error: (err as Error).message });
    }
  }

  private bestTransferee(): number {
    const progress = this.raw.status().progress;
    let best = 0;
    let bestMatch = -1;
    for (const id of this.applier.conf.voters) {
      if (id === this.id || !this.opts.peers.connected(id)) continue;
      const match = progress.get(id)?.match ?? -1;
      if (match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    return best;
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
    const wasLeader = this.leader;
    const err = new ControllerFatalError(this.id, this.opts.dataDir, cause);
    this.fatalCause = err;
    this.phase = 'failed';
    this.stopTicking();
    this.opts.peers.close();
    this.opts.log.error(err.message, { cause: err.kind, dataDir: this.opts.dataDir });
    this.waiters.failAll(`node ${this.id} stopped on a fatal error`);
    if (wasLeader) {
      this.leader = false;
      this.leadership.emit(false, this.raw.status().term);
    }
    this.fatal.emit(err);
  }

  private stopTicking(): void {
    if (this.tickTimer === null) return;
    this.opts.clock.clearInterval(this.tickTimer);
    this.tickTimer = null;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((r) => this.opts.clock.setTimeout(r, ms));
  }
}

function pickPolicy(o: SnapshotPolicy): SnapshotPolicy {
  return {
    ...(o.snapshotEveryEntries !== undefined ? { snapshotEveryEntries: o.snapshotEveryEntries } : {}),
    ...(o.snapshotSliceJobs !== undefined ? { snapshotSliceJobs: o.snapshotSliceJobs } : {}),
    ...(o.snapshotSliceMs !== undefined ? { snapshotSliceMs: o.snapshotSliceMs } : {}),
    ...(o.snapshotBetweenSlices !== undefined ? { snapshotBetweenSlices: o.snapshotBetweenSlices } : {}),
    ...(o.snapshotCatchupEntries !== undefined ? { snapshotCatchupEntries: o.snapshotCatchupEntries } : {}),
  };
}
