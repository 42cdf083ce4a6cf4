// Limits from the dispatch record, applied as maximums to the job layer.
//
// Node cannot setrlimit on a child, so the job's wrapper shell sets them with `ulimit` after the
// identity switch and before `exec` of the job (one code path, no dependency: dash and bash both
// take -t and -v; util-linux `prlimit` would do the same from outside but is not everywhere).
// The limits are inherited by every process the job starts; they are PER PROCESS (RLIMIT_AS,
// RLIMIT_CPU), not a sum over the tree — a cgroup would be needed for that.
//   runtime_s     wall clock, enforced by the worker (job-run.ts): SIGTERM, then SIGKILL after a grace
//   memory_bytes  RLIMIT_AS (virtual memory), in KiB for `ulimit -v`; an allocation beyond it fails
//   cpu_s         RLIMIT_CPU: soft = the limit (SIGXCPU), hard = limit + CPU_HARD_GRACE_S (SIGKILL)
//   tasks         NOT mapped to RLIMIT_NPROC (that counts every process of the uid on the host and
//                 would make a 1-task job unable to fork); it bounds the task count: a start whose
//                 task count exceeds it is refused, and MPI launchers get `-np <tasks>`.

import type { StartInfo } from '../worker-protocol.js';
import { formatDuration } from '../../model/units.js';
import { LaunchError } from './launch-error.js';

export const CPU_HARD_GRACE_S = 5;

/** Shell commands (soft before hard: a hard limit below the current soft one is refused) (ending in `; ` when not empty) that set the limits; a failure exits 254 with an `xce-launch:` line. */
export function ulimitScript(limits: StartInfo['limits']): string {
  let s = '';
  if (limits.cpu_s !== undefined) {
    s += `ulimit -S -t ${limits.cpu_s} && ulimit -H -t ${limits.cpu_s + CPU_HARD_GRACE_S} || { echo "xce-launch: cannot set the cpu limit" >&2; exit 254; }; `;
  }
  if (limits.memory_bytes !== undefined) {
    s += `ulimit -v ${Math.ceil(limits.memory_bytes / 1024)} || { echo "xce-launch: cannot set the memory limit" >&2; exit 254; }; `;
  }
  return s;
}

/** Refuses a task count above the tasks limit. */
export function checkTasks(info: StartInfo): void {
  if (info.limits.tasks !== undefined && info.tasks > info.limits.tasks) {
    throw new LaunchError(`task count ${info.tasks} exceeds the tasks limit ${info.limits.tasks}`);
  }
}

export function runtimeReason(runtime_s: number): string {
  return `runtime limit ${formatDuration(runtime_s)} reached`;
}

export function cpuReason(cpu_s: number): string {
  return `cpu limit ${formatDuration(cpu_s)} reached`;
}
