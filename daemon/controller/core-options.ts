// The controller core's options, defaults and status (core.ts re-exports them): what the daemon and
// the simulator hand to `ControllerCore.open`, what recovery gets of them, what `status()` answers, and the
// prefix of its read contexts (drawn from the seed).

import { SeededRandom } from '../../raft/prng.js';
import type { RawNode, Status } from '../../raft/rawnode.js';
import type { ConfState } from '../../raft/types.js';
import type { apply as statemachineApply } from '../../statemachine/apply.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { Logger } from '../log.js';
import type { Applier } from './applier.js';
import type { AccountingPort, ClockPort, LogStore, PeerPort, SnapshotStorePort, TracePort } from './ports.js';
import type { RecoveryOptions } from './recovery.js';
import type { SnapshotPolicy, Snapshotter } from './snapshotter.js';

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
  /** Opt-in per-hop timestamps of entries (daemon/submit-trace.ts); absent, nothing is traced. */
  readonly trace?: TracePort;
  /** The state machine's apply (default statemachine/apply.ts; the simulator injects faulty ones). */
  readonly apply?: typeof statemachineApply;
  /** Where cleaned jobs' records go (daemon/accounting/); none in the simulator. */
  readonly accounting?: AccountingPort;
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

/** Raft's status with the core's own figures (ControllerCore.status). */
export function coreStatus(raw: RawNode, applier: Applier, snapshotter: Snapshotter): CoreStatus {
  return {
    ...raw.status(),
    conf: applier.conf,
    snapshotIndex: snapshotter.index,
    appliedIndex: applier.applied,
    snapshotJobsLeft: snapshotter.jobsLeft,
  };
}

/** running: serving; stopping/stopped: graceful stop; crashed: crash(); failed: fail-stop. */
export type CorePhase = 'running' | 'stopping' | 'stopped' | 'crashed' | 'failed';

/** The snapshot policy among the options, without the keys left undefined. */
export function pickPolicy(o: SnapshotPolicy): SnapshotPolicy {
  return {
    ...(o.snapshotEveryEntries !== undefined ? { snapshotEveryEntries: o.snapshotEveryEntries } : {}),
    ...(o.snapshotSliceJobs !== undefined ? { snapshotSliceJobs: o.snapshotSliceJobs } : {}),
    ...(o.snapshotSliceMs !== undefined ? { snapshotSliceMs: o.snapshotSliceMs } : {}),
    ...(o.snapshotDuty !== undefined ? { snapshotDuty: o.snapshotDuty } : {}),
    ...(o.snapshotBetweenSlices !== undefined ? { snapshotBetweenSlices: o.snapshotBetweenSlices } : {}),
    ...(o.snapshotCatchupEntries !== undefined ? { snapshotCatchupEntries: o.snapshotCatchupEntries } : {}),
  };
}

/** What recovery.ts needs of the options, with the defaults filled in. */
export function recoveryOptions(opts: ControllerCoreOptions): RecoveryOptions {
  return {
    id: opts.id,
    log: opts.log,
    logStore: opts.logStore,
    snapshots: opts.snapshots,
    seed: opts.seed,
    bootstrapVoters: opts.bootstrapVoters,
    join: opts.join ?? false,
    electionTicks: opts.electionTicks ?? ELECTION_TICKS_DEFAULT,
    heartbeatTicks: opts.heartbeatTicks ?? HEARTBEAT_TICKS_DEFAULT,
  };
}

/** Read contexts are unique across nodes (the id) and across restarts (drawn from the seed). */
export function readPrefix(id: number, seed: number): string {
  const rng = new SeededRandom((seed ^ 0x5eed_c0de) >>> 0);
  return `${id}.${rng.nextU32().toString(16)}${rng.nextU32().toString(16)}`;
}
