// The additive rule for limits (runtime, memory, cpu, tasks): maximums in the profile, requests in
// the job, which may ask for less, never more; formatLimit writes one as an admin does.

import { LIMIT_KEYS, type LimitKey } from './limit-values.js';
import { type AdditiveRuleField, type MergeResult, reject } from './merge-result.js';
import type { JobOwnValues, Limits, Profile, WithOrigin } from './profile-types.js';
import { formatDuration, formatSize } from './units.js';

const LIMIT_FIELD: Record<LimitKey, AdditiveRuleField> = {
  runtime_s: 'limits.runtime',
  memory_bytes: 'limits.memory',
  cpu_s: 'limits.cpu',
  tasks: 'limits.tasks',
};

/** `24h`, `128G`, `4096`: a limit as an admin writes it. */
export function formatLimit(key: LimitKey, value: number): string {
  switch (key) {
    case 'runtime_s':
    case 'cpu_s':
      return formatDuration(value);
    case 'memory_bytes':
      return formatSize(value);
    case 'tasks':
      return String(value);
  }
}

/** Fills `limits` with the effective limits, each with its origin; returns the refusal, or null. */
export function mergeLimits(
  profile: Profile,
  jl: JobOwnValues['limits'],
  limits: { -readonly [K in keyof Limits]?: WithOrigin<number> },
): MergeResult | null {
  const pl = profile.limits;
  for (const key of LIMIT_KEYS) {
    const pv = pl[key];
    const jv = jl[key];
    if (jv !== undefined) {
      if (pv !== undefined && jv > pv) {
        const field = LIMIT_FIELD[key];
        const pText = formatLimit(key, pv);
        const jText = formatLimit(key, jv);
        return reject(
          profile,
          field,
          pText,
          jText,
          `job asks for ${field} ${jText} but application profile ${profile.name} allows at most ${pText}; a job may only ask for less`,
        );
      }
      limits[key] = { value: jv, origin: 'job' };
    } else if (pv !== undefined) {
      limits[key] = { value: pv, origin: 'profile' };
    }
  }
  return null;
}
