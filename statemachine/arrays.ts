// Job arrays in the state: the array's shared values once (state.ts JobArray), and its elements as
// jobs under their element ids (model/job-id.ts) that share those values by reference. Pure.

import { parseArrayName } from '../model/job-array.js';
import { arrayIdOf, elementId, isElementId } from '../model/job-id.js';
import { notePending } from './finished-index.js';
import type { ControllerState, Job, JobArray, JobState } from './state.js';

/** What an array is made from (a submit, or a snapshot's entry); name, limit and indices come from spec.jobName. */
export type ArrayShared = Pick<
  JobArray,
  'id' | 'user' | 'queue' | 'profile' | 'profileRequested' | 'spec' | 'submitTimeMs' | 'dependency'
>;

/** The array of `shared`; null when its jobName is not an array name (a corrupt record). */
export function makeArray(shared: ArrayShared): JobArray | null {
  const p = parseArrayName(shared.spec.jobName, Number.MAX_SAFE_INTEGER);
  if (p.kind !== 'array') return null;
  return { ...shared, name: p.spec.name, limit: p.spec.limit, indices: p.spec.indices };
}

/** A pending job with nothing run yet: a new submit's job, or an array's element. */
export function newJob(id: number, a: Omit<ArrayShared, 'id'>): Job {
  return {
    id,
    state: 'PEND',
    user: a.user,
    queue: a.queue,
    profile: a.profile,
    profileRequested: a.profileRequested,
    spec: a.spec,
    submitTimeMs: a.submitTimeMs,
    runNumber: 0,
    requeueCount: 0,
    record: null,
    dispatchTimeMs: 0,
    started: false,
    pid: 0,
    startTimeMs: 0,
    endTimeMs: 0,
    exitCode: 0,
    signal: null,
    reason: null,
    killRequestedBy: null,
    lastDecline: null,
    heldBy: null,
    events: [],
    dependency: a.dependency,
  };
}

/** Adds the array and one pending element per index. */
export function addArray(state: ControllerState, array: JobArray): void {
  state.arrays.set(array.id, array);
  for (const i of array.indices) {
    const id = elementId(array.id, i);
    const job = newJob(id, array);
    state.jobs.set(id, job);
    notePending(state, job);
  }
}

/** The array a job id names as a whole, or the element's array; undefined for a plain job. */
export function arrayOf(state: ControllerState, id: number): JobArray | undefined {
  return state.arrays.get(isElementId(id) ? arrayIdOf(id) : id);
}

/** The array's elements still in the state, in index order. */
export function elementsOf(state: ControllerState, array: JobArray): Job[] {
  const out: Job[] = [];
  for (const i of array.indices) {
    const j = state.jobs.get(elementId(array.id, i));
    if (j !== undefined) out.push(j);
  }
  return out;
}

/** Elements per state (the folded line of `jobs list`). */
export function countByState(jobs: readonly Job[]): Record<JobState, number> {
  const c: Record<JobState, number> = { PEND: 0, RUN: 0, SUSP: 0, DONE: 0, EXIT: 0 };
  for (const j of jobs) c[j.state]++;
  return c;
}
