// The additive rule for the task count: the job chooses within the profile's range (a whole number
// of at least 1); no `-n` means the range's `min` (1 without a range).

import { type MergeResult, reject } from './merge-result.js';
import type { Profile } from './profile-types.js';

/** A count outside what the profile allows: the field's values as written, and the sentence. */
export interface CountRefusal {
  readonly profileValue: string | null;
  readonly jobValue: string;
  readonly message: string;
}

/**
 * A count chosen within the profile's `{min, max}` (task count, service replicas): null means the
 * range's min (1 without a range); otherwise a whole number of at least `least`, inside the range.
 */
export function countInRange(
  profile: Profile,
  range: { readonly min: number; readonly max: number } | null,
  own: number | null,
  words: { readonly who: 'job' | 'service'; readonly noun: 'tasks' | 'replicas'; readonly least: number },
): number | CountRefusal {
  if (own === null) return range !== null ? range.min : 1;
  const rangeText = range === null ? null : `${range.min}-${range.max}`;
  if (!Number.isInteger(own) || own < words.least) {
    const what = words.noun === 'tasks' ? 'task count' : 'replica count';
    return {
      profileValue: rangeText,
      jobValue: String(own),
      message: `${words.who} asks for ${own} ${words.noun}: a ${what} is a whole number of at least ${words.least}`,
    };
  }
  if (range !== null && (own < range.min || own > range.max)) {
    return {
      profileValue: rangeText,
      jobValue: String(own),
      message: `${words.who} asks for ${own} ${words.noun} but application profile ${profile.name} requires between ${range.min} and ${range.max}${words.noun === 'tasks' ? ' tasks' : ''} (${words.noun}: {min: ${range.min}, max: ${range.max}})`,
    };
  }
  return own;
}

/** The job's task count, or the refusal. */
export function mergeTasks(profile: Profile, jobTasks: number | null): number | MergeResult {
  const n = countInRange(profile, profile.tasks, jobTasks, { who: 'job', noun: 'tasks', least: 1 });
  return typeof n === 'number' ? n : reject(profile, 'tasks', n.profileValue, n.jobValue, n.message);
}
