// The additive rule for pre/post-exec: the profile's are the outer layer, always run; a job adds its
// own inner layer only when the profile's job_pre_post_exec is allow.

import { type MergeResult, reject } from './merge-result.js';
import type { JobOwnValues, Profile } from './profile-types.js';

/** The refusal of a job's own pre/post-exec under `job_pre_post_exec: forbid`, or null. */
export function jobExecRefusal(profile: Profile, job: JobOwnValues): MergeResult | null {
  if (profile.jobPrePostExec === 'forbid') {
    if (job.preExec !== null) return forbidExec(profile, 'pre_exec', job.preExec);
    if (job.postExec !== null) return forbidExec(profile, 'post_exec', job.postExec);
  }
  return null;
}

function forbidExec(profile: Profile, field: 'pre_exec' | 'post_exec', command: string): MergeResult {
  const what = field === 'pre_exec' ? 'pre-exec' : 'post-exec';
  return reject(
    profile,
    field,
    'job_pre_post_exec: forbid',
    command,
    `job sets its own ${what} ${JSON.stringify(command)} but application profile ${profile.name} forbids a job's own pre/post-exec (job_pre_post_exec: forbid)`,
  );
}
