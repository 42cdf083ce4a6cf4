// loadConfig's rules for applications.yaml: each entry built into a Profile (profile-config.ts),
// an entry with shape errors still checked without its bad keys, names unique, and aliases that
// each resolve to exactly one real profile, in one step (no clash with a name, no chain).

import type { ConfigFile, Path } from './config-file.js';
import { type Parsed, rawNames, uniqueNames } from './config-parsed.js';
import { ProfileSchema } from './config-schema.js';
import { DEFAULT_PROFILE_NAME } from './config-types.js';
import { buildProfile, builtinDefaultProfile, type RawProfile } from './profile-config.js';
import type { Profile } from './profile-types.js';
import type { ResourceRef } from './resreq.js';

export interface ProfilesResult {
  readonly profiles: Map<string, Profile>;
  readonly aliases: Map<string, string>;
  /** Whether applications.yaml exists (without it the cluster has only the built-in `default`). */
  readonly fromFile: boolean;
  /** Every profile name written in the file, including entries with errors (for reference checks). */
  readonly names: ReadonlySet<string>;
}

export function checkApplications(
  parsed: Parsed,
  resources: ReadonlyMap<string, ResourceRef> | null,
): ProfilesResult | null {
  const p = parsed['applications.yaml'];
  if (p === undefined) {
    return {
      profiles: new Map([[DEFAULT_PROFILE_NAME, builtinDefaultProfile(DEFAULT_PROFILE_NAME)]]),
      aliases: new Map(),
      fromFile: false,
      names: new Set([DEFAULT_PROFILE_NAME]),
    };
  }
  if (p.data === null) return null;
  const { f, data } = p;
  // An entry whose shape is wrong is still checked without its bad keys (so a wrong `mode` does
  // not hide a resreq syntax error in the same entry); it never becomes a profile.
  const apps = data.applications.map((raw, i) => (raw !== null ? raw : salvageEntry(f, i)));
  uniqueNames(f, 'applications', apps, 'application profile');
  const profiles = new Map<string, Profile>();
  apps.forEach((raw, i) => {
    if (raw === null) return;
    const profile = buildProfile(f, ['applications', i], raw, resources);
    if (profile !== null && data.applications[i] !== null && !profiles.has(profile.name))
      profiles.set(profile.name, profile);
  });
  const names = rawNames(f, 'applications');
  const aliases = checkAliases(f, apps, names);
  return { profiles, aliases, fromFile: true, names };
}

/** Aliases: each resolves to exactly one real profile, in one step. Returns alias → profile. */
function checkAliases(
  f: ConfigFile,
  apps: ReadonlyArray<RawProfile | null>,
  names: ReadonlySet<string>,
): Map<string, string> {
  const aliasOwner = new Map<string, string>(); // alias → the profile listing it
  const aliases = new Map<string, string>();
  apps.forEach((raw, i) => {
    if (raw === null) return;
    (raw.aliases ?? []).forEach((alias, k) => {
      const path: Path = ['applications', i, 'aliases', k];
      if (alias === raw.name) {
        f.error(path, `alias "${alias}" of profile ${raw.name} is the profile's own name; remove it`);
      } else if (names.has(alias)) {
        const chained = apps.find((a) => a !== null && a.name === alias && (a.aliases ?? []).length > 0);
        f.error(
          path,
          `alias "${alias}" of profile ${raw.name} clashes with profile ${alias}: an alias cannot have a profile's name` +
            (chained !== undefined
              ? `; this would make an alias chain (${alias} has aliases of its own); aliases must name a profile directly`
              : ''),
        );
      } else if (aliasOwner.has(alias)) {
        const owner = aliasOwner.get(alias) as string;
        f.error(
          path,
          owner === raw.name
            ? `alias "${alias}" is listed twice in profile ${raw.name}`
            : `alias "${alias}" of profile ${raw.name} clashes with alias ${alias} of profile ${owner}: an alias resolves to one profile`,
        );
      } else {
        aliasOwner.set(alias, raw.name);
        aliases.set(alias, raw.name);
      }
    });
  });
  // An alias whose owner is itself listed as an alias elsewhere is a chain (X → A → B).
  for (const [alias, owner] of aliasOwner) {
    for (const other of apps) {
      if (other !== null && (other.aliases ?? []).includes(owner)) {
        const i = apps.findIndex((a) => a !== null && a.name === owner);
        const k = (apps[i]?.aliases ?? []).indexOf(alias);
        f.error(
          ['applications', i, 'aliases', k],
          `alias chain: ${alias} → ${owner} → ${other.name}; ${owner} is itself an alias of ${other.name}, so point ${alias} at ${other.name} directly`,
        );
      }
    }
  }
  return aliases;
}

/** A profile entry with its shape errors (already reported) removed, or null when nothing is left to check. */
function salvageEntry(f: ConfigFile, i: number): RawProfile | null {
  const raw = (f.value() as { applications?: unknown[] } | null)?.applications?.[i];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const first = ProfileSchema.safeParse(raw);
  if (first.success) return first.data;
  const bad = new Set<string>();
  for (const issue of first.error.issues) {
    if (issue.code === 'unrecognized_keys' && issue.path.length === 0) for (const k of issue.keys) bad.add(k);
    else if (issue.path.length > 0) bad.add(String(issue.path[0]));
  }
  if (bad.has('name')) return null;
  const rest = Object.fromEntries(Object.entries(raw).filter(([k]) => !bad.has(k)));
  const second = ProfileSchema.safeParse(rest);
  return second.success ? second.data : null;
}
