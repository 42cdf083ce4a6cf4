// The additive rule for the task count: the job chooses within the profile's range (a whole number
// of at least 1); no `-n` means the range's `min` (1 without a range).

import { type MergeResult, reject } from './merge-result.js';
import type { Profile } from './profile-types.js';

/** The job's task count, or the refusal. */
export function mergeTasks(profile: Profile, jobTasks: number | null): number | MergeResult {
  const range = profile.tasks;
  if (jobTasks === null) return range !== null ? range.min : 1;
  const tasks = jobTasks;
  if (!Number.isInteger(tasks) || tasks < 1) {
    return reject(
      profile,
      'tasks',
      range === null ? null : `${range.min}-${range.max}`,
      String(tasks),
      `job asks for ${tasks} tasks: a task count is a whole number of at least 1`,
    );
  }
  if (range !== null && (tasks < range.min || tasks > range.max)) {
    return reject(
      profile,
      'tasks',
      `${range.min}-${range.max}`,
      String(tasks),
      `job asks for ${tasks} tasks but application profile ${profile.name} requires between ${range.min} and ${range.max} tasks (tasks: {min: ${range.min}, max: ${range.max}})`,
    );
  }
  return tasks;
}
