// Profile lookup for submit, the scheduler and the dispatch record: aliases resolve to their target
// everywhere (merge, hash, RBAC), and a job submitted without --app gets the cluster default's name.

import type { ClusterConfig } from './config-types.js';
import type { Profile } from './profile-types.js';

/** The profile a name stands for (itself or, for an alias, its target); null when neither exists. */
export function resolveProfile(config: ClusterConfig, name: string): { profile: Profile; recordedAs: string } | null {
  const direct = config.profiles.get(name);
  if (direct !== undefined) return { profile: direct, recordedAs: name };
  const target = config.aliases.get(name);
  if (target === undefined) return null;
  const profile = config.profiles.get(target);
  // loadConfig guarantees every alias names a real profile; a miss here is a broken config object.
  if (profile === undefined)
    throw new Error(`alias ${name} names profile ${target}, which is not in the configuration`);
  return { profile, recordedAs: name };
}

/** The pend / refusal reason for a job whose profile is gone (brief: "Profile removed while jobs use it"). */
export function profileNotDefinedReason(name: string): string {
  return `application profile ${name} is not defined`;
}

/**
 * The name a new submit records: the cluster default when the job names none, and an alias's target
 * (so the alias can be removed once old jobs drain). Unknown names are returned unchanged: the caller
 * refuses them with `profileNotDefinedReason`.
 */
export function profileNameForSubmit(config: ClusterConfig, requested: string | null): string {
  if (requested === null || requested === '') return config.cluster.defaultApplication;
  if (config.profiles.has(requested)) return requested;
  return config.aliases.get(requested) ?? requested;
}

/** `openfoam (recorded as openfoam-old)` for job details; just the name when no alias was involved. */
export function describeResolution(recordedAs: string, profile: Profile): string {
  return recordedAs === profile.name ? profile.name : `${profile.name} (recorded as ${recordedAs})`;
}
