// Applying a SubmitFact: admission again, authoritatively (admission.ts: the profile, RBAC, the
// additive rule, as the leader checked before proposing), then the job, PEND, under the next job
// id in log order. A job array (`-J "sweep[1-1000]"`) is one job id whose elements are added here
// at once (arrays.ts); a dependency (`-w`) has its job names resolved against the state here.

import { admitSubmit } from './admission.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, SubmitFact } from './facts.js';
import { countActiveJobs } from './retention.js';
import { JOBS_MAX, type ControllerState, type JobDependency } from './state.js';
import { addArray, newJob } from './arrays.js';
import { resolveDependency } from './dependency.js';
import { notePending } from './finished-index.js';
import { noteNamed } from './name-index.js';
import { parseArrayName } from '../model/job-array.js';
import { ARRAY_JOB_ID_MAX } from '../model/job-id.js';

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

  const id = state.nextJobId;
  const parsed = parseArrayName(b.spec.jobName, config.cluster.arraySizeMax);
  const array = parsed.kind === 'array' ? parsed.spec : null;
  if (array !== null) {
    if (id > ARRAY_JOB_ID_MAX)
      return reject('invalid_array', `job id ${id} is above ${ARRAY_JOB_ID_MAX}, the largest that can hold an array`);
    if (state.jobs.size + array.indices.length > JOBS_MAX && countActiveJobs(state) + array.indices.length > JOBS_MAX)
      return reject(
        'too_many_jobs',
        `the array's ${array.indices.length} elements would take the controller past its limit of ${JOBS_MAX} active jobs`,
      );
  }
  let dependency: JobDependency | null = null;
  if (b.dependency !== null) {
    const ownName = array !== null ? array.name : b.spec.jobName;
    const r = resolveDependency(state, b.user, b.dependency, b.dependencyKill, id, ownName);
    if (!r.ok) return reject('invalid_dependency', r.message);
    dependency = r.dependency;
  }
  state.nextJobId++;
  const shared = {
    user: b.user,
    queue: b.queue,
    profile: recorded,
    profileRequested: b.profileRequested,
    spec: b.spec,
    submitTimeMs: timeMs,
    dependency,
  };
  if (array !== null) {
    // One fact, one array: the shared values once, the elements as compact pending jobs.
    addArray(state, { id, ...shared, name: array.name, limit: array.limit, indices: array.indices });
    noteNamed(state, b.user, array.name, id);
  } else {
    const job = newJob(id, shared);
    state.jobs.set(id, job);
    notePending(state, job);
    noteNamed(state, b.user, b.spec.jobName, id);
  }
  return { kind: 'submitted', jobId: id };
}
