// Applying a SubmitFact: admission again, authoritatively (admission.ts: the profile, RBAC, the
// additive rule, as the leader checked before proposing), then the job, PEND, under the next job
// id in log order.

import { admitSubmit } from './admission.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, SubmitFact } from './facts.js';
import { countActiveJobs } from './retention.js';
import { JOBS_MAX, type ControllerState, type Job } from './state.js';

export function applySubmit(state: ControllerState, b: SubmitFact, timeMs: number): ApplyResult {
  const config = state.config?.cluster ?? null;
  if (config === null)
    return reject(
      'no_config',
      'the cluster has no configuration yet; an administrator must run `xceadmin config upgrade`',
    );
  // Finished jobs do not count (CleanFacts remove them): the state is counted only near the limit.
  if (state.jobs.size >= JOBS_MAX) {
    const active = countActiveJobs(state);
    if (active >= JOBS_MAX)
      return reject(
        'too_many_jobs',
        `the controller holds ${active} active jobs (pending and running), its limit is ${JOBS_MAX}; try again when some have finished`,
      );
  }
  // The same admission as the leader's early check (admission.ts), here authoritatively: a
  // profile removed since then is refused, never replaced by a fallback.
  const admitted = admitSubmit(config, b.user, b);
  if (!admitted.ok) return reject(admitted.code, admitted.message);
  const recorded = admitted.submit.profile;

  const id = state.nextJobId++;
  const job: Job = {
    id,
    state: 'PEND',
    user: b.user,
    queue: b.queue,
    profile: recorded,
    profileRequested: b.profileRequested,
    spec: b.spec,
    submitTimeMs: timeMs,
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
  };
  state.jobs.set(id, job);
  return { kind: 'submitted', jobId: id };
}
