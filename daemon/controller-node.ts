// One controller node as the daemon runs it: the controller core (daemon/controller/core.ts) wired
// to the real world. This file builds the adapters the core's ports ask for (the WAL and the LevelDB
// snapshot store under the data directory, the WebSocket peer links, Node's timers, a seed from
// the system's randomness) and hands every call to the core. The API, the scheduler and the worker
// hub sit on top and reach the replicated state only through `propose`, `readBarrier` and `state`.

import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import type { ConfChange } from '../raft/confchange.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import type { ApplyResult } from '../statemachine/facts.js';
import type { ControllerAddress } from '../model/config-types.js';
import { PeerTransport } from './peer-transport.js';
import { ChallengeBook, type DialTls } from './handshake.js';
import { deriveClusterKeys } from './keys.js';
import type { Logger } from './log.js';
import { ControllerCore, type CoreStatus } from './controller/core.js';
import { NodeUnavailableError, type ControllerFatalError } from './controller/errors.js';
import { Listeners } from './controller/listeners.js';
import { LevelSnapshotStore } from './controller/level-snapshot-store.js';
import { nodeClock } from './controller/node-clock.js';
import { WalLogStore } from './controller/wal-log-store.js';
import type { SnapshotPolicy } from './controller/snapshotter.js';
import { AccountingStore, AccountingStoreError } from './accounting/store.js';
import { accountingPort } from './accounting/port.js';
import { submitTrace } from './submit-trace.js';

export {
  ELECTION_TICKS_DEFAULT,
  HEARTBEAT_TICKS_DEFAULT,
  PENDING_PROPOSALS_MAX,
  PROPOSAL_TIMEOUT_MS,
  TICK_MS_DEFAULT,
} from './controller/core.js';
export { SNAPSHOT_CATCHUP_ENTRIES, SNAPSHOT_SLICE_JOBS, SNAPSHOT_SLICE_MS } from './controller/snapshotter.js';
export { SNAPSHOT_EVERY_ENTRIES_DEFAULT } from './controller/snapshot-schedule.js';
export { ControllerFatalError, NodeUnavailableError, ProposalRejectedError } from './controller/errors.js';

export interface ControllerNodeOptions extends SnapshotPolicy {
  readonly id: number;
  readonly dataDir: string;
  /** Controllers of the bootstrap configuration (the config directory's xce.yaml). */
  readonly bootstrapControllers: readonly ControllerAddress[];
  /** The cluster's root secret: the node derives its peer key from it (daemon/keys.ts). */
  readonly secret: Uint8Array;
  /** The nonces of handshakes this node receives (shared with the worker endpoint); a new book by default. */
  readonly challenges?: ChallengeBook;
  /** How to dial peers: TLS with this CA, or null (default) for plain ws (insecure_dev). */
  readonly tls?: DialTls | null;
  readonly log: Logger;
  readonly tick_ms?: number;
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  /** Start with no membership and wait to be added by the leader (`xceadmin cluster add-member`). */
  readonly join?: boolean;
  /** Seed for the core's randomness (tests); random by default. */
  readonly seed?: number;
  readonly walSegmentBytes?: number;
  /** Fault injection (tests, `xcectld --fault-wal-fail-after`): true fails that WAL save as a failed
   * fdatasync would (see WalLogStoreOptions.failSave). */
  readonly walFailSave?: () => boolean;
}

/** What `state` is before the node started (nothing applied). */
const NOT_STARTED_STATE: ControllerState = emptyState();

export class ControllerNode {
  readonly id: number;
  readonly transport: PeerTransport;
  private core: ControllerCore | null = null;
  private readonly fatal = new Listeners<[ControllerFatalError]>();
  private readonly leadership = new Listeners<[leader: boolean, term: number]>();
  private readonly fsync = new Listeners<[seconds: number]>();
  private readonly applied = new Listeners<[ReadonlyArray<{ index: number; result: ApplyResult }>]>();
  /** The accounting store (daemon/accounting/); null before start, or when it cannot be used. */
  accounting: AccountingStore | null = null;
  /** Why the accounting store cannot be used (its path and how to rebuild it); null when it can. */
  accountingError: string | null = null;

