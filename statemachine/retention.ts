// Which finished jobs leave the replicated state, and the count the active-job limit reads.
// The LEADER asks `cleanCandidates` with its clock and proposes a CleanFact naming them; every
// controller then applies that fact (apply-clean.ts), so the state stays identical everywhere and
// no controller ever removes a job on a timer of its own. Pure: the time is passed in.
//
// A finished job (DONE or EXIT) is due when its retention is over (`finished_job_retention`
// after its end) or, beyond `finished_jobs_max` finished jobs, when it is among the oldest
// (by end time, then id) over the bound.

import { FINISHED_JOB_RETENTION_MS_DEFAULT, FINISHED_JOBS_MAX_DEFAULT } from '../model/config-types.js';
import type { ControllerState, Job } from './state.js';
import { referencedByPending } from './dependency.js';
import { finishedIndex } from './finished-index.js';

/** At most this many job ids in one CleanFact (about 80 KiB of ids: one log entry of moderate size). */
export const CLEAN_BATCH_JOBS_MAX = 10_000;

export const isFinished = (j: Job): boolean => j.state === 'DONE' || j.state === 'EXIT';

/** Pending and running jobs (what JOBS_MAX bounds): the jobs less the finished ones the end-time index holds. */
export function countActiveJobs(state: ControllerState): number {
  return state.jobs.size - finishedIndex(state).size;
}

/** The retention settings in force (the defaults before the first configuration). */
export function retentionOf(state: ControllerState): { readonly retentionMs: number; readonly finishedMax: number } {
  const c = state.config?.cluster.cluster;
  return {
    retentionMs: c?.finishedJobRetentionMs ?? FINISHED_JOB_RETENTION_MS_DEFAULT,
    finishedMax: c?.finishedJobsMax ?? FINISHED_JOBS_MAX_DEFAULT,
  };
}

/**
 * The finished jobs due to leave the state at time `nowMs` (the leader's clock), in id order, at
 * most `limit`: those whose retention is over, then the oldest of those beyond finished_jobs_max.
 * Reads the end-time index (finished-index.ts): the jobs due, the ones over the bound, and the
 * pending jobs with a dependency; not every job in the state.
 */
export function cleanCandidates(state: ControllerState, nowMs: number, limit = CLEAN_BATCH_JOBS_MAX): number[] {
  const { retentionMs, finishedMax } = retentionOf(state);
  const index = finishedIndex(state);
  if (index.size === 0 || limit <= 0) return [];
  const referenced = referencedByPending(state);
  let referencedFinished = 0;
  for (const id of referenced) if (index.has(id)) referencedFinished++;
  const due: number[] = [];
  let over = -1; // known once the due ones are passed
  for (const id of index.ascending()) {
    if (due.length >= limit) break;
    if (referenced.has(id)) continue;
    if (over < 0) {
      const j = state.jobs.get(id)!;
      if (j.endTimeMs + retentionMs <= nowMs) {
        due.push(id);
        continue;
      }
      // The first one kept by its retention: beyond the bound, the oldest of the kept ones go too.
      over = index.size - referencedFinished - due.length - finishedMax;
    }
    if (over <= 0) break;
    due.push(id);
    over--;
  }
  return due.sort((a, b) => a - b);
}

/** The finished job that ended first (the oldest one retained), or null when none is. */
export function oldestFinishedJob(state: ControllerState): Job | null {
  return finishedIndex(state).oldest();
}
