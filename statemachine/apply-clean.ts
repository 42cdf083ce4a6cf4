// Applying a CleanFact: the named jobs that are still finished (DONE or EXIT) leave the state, and
// their final records go to `removed`, which the controller writes to its accounting store
// (daemon/accounting/) before anything without them is persisted. A named job that went back to
// PEND since the leader chose it (requeue, restart), or is gone, stays as it is.

import type { ApplyResult, CleanFact } from './facts.js';
import { isFinished } from './retention.js';
import type { ControllerState, Job } from './state.js';

export function applyClean(state: ControllerState, b: CleanFact, removed: Job[] | undefined): ApplyResult {
  let count = 0;
  for (const id of b.jobIds) {
    const job = state.jobs.get(id);
    if (job === undefined || !isFinished(job)) continue;
    state.jobs.delete(id);
    removed?.push(job);
    count++;
  }
  state.jobsCleaned += count;
  return { kind: 'cleaned', count };
}
