// The additive rule for a service's own values under a profile of kind service (brief, "Essentials
// and the additive rule"): restart policy, probes and named ports are the application's definition
// (profile values the service cannot set at all, so they are not among its own values); replicas
// work like the task range (a count within the profile's {min, max}; none given means min); spread
// and rollout bind when the profile sets them, otherwise the service's own stand. Consumed by the
// service supervision and replica-set work; defined here with the profile.

import type { ServiceSpec } from './config-types.js';
import { AdditiveRuleError } from './merge.js';
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

  let replicas: WithOrigin<number>;
  const range = spec.replicas;
  if (own.replicas === null) {
    replicas = { value: range !== null ? range.min : 1, origin: 'profile' };
  } else {
    if (!Number.isInteger(own.replicas) || own.replicas < 0) {
      return fail(
        profile,
        'service.replicas',
        null,
        String(own.replicas),
        `a replica count is a whole number of at least 0, not ${own.replicas}`,
      );
    }
    if (range !== null && (own.replicas < range.min || own.replicas > range.max)) {
      return fail(
        profile,
        'service.replicas',
        `${range.min}-${range.max}`,
        String(own.replicas),
        `service asks for ${own.replicas} replicas but application profile ${profile.name} requires between ${range.min} and ${range.max} (replicas: {min: ${range.min}, max: ${range.max}})`,
      );
    }
    replicas = { value: own.replicas, origin: 'job' };
  }

  let spread: EffectiveService['spread'] = null;
  if (spec.spread !== null) {
    const p = spec.spread;
    if (own.spread !== null && (own.spread.across !== p.across || own.spread.maxSkew !== p.maxSkew)) {
      return fail(
        profile,
        'service.spread',
        spreadText(p),
        spreadText(own.spread),
        `service sets ${spreadText(own.spread)} but application profile ${profile.name} requires ${spreadText(p)}`,
      );
    }
    spread = { value: p, origin: 'profile' };
  } else if (own.spread !== null) spread = { value: own.spread, origin: 'job' };

  let rollout: EffectiveService['rollout'] = null;
  if (spec.rollout !== null) {
    const p = spec.rollout;
    if (
      own.rollout !== null &&
      (own.rollout.maxUnavailable !== p.maxUnavailable || own.rollout.maxSurge !== p.maxSurge)
    ) {
      return fail(
        profile,
        'service.rollout',
        rolloutText(p),
        rolloutText(own.rollout),
        `service sets ${rolloutText(own.rollout)} but application profile ${profile.name} requires ${rolloutText(p)}`,
      );
    }
    rollout = { value: p, origin: 'profile' };
  } else if (own.rollout !== null) rollout = { value: own.rollout, origin: 'job' };

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