  constructor(private readonly opts: ControllerNodeOptions) {
    this.id = opts.id;
    this.transport = new PeerTransport({
      self: opts.id,
      key: deriveClusterKeys(opts.secret).peer,
      challenges: opts.challenges ?? new ChallengeBook(),
      tls: opts.tls ?? null,
      log: opts.log.child({ component: 'transport' }),
      onFrame: (from, frame) => this.core?.receive(from, frame),
    });
  }

  get log(): Logger {
    return this.opts.log;
  }

  /** The replicated state as of the last applied entry. */
  get state(): ControllerState {
    return this.core?.state ?? NOT_STARTED_STATE;
  }

  /** Opens the data directory, recovers state (snapshot + WAL replay), and starts ticking. */
  async start(): Promise<void> {
    const o = this.opts;
    privateDataDir(o.dataDir, o.log);
    const walLog = o.log.child({ component: 'wal' });
    const logStore = await WalLogStore.open({
      dataDir: o.dataDir,
      logger: walLog,
      ...(o.walSegmentBytes !== undefined ? { segmentBytes: o.walSegmentBytes } : {}),
      ...(o.walFailSave !== undefined ? { failSave: o.walFailSave } : {}),
    });
    let snapshots: LevelSnapshotStore | undefined;
    await this.openAccounting();
    const accounting = this.accounting;
    try {
      snapshots = await LevelSnapshotStore.open(o.dataDir);
      submitTrace?.node(o.id);
      this.core = await ControllerCore.open({
        id: o.id,
        log: o.log,
        logStore,
        snapshots,
        peers: this.transport,
        clock: nodeClock,
        seed: o.seed ?? randomBytes(4).readUInt32LE(0),
        bootstrapVoters: o.bootstrapControllers.map((c) => c.id),
        join: o.join ?? false,
        addresses: (state) =>
          (state.config?.cluster.cluster.controllers ?? o.bootstrapControllers).map((c) => ({
            id: c.id,
            address: `${c.host}:${c.port}`,
          })),
        dataDir: o.dataDir,
        ...(accounting !== null ? { accounting: accountingPort(accounting, o.log) } : {}),
        ...(submitTrace !== null ? { trace: submitTrace } : {}),
        ...pick(o, [
          'tick_ms',
          'electionTicks',
          'heartbeatTicks',
          'snapshotEveryEntries',
          'snapshotSliceJobs',
          'snapshotSliceMs',
          'snapshotDuty',
          'snapshotBetweenSlices',
          'snapshotCatchupEntries',
        ]),
      });
    } catch (err) {
      await snapshots?.close().catch(() => undefined);
      await logStore.close().catch(() => undefined);
      await accounting?.close().catch(() => undefined);
      throw err;
    }
    const core = this.core;
    // A store made afresh (the first start, or a rebuild) beside a state that has cleaned jobs
    // lacks every record cleaned before the state's index.
    if (accounting !== null && accounting.created && core.state.jobsCleaned > 0)
      await accounting.addGap(0, core.state.appliedIndex);
    core.onLeadership((leader, term) => this.leadership.emit(leader, term));
    core.onApplied((results) => this.applied.emit(results));
    core.onFsync((seconds) => this.fsync.emit(seconds));
    core.onFatal((err) => this.fatal.emit(err));
    core.start();
  }

  /** This node became leader (true) or stopped being leader (false). Returns the unsubscriber. */
  onLeadership(fn: (leader: boolean, term: number) => void): () => void {
    return this.leadership.add(fn);
  }

