// The additive rule: a job may add to its application profile's values, never change or remove
// them (spec/application-profile-brief.md, "Essentials and the additive rule"). One function serves
// submit validation, the scheduler's live re-merge of every pending job after a profile change, and
// `--dry-run`. It is on the scheduler's hot path, so the accepting path builds no strings: messages
// are built only when a job is refused.
//
// | profile attribute          | the job may                                                    |
// |----------------------------|----------------------------------------------------------------|
// | select terms               | add terms (ANDed; the profile's come first)                    |
// | rusage                     | add other resources; not change the profile's                  |
// | span / same / order        | set them when the profile sets none; otherwise refused (even restated) |
// | task range                 | choose within it; no `-n` means `min`                          |
// | env                        | add others; not redefine the profile's; never XCE_*            |
// | launch type, mode          | nothing (fixed)                                                |
// | limits                     | ask for less, never more                                       |
// | pre/post-exec              | add its own inner layer when job_pre_post_exec is allow        |//
// Each part's rule is a file of its own: merge-resreq.ts (select, rusage, compound) with
// merge-placement.ts (span / same / order), merge-tasks.ts, merge-env.ts, merge-limits.ts,
// merge-exec.ts; the answer and its error are merge-result.ts.

import { jobExecRefusal } from './merge-exec.js';
import { mergeEnv } from './merge-env.js';
import { mergeLimits } from './merge-limits.js';
import { isEffective, mergeJobResReq } from './merge-resreq.js';
import type { MergeResult } from './merge-result.js';
import { mergeTasks } from './merge-tasks.js';
import { wrapped } from './merge-wrapped.js';
import type { EffectiveValues, JobOwnValues, Limits, Profile, WithOrigin } from './profile-types.js';

export { isReservedEnvName, RESERVED_ENV_PREFIX } from './merge-env.js';
export { formatLimit } from './merge-limits.js';
export { type AdditiveRuleField, AdditiveRuleError, type MergeResult } from './merge-result.js';

/**
 * Merges a job's own values into its (resolved) profile. Never throws for a job's values; a job the
 * profile refuses comes back as `{ ok: false, error }` naming the profile value it would change.
 */
export function merge(profile: Profile, job: JobOwnValues): MergeResult {
  const w = wrapped(profile);
  const resreq = mergeJobResReq(profile, job.resreq, w);
  if (!isEffective(resreq)) return resreq;

  const tasks = mergeTasks(profile, job.tasks);
  if (typeof tasks !== 'number') return tasks;

  const env = mergeEnv(profile, job.env, w.env);
  if (!Array.isArray(env)) return env as MergeResult;

  const limits: { -readonly [K in keyof Limits]?: WithOrigin<number> } = {};
  const refusedLimit = mergeLimits(profile, job.limits, limits);
  if (refusedLimit !== null) return refusedLimit;

  const refusedExec = jobExecRefusal(profile, job);
  if (refusedExec !== null) return refusedExec;

  const effective: EffectiveValues = {
    profile: profile.name,
    mode: profile.mode,
    launchType: profile.launchType ?? 'serial',
    resreq,
    tasks,
    env,
    limits,
    profilePreExec: profile.preExec,
    profilePostExec: profile.postExec,
    jobPreExec: job.preExec,
    jobPostExec: job.postExec,
  };
  return { ok: true, effective };
}
