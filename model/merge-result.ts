// What the additive rule answers (merge.ts): the effective values, or an AdditiveRuleError naming
// the profile, the field, and the profile's and the job's values as written.

import type { EffectiveValues, Profile } from './profile-types.js';

export type AdditiveRuleField =
  | 'resreq'
  | 'select'
  | 'rusage'
  | 'span'
  | 'same'
  | 'order'
  | 'tasks'
  | 'env'
  | 'limits.runtime'
  | 'limits.memory'
  | 'limits.cpu'
  | 'limits.tasks'
  | 'pre_exec'
  | 'post_exec'
  | 'service'
  | 'service.replicas'
  | 'service.spread'
  | 'service.rollout';

/** A job refused by its profile: names the profile, the field and the profile value as an admin wrote it. */
export class AdditiveRuleError extends Error {
  override readonly name = 'AdditiveRuleError';
  constructor(
    /** The resolved profile name. */
    readonly profile: string,
    readonly field: AdditiveRuleField,
    /** The profile's value as written, e.g. `rusage[license_foam=1]`, `24h`; null when the profile sets none. */
    readonly profileValue: string | null,
    /** The job's offending value as written, e.g. `rusage[license_foam=2]`. */
    readonly jobValue: string,
    message: string,
  ) {
    // A refusal is an expected answer, not a fault: the scheduler may refuse every pending job of a
    // tightened profile in one pass, so skip the stack trace (most of the cost of an Error).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
  }
}

export type MergeResult =
  | { readonly ok: true; readonly effective: EffectiveValues }
  | { readonly ok: false; readonly error: AdditiveRuleError };

export function reject(
  profile: Profile,
  field: AdditiveRuleField,
  profileValue: string | null,
  jobValue: string,
  message: string,
): MergeResult {
  return { ok: false, error: new AdditiveRuleError(profile.name, field, profileValue, jobValue, message) };
}
