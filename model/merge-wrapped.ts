// The profile's own terms wrapped with their origin (select, rusage, env), built once per Profile
// object and shared, immutable, by every merge with it: the scheduler re-merges many jobs with one
// profile.

import type { EnvVar, Profile, RusageItem, SelectExpr, WithOrigin } from './profile-types.js';

const NONE: readonly never[] = Object.freeze([]);

/** The profile's terms with their origin (see the top of this file). */
export interface ProfileWrapped {
  readonly select: readonly WithOrigin<SelectExpr>[];
  readonly rusage: readonly WithOrigin<RusageItem>[];
  readonly env: readonly WithOrigin<EnvVar>[];
}
const wrappedCache = new WeakMap<Profile, ProfileWrapped>();

export function wrapped(profile: Profile): ProfileWrapped {
  let w = wrappedCache.get(profile);
  if (w === undefined) {
    const fromProfile = <T>(value: T): WithOrigin<T> => Object.freeze({ value, origin: 'profile' as const });
    w = {
      select: (profile.resreq?.select ?? NONE).map(fromProfile),
      rusage: (profile.resreq?.rusage ?? NONE).map(fromProfile),
      env: profile.env.map(fromProfile),
    };
    wrappedCache.set(profile, w);
  }
  return w;
}
