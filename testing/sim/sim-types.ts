// The whole-controller simulator's vocabulary (controller-sim.ts re-exports it): its limits and
// timings, the violations it reports, its options, statistics and result, and one simulated node.

import type { SeededRandom } from '../../raft/prng.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { ControllerCore } from '../../daemon/controller/core.js';
import type { MemoryDisk } from '../../daemon/controller/memory-stores.js';
import type { SimPeerPort } from './sim-network.js';
import type { NodeClock } from './virtual-clock.js';

/** Virtual milliseconds per Raft tick of the simulated controllers. */
export const SIM_TICK_MS = 20;
/** Election timeout in ticks (drawn in [5, 10) ticks = 100-200 ms). */
export const SIM_ELECTION_TICKS = 5;
/** Virtual time with faults before everything heals, drawn per seed. */
export const SIM_CHAOS_MS_MIN = 250;
export const SIM_CHAOS_MS_MAX = 900;
/** After healing: a leader, every write answered and all nodes at one applied index within this. */
export const SIM_SETTLE_BOUND_MS = 10_000;
/** A client gives up on an attempt after this long and retries the same sequence elsewhere. */
export const SIM_CLIENT_ATTEMPT_MS_MIN = 60;
export const SIM_CLIENT_ATTEMPT_MS_MAX = 400;
/** A proposal not applied within this fails as unavailable (the core's PROPOSAL_TIMEOUT_MS, scaled to the run). */
export const SIM_PROPOSAL_TIMEOUT_MS = 1_000;
/** Hard cap on events per seed (a livelock would otherwise run forever). */
export const SIM_EVENTS_MAX = 300_000;
/** Trace lines printed with a failure. */
export const SIM_TRACE_LINES_MAX = 300;
/** Probability that a newly elected leader crashes within 30 ms (chaos phase only). */
export const SIM_NEW_LEADER_CRASH_CHANCE = 0.1;

export type ViolationKind =
  | 'state-invariant'
  | 'result-divergence'
  | 'replica-divergence'
  | 'retry-result'
  | 'duplicate-apply'
  | 'lost-write'
  | 'election-safety'
  | 'fatal'
  | 'recovery'
  | 'liveness'
  | 'sim-error';

export class ControllerSimViolation extends Error {
  override readonly name = 'ControllerSimViolation';
  constructor(
    readonly kind: ViolationKind,
    detail: string,
  ) {
    super(`${kind}: ${detail}`);
  }
}

export interface ControllerSimOptions {
  readonly seed: number;
  readonly trace?: boolean;
  /** Give one node an apply that perturbs its state now and then (the checks must catch it). */
  readonly injectNondeterminism?: boolean;
}

export interface ControllerSimStats {
  nodes: number;
  events: number;
  virtualMs: number;
  elections: number;
  crashes: number;
  restarts: number;
  partitions: number;
  applies: number;
  snapshotsStored: number;
  snapshotsInstalled: number;
  restores: number;
  statesCompared: number;
  requests: number;
  attempts: number;
  acked: number;
  duplicateAnswers: number;
  configs: number;
  submitted: number;
  dispatched: number;
  declined: number;
  finished: number;
  controls: number;
  /**
   * Acknowledged: job arrays made, submits with a dependency, modifies, holds and releases, suspends
   * and resumes, host closes and opens.
   */
  arrays: number;
  dependencies: number;
  modified: number;
  holds: number;
  suspends: number;
  hostControls: number;
  /** Jobs that left the state by a CleanFact. */
  cleaned: number;
  /** Requests refused (not authorized, bad state, malformed): answered, nothing changed. */
  refused: number;
  lostWrites: number;
}

export interface ControllerSimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly error: Error | undefined;
  readonly trace: readonly string[];
  readonly stats: ControllerSimStats;
}

/** Every counter at zero, in the order the summary line prints them. */
export function emptyStats(nodes: number): ControllerSimStats {
  return {
    nodes,
    events: 0,
    virtualMs: 0,
    elections: 0,
    crashes: 0,
    restarts: 0,
    partitions: 0,
    applies: 0,
    snapshotsStored: 0,
    snapshotsInstalled: 0,
    restores: 0,
    statesCompared: 0,
    requests: 0,
    attempts: 0,
    acked: 0,
    duplicateAnswers: 0,
    configs: 0,
    submitted: 0,
    dispatched: 0,
    declined: 0,
    finished: 0,
    controls: 0,
    arrays: 0,
    dependencies: 0,
    modified: 0,
    holds: 0,
    suspends: 0,
    hostControls: 0,
    cleaned: 0,
    refused: 0,
    lostWrites: 0,
  };
}

/** One simulated controller: its disk (which outlives crashes) and its current incarnation. */
export interface SimNode {
  readonly id: number;
  readonly disk: MemoryDisk;
  /** Skew of this node's wall clock (the leader's clock goes into facts). */
  readonly offsetMs: number;
  /** Bumped at every start and crash: callbacks of an older incarnation are ignored. */
  inc: number;
  phase: 'down' | 'opening' | 'up';
  core: ControllerCore | undefined;
  clock: NodeClock | undefined;
  port: SimPeerPort | undefined;
  /** The state object last seen by apply: another object means a restore or an install. */
  lastState: ControllerState | undefined;
  /** fsync latency now (a stall raises it for a while). */
  fsyncMs: number;
  faulty: SeededRandom | undefined;
}
