// Jobs and the live merge (spec/application-profile-brief.md, "Dispatch record", "Profile removed
// while jobs use it"). A pending job follows the CURRENT profile: its effective values are merged
// on demand from its recorded profile name (resolved through aliases) and its own values, never
// stored. A job whose profile is gone pends with "application profile X is not defined"; one its
// changed profile no longer admits pends with the conflict; putting the profile back releases it
// with no state change. A dispatched job uses only its frozen record.

import { DependencyEvaluator } from './dependency.js';
import type { ClusterConfig } from '../model/config-types.js';
import type { JobSpec, SubmitFact } from './facts.js';
import { merge } from '../model/merge.js';
import { builtinDefaultProfile } from '../model/profile-config.js';
import { profileHash } from '../model/profile-hash.js';
import { ownValues } from '../model/job-own-values.js';
import type { EffectiveValues, JobOwnValues, Profile } from '../model/profile-types.js';
import { profileNameForSubmit, profileNotDefinedReason, resolveProfile } from '../model/profiles.js';
import { ResReqSyntaxError } from '../model/resreq.js';
import type { ControllerState, Job } from './state.js';

/**
 * The profile of a job recorded before profiles existed: no attributes, mode direct (today's
 * behaviour for old records). Its records carry no profile name and no hash.
 */
export const NO_PROFILE: Profile = Object.freeze(builtinDefaultProfile('(none)'));

const hashCache = new WeakMap<Profile, string>();

/** The profile's content hash (hex), computed once per profile object (profiles are immutable). */
export function hashOf(profile: Profile): string {
  let h = hashCache.get(profile);
  if (h === undefined) {
    h = profileHash(profile);
    hashCache.set(profile, h);
  }
  return h;
}

export type LiveMergeCode = 'no_config' | 'profile_not_defined' | 'resreq_syntax' | 'additive_rule';

export type LiveMerge =
  | {
      readonly ok: true;
      /** null for a job recorded before profiles (NO_PROFILE was merged). */
      readonly profile: Profile | null;
      readonly hash: string | null;
      readonly effective: EffectiveValues;
    }
  | { readonly ok: false; readonly code: LiveMergeCode; readonly reason: string };

/** Merges a job (its recorded profile, resolved now, and its own values) as the scheduler and submit see it. */
export function liveMerge(config: ClusterConfig | null, profileName: string | null, spec: JobSpec): LiveMerge {
  if (config === null) return { ok: false, code: 'no_config', reason: 'the cluster has no configuration yet' };
  let profile: Profile | null = null;
  if (profileName !== null) {
    const resolved = resolveProfile(config, profileName);
    if (resolved === null)
      return { ok: false, code: 'profile_not_defined', reason: profileNotDefinedReason(profileName) };
    profile = resolved.profile;
  }
  let own: JobOwnValues;
  try {
    own = ownValues(spec);
  } catch (e) {
    if (e instanceof ResReqSyntaxError)
      return { ok: false, code: 'resreq_syntax', reason: `resource requirement: ${e.message}` };
    throw e;
  }
  const m = merge(profile ?? NO_PROFILE, own);
  if (!m.ok) return { ok: false, code: 'additive_rule', reason: m.error.message };
  return { ok: true, profile, hash: profile === null ? null : hashOf(profile), effective: m.effective };
}

/** The live merge of a job in the state (pending jobs; running ones use their record). */
export function jobLiveMerge(state: ControllerState, job: Job): LiveMerge {
  return liveMerge(state.config?.cluster ?? null, job.profile, job.spec);
}

/**
 * Why a pending job is not running, or null when it is not pending. A hold comes first, then the
 * live merge (profile gone, profile no longer admits the job), then the last declined dispatch,
 * then the wait.
 */
export function pendReason(state: ControllerState, job: Job): string | null {
  if (job.state !== 'PEND') return null;
  if (job.heldBy !== null) return heldReason(job.heldBy);
  const m = jobLiveMerge(state, job);
  if (!m.ok) return m.reason;
  if (job.dependency !== null) {
    const d = new DependencyEvaluator(state).reason(job.dependency);
    if (d !== null) return d;
  }
  return job.lastDecline ?? 'waiting for the scheduler';
}

/** The pend reason of a held job (`jobs hold`). */
export const heldReason = (user: string): string => `held by user ${user}`;

/** Pending jobs in id order that may be scheduled (the scheduler's input): held ones are skipped. */
export function* pendingJobs(state: ControllerState): Generator<Job> {
  for (const j of state.jobs.values()) if (j.state === 'PEND' && j.heldBy === null) yield j;
}

const NO_DEPENDENCY = { dependency: null, dependencyKill: false } as const;

/** The SubmitFact body the leader proposes: the profile as recorded (alias target, or the default). */
export function submitFactFor(
  config: ClusterConfig,
  user: string,
  queue: string,
  requested: string | null,
  spec: JobSpec,
  dependency: { readonly dependency: string | null; readonly dependencyKill: boolean } = NO_DEPENDENCY,
): SubmitFact {
  return {
    kind: 'submit',
    user,
    queue,
    spec,
    profile: profileNameForSubmit(config, requested),
    profileRequested: requested,
    dependency: dependency.dependency,
    dependencyKill: dependency.dependencyKill,
  };
}
