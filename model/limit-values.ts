// A limit's value, a profile's maximum or a job's request: what the worker honours exactly
// (daemon/worker/limits.ts), so that the value the dry run shows, the record holds and the job
// runs with are one value. Checked where a limit is written: `config build` for a profile,
// submit (and apply) for a job. A value the worker would round or could not apply is refused,
// naming the value and what is allowed, never adjusted.
//
//   runtime  whole seconds, 1s to LIMIT_DURATION_S_MAX (the worker's timer counts exact milliseconds)
//   cpu      whole seconds, 1s to LIMIT_DURATION_S_MAX (RLIMIT_CPU; the hard limit a few seconds above)
//   memory   whole KiB, 1K to MEMORY_LIMIT_BYTES_MAX (RLIMIT_AS is set with `ulimit -v`, in KiB)
//   tasks    a task count, at least 1, stored as a UInt32 (Limits.tasks, schema/facts.capnp)

import { UINT32_MAX } from './field-ranges.js';
import type { Limits } from './profile-types.js';
import { formatDuration, formatSize } from './units.js';

/** The longest runtime or cpu limit (about 114 years): far inside what the worker times exactly. */
export const LIMIT_DURATION_S_MAX = 1_000_000 * 3600;
/** The unit of a memory limit: the worker applies it in KiB. */
export const MEMORY_LIMIT_UNIT_BYTES = 1024;
/** The largest memory limit (4P): its KiB and bytes stay exact integers. */
export const MEMORY_LIMIT_BYTES_MAX = 4 * 1024 ** 5;
export const TASKS_LIMIT_MAX = UINT32_MAX;

export type LimitKey = keyof Limits;
export const LIMIT_KEYS: readonly LimitKey[] = ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'];
/** Each limit by the name admins and users write (`limits.runtime`, `--limit runtime=`). */
export const LIMIT_NAMES: Readonly<Record<LimitKey, 'runtime' | 'memory' | 'cpu' | 'tasks'>> = {
  runtime_s: 'runtime',
  memory_bytes: 'memory',
  cpu_s: 'cpu',
  tasks: 'tasks',
};

function shown(key: LimitKey, value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) return String(value);
  if (key === 'memory_bytes') return formatSize(value);
  return key === 'tasks' ? String(value) : formatDuration(value);
}

/**
 * Why the worker could not honour `value` as the `key` limit exactly, or null when it can. The
 * sentence names the limit, the value and what is allowed; the caller puts where in front.
 */
export function limitValueProblem(key: LimitKey, value: number): string | null {
  const name = LIMIT_NAMES[key];
  const v = shown(key, value);
  if (value === 0)
    return `a ${name} limit of 0 would stop the job at once; give ${name === 'memory' ? '1K' : name === 'tasks' ? '1' : '1s'} or more, or leave the limit out`;
  if (!Number.isSafeInteger(value) || value < 0)
    return `a ${name} limit is a whole ${key === 'memory_bytes' ? 'number of bytes' : key === 'tasks' ? 'number' : 'number of seconds'} of at least 1, not ${v}`;
  switch (key) {
    case 'runtime_s':
    case 'cpu_s':
      return value > LIMIT_DURATION_S_MAX
        ? `a ${name} limit of ${v} is too long; at most ${formatDuration(LIMIT_DURATION_S_MAX)}`
        : null;
    case 'memory_bytes':
      if (value % MEMORY_LIMIT_UNIT_BYTES !== 0) {
        const up = Math.ceil(value / MEMORY_LIMIT_UNIT_BYTES);
        return `a memory limit of ${value} bytes is not a whole number of KiB: the worker applies memory limits in KiB, so give ${up > 1 ? `${up - 1}K or ` : ''}${up}K`;
      }
      return value > MEMORY_LIMIT_BYTES_MAX
        ? `a memory limit of ${v} is too large; at most ${formatSize(MEMORY_LIMIT_BYTES_MAX)}`
        : null;
    case 'tasks':
      return value > TASKS_LIMIT_MAX
        ? `a tasks limit of ${v} does not fit: Limits.tasks is a UInt32, so at most ${TASKS_LIMIT_MAX}`
        : null;
  }
}
