// Facts applied to a controller state by hand, for tests of the state machine and its users: a
// list of fact bodies at the next indexes, and the dispatch of a job as the scheduler would make it.
import assert from 'node:assert/strict';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord, type HostTasks } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { DispatchFact, FactBody } from '../statemachine/facts.js';
import { liveMerge } from '../statemachine/jobs.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import { testClusterFiles } from './test-cluster.js';

/** Applies `bodies` at the next indexes; a client's facts carry their index as the sequence. */
export function applyFacts(state: ControllerState, bodies: FactBody[], client: string | null = null): void {
  for (const body of bodies) {
    const index = state.appliedIndex + 1;
    apply(
      state,
      encodeFact({ clientId: client, sequence: client === null ? 0 : index, timeMs: 1_700_000_000_000 + index, body }),
      index,
    );
  }
}

/** The dispatch of the next run of job `jobId` to `hosts` (default: n1 with all its tasks), its record from the live merge. */
export function dispatchFact(state: ControllerState, jobId: number, hosts?: HostTasks[]): DispatchFact {
  const job = state.jobs.get(jobId);
  assert.ok(job !== undefined, `job ${jobId} exists`);
  const m = liveMerge(state.config?.cluster ?? null, job.profile, job.spec);
  assert.ok(m.ok, `job ${jobId} merges with its profile`);
  const placement = hosts ?? [{ host: 'n1', tasks: m.effective.tasks }];
  return {
    kind: 'dispatch',
    jobId,
    runNumber: job.runNumber + 1,
    placement,
    record: buildDispatchRecord(m.effective, m.hash, placement),
    schedulerHash: m.hash,
  };
}

/** The status `finished` (exit code 0 unless `over` says otherwise) of run `runNumber` of job `jobId`. */
export function finishedFact(
  jobId: number,
  runNumber = 1,
  over: { exitCode?: number; signal?: string | null; reason?: string | null; timeMs?: number } = {},
): FactBody {
  const status = { type: 'finished' as const, exitCode: 0, signal: null, reason: null, timeMs: 0, ...over };
  return { kind: 'status', jobId, runNumber, status };
}

/** The statuses of run 1 of job `jobId`: started as `pid`, then finished with exit code 0. */
export function ranFacts(jobId: number, pid: number): FactBody[] {
  return [{ kind: 'status', jobId, runNumber: 1, status: { type: 'started', pid, timeMs: 0 } }, finishedFact(jobId)];
}

/** A fresh state with the test cluster's configuration applied at index 1 (a fact of `timeMs`). */
export function configuredState(timeMs = 1_700_000_000_001): ControllerState {
  const state = emptyState();
  const body: FactBody = { kind: 'config', files: testClusterFiles(), user: null };
  apply(state, encodeFact({ clientId: null, sequence: 0, timeMs, body }), 1);
  return state;
}
