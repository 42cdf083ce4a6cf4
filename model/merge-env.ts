// The additive rule for env: the job adds variables, never redefines the profile's, and never sets
// XCE_* (reserved for what XCE sets itself; profiles are held to it at config load).

import { type MergeResult, reject } from './merge-result.js';
import type { EnvVar, Profile, WithOrigin } from './profile-types.js';

/** Environment variables with this prefix are set by XCE itself; neither a job nor a profile may set them. */
export const RESERVED_ENV_PREFIX = 'XCE_';

/** The name breaks the reservation of XCE_* (checked for jobs here and for profiles at config load). */
export function isReservedEnvName(name: string): boolean {
  return name.startsWith(RESERVED_ENV_PREFIX);
}

/** Both lists are sorted by name, so one linear merge finds additions and conflicts. */
export function mergeEnv(
  profile: Profile,
  jobEnv: readonly EnvVar[],
  wrappedEnv: readonly WithOrigin<EnvVar>[],
): WithOrigin<EnvVar>[] | MergeResult {
  const pe = profile.env;
  const out: WithOrigin<EnvVar>[] = new Array(pe.length + jobEnv.length);
  let n = 0;
  let i = 0;
  let k = 0;
  while (i < pe.length || k < jobEnv.length) {
    const a = pe[i];
    const b = jobEnv[k];
    if (b !== undefined && isReservedEnvName(b.name)) {
      return reject(
        profile,
        'env',
        null,
        `${b.name}=${b.value}`,
        `job sets environment variable ${b.name}, but the ${RESERVED_ENV_PREFIX} prefix is reserved for variables XCE sets itself; rename it`,
      );
    }
    if (b === undefined || (a !== undefined && a.name < b.name)) {
      out[n++] = wrappedEnv[i] as WithOrigin<EnvVar>;
      i++;
    } else if (a === undefined || b.name < a.name) {
      out[n++] = { value: b, origin: 'job' };
      k++;
    } else {
      if (a.value !== b.value) {
        const pv = `${a.name}=${a.value}`;
        const jv = `${b.name}=${b.value}`;
        return reject(
          profile,
          'env',
          pv,
          jv,
          `job sets env ${jv} but application profile ${profile.name} requires ${pv}; a job may add variables, not redefine the profile's`,
        );
      }
      out[n++] = wrappedEnv[i] as WithOrigin<EnvVar>;
      i++;
      k++;
    }
  }
  out.length = n;
  return out;
}
