// The drill's vocabulary, shared by its pieces (drill.ts re-exports it): its limits and pacing,
// the options `runDrill` takes, the progress and report it gives, and the job rows it reads.

import type { CheckResult } from '../linearizability/checker.js';
import type { AttachOptions } from './target.js';
import type { FaultKind } from './schedule.js';

export const DRILL_DURATION_S_DEFAULT = 60;
/** Clients submitting jobs; each waits SUBMIT_PACE_MS between submits (bounded load). */
export const SUBMITTERS = 4;
export const SUBMIT_PACE_MS = 350;
/** Share of submits that are a job array of DRILL_ARRAY_SIZE elements (`MARKER[1-3]%2`). */
export const DRILL_ARRAY_CHANCE = 0.1;
export const DRILL_ARRAY_SIZE = 3;
/** Share of submits that depend on one of the drill's recent jobs (`-w`). */
export const DRILL_DEPENDENCY_CHANCE = 0.15;
/** Tries of a release, resume or host open after a hold, suspend or close (0.5 s apart). */
export const DRILL_UNDO_ATTEMPTS_MAX = 40;
/** `jobs.list` returns at most this many jobs (api/protocol.ts LIST_LIMIT_MAX). */
export const LIST_LIMIT = 10_000;
/** The drill stops submitting when it has this many jobs, so a full list stays complete. */
export const JOBS_MAX = 9_000;
export const CLIENT_DEADLINE_MS = 15_000;
export const QUIET_LIMIT_MS = 60_000;
/** Readings of every controller before the state check gives up waiting for one applied index. */
export const READ_ATTEMPTS_MAX = 5;
export const CHECK_STEPS_MAX = 20_000_000;

export interface DrillOptions {
  readonly duration_s: number;
  readonly seed: number;
  /** Event lines (faults, phases). */
  readonly log?: (line: string) => void;
  /** Called about once a second with the running figures. */
  readonly progress?: (p: DrillProgress) => void;
  /** Ctrl-C: stop the load and the faults, skip the checks, stop the cluster. */
  readonly signal?: AbortSignal;
  /** Only these fault kinds (default: every kind this machine allows). */
  readonly kinds?: readonly FaultKind[];
  /**
   * Go on past the duration until this many faults were injected (default 0). How many fit in a
   * duration depends on how fast the machine is; a test that needs a count asks for it here.
   */
  readonly minFaults?: number;
  /** Drive a running cluster instead of starting one (`xceadmin drill --attach`). */
  readonly attach?: AttachOptions;
}

export interface DrillProgress {
  readonly elapsed_s: number;
  readonly duration_s: number;
  readonly phase: string;
  readonly faults: number;
  readonly leaderKills: number;
  readonly submitsOk: number;
  readonly submitsUncertain: number;
  readonly reads: number;
}

export interface FaultRecord {
  readonly kind: FaultKind;
  readonly node: number;
  readonly at_ms: number;
  /** From the fault to the first acknowledged submit invoked after it; null when none came. */
  failover_ms: number | null;
  /** From the end of the fault (heal, resume, restart) until every controller is up, agrees on one leader and is caught up. */
  recovered_ms?: number;
  detail?: string;
  /** The shape of a partition: leader-minority, isolate-leader, leader-from-one, isolate-follower. */
  variant?: string;
}

export interface CheckOutcome {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** Not checked here (the detail says why); `ok` is true so it is no violation. */
  readonly skipped?: boolean;
}

export interface DrillReport {
  readonly seed: number;
  /** `own`: a cluster the drill started; `attached`: a running one (`xceadmin drill --attach`). */
  readonly target: 'own' | 'attached';
  readonly duration_s: number;
  readonly elapsed_s: number;
  readonly aborted: boolean;
  readonly faults: readonly FaultRecord[];
  readonly skipped: ReadonlyArray<{ kind: FaultKind; reason: string }>;
  readonly ops: Record<string, Record<string, number>>;
  readonly jobs: number;
  readonly snapshotInstalls: number;
  readonly checks: readonly CheckOutcome[];
  readonly linearizability: {
    verdict: CheckResult['verdict'];
    operations: number;
    steps: number;
    detail: string;
    check_ms: number;
  } | null;
  readonly violations: readonly string[];
}

/** A row of `jobs.list`. */
export interface JobRow {
  id: number;
  name: string | null;
  state: string;
  pendReason?: unknown;
  /** A folded job array's row. */
  array?: { size: number } | null;
}

/** What `jobs.show` answers (the fields the drill reads). */
export interface Details {
  id: number;
  name: string | null;
  state: string;
  runNumber: number;
  record: unknown;
  exitCode: number | null;
  pendReason?: unknown;
  /** Of an array (index null) or one of its elements. */
  array?: { id: number; name: string; index: number | null; size: number } | null;
}
