// The additive rule for span, same and order (the brief's table: "set them if the profile does not;
// otherwise rejected"): the profile's value binds when it sets one, and a job that sets the same
// section is refused, even with the very same value (it is the profile's to set, and a restated
// value would silently stop being the job's own when the profile changes); the job's stands only
// when the profile sets none.

import { type MergeResult, reject } from './merge-result.js';
import type { OrderKey, Profile, Span, WithOrigin } from './profile-types.js';

export function isWithOrigin<T>(x: WithOrigin<T> | MergeResult): x is WithOrigin<T> {
  return (x as WithOrigin<T>).origin !== undefined;
}

/** span / same / order: the profile's binds when set (a job's own is refused); the job's stands only when the profile sets none. */
export function pick<T>(
  profile: Profile,
  field: 'span' | 'same' | 'order',
  pv: T | null,
  jv: T | null,
  equal: (a: T, b: T) => boolean,
  format: (v: T) => string,
): WithOrigin<T> | MergeResult | null {
  if (pv === null) return jv === null ? null : { value: jv, origin: 'job' };
  if (jv === null) return { value: pv, origin: 'profile' };
  const pText = format(pv);
  const jText = format(jv);
  return reject(
    profile,
    field,
    pText,
    jText,
    equal(pv, jv)
      ? `job sets ${jText}, which application profile ${profile.name} already sets; a job may set ${field}[...] only when its profile sets none, so leave it out`
      : `job sets ${jText} but application profile ${profile.name} requires ${pText}; a job may set ${field}[...] only when its profile sets none`,
  );
}

export function spanEqual(a: Span, b: Span): boolean {
  return a.ptile === b.ptile && a.hosts === b.hosts;
}

export function sameEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function orderEqual(a: readonly OrderKey[], b: readonly OrderKey[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as OrderKey;
    const y = b[i] as OrderKey;
    if (x.name !== y.name || x.descending !== y.descending) return false;
  }
  return true;
}
