// The additive rule for a service's own values under a profile of kind service (brief, "Essentials
// and the additive rule"): restart policy, probes and named ports are the application's definition
// (profile values the service cannot set at all, so they are not among its own values); replicas
// work like the task range (a count within the profile's {min, max}; none given means min); spread
// and rollout bind when the profile sets them, otherwise the service's own stand. Consumed by the
// service supervision and replica-set work; defined here with the profile.

import type { ServiceSpec } from './config-types.js';
import { AdditiveRuleError } from './merge.js';
import { countInRange } from './merge-tasks.js';
import type { Profile, WithOrigin } from './profile-types.js';

export interface ServiceOwnValues {
  /** null: the profile's minimum (1 when the profile sets no range). */
  readonly replicas: number | null;
  readonly spread: ServiceSpec['spread'];
  readonly rollout: ServiceSpec['rollout'];
}

export interface EffectiveService {
  readonly replicas: WithOrigin<number>;
  readonly spread: WithOrigin<NonNullable<ServiceSpec['spread']>> | null;
  readonly rollout: WithOrigin<NonNullable<ServiceSpec['rollout']>> | null;
  /** Fixed by the profile. */
  readonly restart: ServiceSpec['restart'];
  readonly liveness: ServiceSpec['liveness'];
  readonly readiness: ServiceSpec['readiness'];
  readonly ports: ServiceSpec['ports'];
}

export type ServiceMergeResult =
  | { readonly ok: true; readonly effective: EffectiveService }
  | { readonly ok: false; readonly error: AdditiveRuleError };

function fail(
  profile: Profile,
  field: 'service' | 'service.replicas' | 'service.spread' | 'service.rollout',
  pv: string | null,
  jv: string,
  message: string,
): ServiceMergeResult {
  return { ok: false, error: new AdditiveRuleError(profile.name, field, pv, jv, message) };
}

function spreadText(s: NonNullable<ServiceSpec['spread']>): string {
  return `spread: {across: ${s.across}, max_skew: ${s.maxSkew}}`;
}

function rolloutText(r: NonNullable<ServiceSpec['rollout']>): string {
  return `rollout: {max_unavailable: ${r.maxUnavailable}, max_surge: ${r.maxSurge}}`;
}

export function mergeService(profile: Profile, own: ServiceOwnValues): ServiceMergeResult {
  const spec = profile.service as ServiceSpec | null;
  if (spec === null) {
    return fail(
      profile,
      'service',
      null,
      'kind: service',
      `application profile ${profile.name} is not a service profile (it has no service: section); run a service under a profile of kind service`,
    );
  }
  const replicas = mergeReplicas(profile, spec.replicas, own.replicas);
  if (!isWithOrigin(replicas)) return replicas;
  const spread = bindIfSet(profile, 'service.spread', spec.spread, own.spread, spreadText);
  if (spread !== null && !isWithOrigin(spread)) return spread;
  const rollout = bindIfSet(profile, 'service.rollout', spec.rollout, own.rollout, rolloutText);
  if (rollout !== null && !isWithOrigin(rollout)) return rollout;
  return {
    ok: true,
    effective: {
      replicas,
      spread,
      rollout,
      restart: spec.restart,
      liveness: spec.liveness,
      readiness: spec.readiness,
      ports: spec.ports,
    },
  };
}

function isWithOrigin<T>(x: WithOrigin<T> | ServiceMergeResult): x is WithOrigin<T> {
  return (x as WithOrigin<T>).origin !== undefined;
}

/** Replicas work like the task range: a count within the profile's, none given meaning its min (1 without one). */
function mergeReplicas(
  profile: Profile,
  range: ServiceSpec['replicas'],
  own: number | null,
): WithOrigin<number> | ServiceMergeResult {
  const n = countInRange(profile, range, own, { who: 'service', noun: 'replicas', least: 0 });
  if (typeof n !== 'number') return fail(profile, 'service.replicas', n.profileValue, n.jobValue, n.message);
  return { value: n, origin: own === null ? 'profile' : 'job' };
}

/** Spread and rollout: the profile's value binds when set (the service may restate it); else the service's stands. */
function bindIfSet<T extends object>(
  profile: Profile,
  field: 'service.spread' | 'service.rollout',
  pv: T | null,
  jv: T | null,
  text: (v: T) => string,
): WithOrigin<T> | ServiceMergeResult | null {
  if (pv === null) return jv === null ? null : { value: jv, origin: 'job' };
  if (jv !== null && text(jv) !== text(pv)) {
    return fail(
      profile,
      field,
      text(pv),
      text(jv),
      `service sets ${text(jv)} but application profile ${profile.name} requires ${text(pv)}`,
    );
  }
  return { value: pv, origin: 'profile' };
}
