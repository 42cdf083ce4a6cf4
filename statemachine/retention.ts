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

/** At most this many job ids in one CleanFact (about 80 KiB of ids: one log entry of moderate size). */
export const CLEAN_BATCH_JOBS_MAX = 10_000;

export const isFinished = (j: Job): boolean => j.state === 'DONE' || j.state === 'EXIT';

/** Pending and running jobs (what JOBS_MAX bounds); linear in the state. */
export function countActiveJobs(state: ControllerState): number {
  let n = 0;
  for (const j of state.jobs.values()) if (!isFinished(j)) n++;
  return n;
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
 */
export function cleanCandidates(state: ControllerState, nowMs: number, limit = CLEAN_BATCH_JOBS_MAX): number[] {
  const { retentionMs, finishedMax } = retentionOf(state);
  const due: number[] = [];
  const kept: Job[] = [];
  const referenced = referencedByPending(state);
  for (const j of state.jobs.values()) {
    if (!isFinished(j) || referenced.has(j.id)) continue;
    if (j.endTimeMs + retentionMs <= nowMs) {
      if (due.length < limit) due.push(j.id);
    } else kept.push(j);
  }
  const over = kept.length - finishedMax;
  if (over > 0 && due.length < limit) {
    kept.sort((a, b) => a.endTimeMs - b.endTimeMs || a.id - b.id);
    for (let i = 0; i < over && due.length < limit; i++) due.push(kept[i]!.id);
    due.sort((a, b) => a - b);
  }
  return due;
}

/** The finished job that ended first (the oldest one retained), or null when none is. */
export function oldestFinishedJob(state: ControllerState): Job | null {
  let oldest: Job | null = null;
  for (const j of state.jobs.values()) {
    if (isFinished(j) && (oldest === null || j.endTimeMs < oldest.endTimeMs)) oldest = j;
  }
  return oldest;
}
