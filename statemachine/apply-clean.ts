// Applying a CleanFact: the named jobs that are still finished (DONE or EXIT) leave the state, and
// their final records go to `removed`, which the controller writes to its accounting store
// (daemon/accounting/) before anything without them is persisted. A named job that went back to
// PEND since the leader chose it (requeue, restart), or is gone, stays as it is; so does one that a
// pending job's dependency names. A job array leaves with its last element.

import type { ApplyResult, CleanFact } from './facts.js';
import { isFinished } from './retention.js';
import { removeJob, type ControllerState, type Job } from './state.js';
import { elementsOf } from './arrays.js';
import { referencedByPending } from './dependency.js';
import { noteUnfinished } from './finished-index.js';
import { noteArrayLeft, noteJobLeft } from './name-index.js';
import { arrayIdOf, isElementId } from '../model/job-id.js';

export function applyClean(state: ControllerState, b: CleanFact, removed: Job[] | undefined): ApplyResult {
  let count = 0;
  // A finished job a pending job's dependency names stays until that is decided (dependency.ts).
  const referenced = referencedByPending(state);
  const arrays = new Set<number>();
  for (const id of b.jobIds) {
    const job = state.jobs.get(id);
    if (job === undefined || !isFinished(job) || referenced.has(id)) continue;
    removeJob(state, job);
    noteUnfinished(state, job);
    noteJobLeft(state, job);
    removed?.push(job);
    count++;
    if (isElementId(id)) arrays.add(arrayIdOf(id));
  }
  // An array leaves with its last element.
  for (const a of arrays) {
    const array = state.arrays.get(a);
    if (array !== undefined && elementsOf(state, array).length === 0) {
      state.arrays.delete(a);
      noteArrayLeft(state, array);
    }
  }
  state.jobsCleaned += count;
  return { kind: 'cleaned', count };
}