  /** A batch of entries was applied (their results, in log order). Returns the unsubscriber. */
  onApplied(fn: (results: ReadonlyArray<{ index: number; result: ApplyResult }>) => void): () => void {
    return this.applied.add(fn);
  }

  /** A persist that had to be durable took this long (metrics). Returns the unsubscriber. */
  onFsync(fn: (seconds: number) => void): () => void {
    return this.fsync.add(fn);
  }

  /** The node fail-stopped (a storage failure, a broken invariant): it serves nothing more. */
  onFatal(fn: (err: ControllerFatalError) => void): () => void {
    return this.fatal.add(fn);
  }

  /** Addresses of the members: the replicated configuration's, else the bootstrap one's. */
  addresses(): readonly ControllerAddress[] {
    return this.state.config?.cluster.cluster.controllers ?? this.opts.bootstrapControllers;
  }

  addressOf(id: number): string | null {
    const c = this.addresses().find((a) => a.id === id);
    return c === undefined ? null : `${c.host}:${c.port}`;
  }

  // ---- what the API, scheduler and worker hub use (see ControllerCore) ----

  isLeader(): boolean {
    return this.core?.isLeader() ?? false;
  }

  leaderId(): number {
    return this.core?.leaderId() ?? 0;
  }

  status(): CoreStatus {
    return this.started().status();
  }

  /** Peer frames refused since start, by reason (empty before start). */
  framesRefused(): ReadonlyMap<string, number> {
    return this.core?.framesRefused() ?? new Map();
  }

  matchIndexes(): Map<number, number> {
    return this.core?.matchIndexes() ?? new Map();
  }

  propose(fact: Uint8Array): Promise<ApplyResult> {
    return this.core?.propose(fact) ?? Promise.reject(notStarted(this.id));
  }

  proposeConfChange(cc: ConfChange): Promise<ApplyResult> {
    return this.core?.proposeConfChange(cc) ?? Promise.reject(notStarted(this.id));
  }

  transferLeader(to: number): void {
    this.started().transferLeader(to);
  }

  readBarrier(): Promise<void> {
    return this.core?.readBarrier() ?? Promise.reject(notStarted(this.id));
  }

  snapshotNow(): Promise<number> {
    return this.started().snapshotNow();
  }

  /** Graceful stop: hands leadership to the most caught-up peer first when leader. */
  async stop(opts: { transfer?: boolean } = {}): Promise<void> {
    if (this.core === null) {
      this.transport.close();
      await this.accounting?.close().catch(() => undefined);
      return;
    }
    await this.core.stop(opts);
    await this.accounting?.close().catch(() => undefined);
  }

  /** Opens the accounting store; one that cannot be used is reported, and the node runs without it. */
  private async openAccounting(): Promise<void> {
    try {
      this.accounting = await AccountingStore.open(this.opts.dataDir);
    } catch (err) {
      if (!(err instanceof AccountingStoreError)) throw err;
      this.accountingError = err.message;
      this.opts.log.error('accounting store unusable', { path: err.path, error: err.message });
    }
  }

  private started(): ControllerCore {
    if (this.core === null) throw notStarted(this.id);
    return this.core;
  }
}

function notStarted(id: number): NodeUnavailableError {
  return new NodeUnavailableError('unavailable', `node ${id} has not started yet; retry shortly`);
}

function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/**
 * The data directory holds password hashes (users.yaml in config facts) and job environments:
 * created owner-only (0700), and an existing one made so (logged once), whatever the umask. The
 * files below it (WAL segments 0600, LevelDB's own files) are then unreadable to other users too.
 */
function privateDataDir(dataDir: string, log: Logger): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const mode = statSync(dataDir).mode & 0o777;
  if (mode !== 0o700) {
    chmodSync(dataDir, 0o700);
    log.warn('made the data directory private to its owner (it holds password hashes and job environments)', {
      dataDir,
      was: mode.toString(8),
      now: '700',
    });
  }
}
