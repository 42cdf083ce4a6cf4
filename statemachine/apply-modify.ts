// Applying a ModifyFact (`xcecli jobs modify`, LSF `bmod`): a pending job's values replaced by new
// ones. The new values pass the same admission as a submit (admission.ts: the queue and
// queue:submit on it, the profile and app:use on it, reserved env, the resource requirement, the
// additive rule against the NEW profile), here authoritatively; a running or finished job is
// refused. The change is kept in the job's events: who, when, and what changed.

import { admitSubmit } from './admission.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, JobSpec, ModifyFact } from './facts.js';
import { authorize } from '../model/rbac.js';
import { addJobEvent, editJob, type ControllerState } from './state.js';
import { arrayIdOf, formatJobId, isElementId } from '../model/job-id.js';
import { noteRenamed } from './name-index.js';

export function applyModify(state: ControllerState, b: ModifyFact, timeMs: number): ApplyResult {
  const job = state.jobs.get(b.jobId);
  if (job === undefined) {
    const what = state.arrays.has(b.jobId)
      ? `job array ${b.jobId} cannot be modified`
      : `job ${b.jobId} does not exist`;
    return reject(state.arrays.has(b.jobId) ? 'bad_state' : 'job_not_found', what);
  }
  // An element's queue, profile and spec are its array's, shared by every element (arrays.ts).
  if (isElementId(job.id))
    return reject(
      'bad_state',
      `job ${formatJobId(job.id)} is an element of job array ${arrayIdOf(job.id)}; an array element cannot be modified`,
    );
  const config = state.config?.cluster ?? null;
  if (config === null) return reject('no_config', 'the cluster has no configuration yet');
  if (b.user !== job.user) {
    const ok = authorize(config, b.user, 'job:control');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  if (job.state !== 'PEND') return reject('bad_state', modifyRefusedReason(job.id, job.state));
  const admitted = admitSubmit(config, b.user, b);
  if (!admitted.ok) return reject(admitted.code, admitted.message);
  const changes = describeChanges(
    { queue: job.queue, profile: job.profile, spec: job.spec },
    { queue: b.queue, profile: admitted.submit.profile, spec: b.spec },
  );
  const nameBefore = job.spec.jobName;
  const draft = editJob(state, job);
  draft.queue = b.queue;
  draft.profile = admitted.submit.profile;
  draft.profileRequested = b.profileRequested;
  draft.spec = b.spec;
  noteRenamed(state, job, nameBefore);
  draft.lastDecline = null;
  addJobEvent(draft, {
    action: 'modify',
    user: b.user,
    timeMs,
    detail: changes.length > 0 ? changes.join('; ') : 'no change',
  });
  return { kind: 'modified', jobId: job.id };
}

/** Why a job that is not pending cannot be modified. */
export function modifyRefusedReason(id: number, state: string): string {
  const what = state === 'RUN' || state === 'SUSP' ? 'running' : 'finished';
  return `job ${id} is ${state} (${what}); only a pending job can be modified (kill and resubmit it, or requeue it first)`;
}

interface Values {
  readonly queue: string;
  readonly profile: string | null;
  readonly spec: JobSpec;
}

const show = (v: string | number | null | undefined): string => (v === null || v === undefined ? '(none)' : String(v));

/** What a modify changed, one entry per option: `--app python -> openfoam`, `-n 4 -> 8`. */
export function describeChanges(a: Values, b: Values): string[] {
  const out: string[] = [];
  const diff = (what: string, x: string | number | null | undefined, y: string | number | null | undefined): void => {
    if (show(x) !== show(y)) out.push(`${what} ${show(x)} -> ${show(y)}`);
  };
  diff('--app', a.profile, b.profile);
  diff('-q', a.queue, b.queue);
  diff('-n', a.spec.tasks, b.spec.tasks);
  diff('-R', a.spec.resreq, b.spec.resreq);
  diff('--name', a.spec.jobName, b.spec.jobName);
  const lim = (s: JobSpec): string =>
    Object.entries(s.limits)
      .filter(([, v]) => v !== undefined && v !== 0)
      .map(([k, v]) => `${k}=${String(v)}`)
      .sort()
      .join(',');
  diff('-l', lim(a.spec) || null, lim(b.spec) || null);
  const env = (s: JobSpec): string => s.env.map((e) => `${e.name}=${e.value}`).join(',');
  diff('-e', env(a.spec) || null, env(b.spec) || null);
  return out;
}
