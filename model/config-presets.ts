// loadConfig's rules for site presets: the files under `presets/` beside the cluster configuration,
// one preset each (presets.ts checks each, `-R` against resources.yaml). An error refuses the
// configuration like any other file's; a preset that its profile would refuse (the additive rule),
// that names no profile or no queue, is a warning: presets carry no privilege, so the admin who
// changed a profile learns which site presets to change, and nothing is blocked.
//
// Site presets travel in the ConfigFact with the other files, so every controller serves the same
// version; they are never part of a job: a submit carries only the values a client expanded.

import { ConfigFile } from './config-file.js';
import type { ProfilesResult } from './config-profiles.js';
import type { Diagnostic, QueueConfig } from './config-types.js';
import { jobOwnValues } from './job-own-values.js';
import { merge } from './merge.js';
import { checkPreset, presetDiagnostics, presetHash } from './presets.js';
import type { Preset, SitePreset } from './preset-schema.js';

export type { SitePreset } from './preset-schema.js';
import type { Profile } from './profile-types.js';
import type { ResourceRef } from './resreq.js';

/** The folder of site presets inside a configuration directory (and the prefix of their file keys). */
export const PRESETS_DIR = 'presets';
/** Site presets a configuration may hold (each is a file of the ConfigFact). */
export const SITE_PRESETS_MAX = 200;

export interface SitePresetsInput {
  readonly files: ReadonlyArray<{ readonly key: string; readonly text: string }>;
  readonly resources: ReadonlyMap<string, ResourceRef> | null;
  readonly profiles: ProfilesResult | null;
  readonly defaultApplication: string | null;
  readonly queues: ReadonlyMap<string, QueueConfig> | null;
}

/** Every site preset by name, or null when one has an error; diagnostics are added to `out`. */
export function checkSitePresets(input: SitePresetsInput, out: Diagnostic[]): Map<string, SitePreset> | null {
  const presets = new Map<string, SitePreset>();
  let failed = false;
  if (input.files.length > SITE_PRESETS_MAX) {
    out.push({
      severity: 'error',
      file: PRESETS_DIR,
      message: `${input.files.length} site presets; at most ${SITE_PRESETS_MAX} are served`,
    });
    failed = true;
  }
  for (const { key, text } of input.files) {
    const f = new ConfigFile(key, text);
    const preset = checkPreset(f, input.resources);
    if (preset !== null) {
      presetWarnings(f, preset, input);
      presets.set(preset.name, { preset, file: key, text, hash: presetHash(preset) });
    } else failed = true;
    out.push(...presetDiagnostics(f));
  }
  return failed ? null : presets;
}

/** The profile a preset's jobs would get (its `app:`, else the cluster default), as the controller resolves it. */
function profileOf(preset: Preset, input: SitePresetsInput): Profile | null | undefined {
  const p = input.profiles;
  if (p === null) return undefined; // applications.yaml failed: nothing to check against
  const name = preset.values.app ?? input.defaultApplication;
  if (name === null) return undefined;
  return p.profiles.get(name) ?? p.profiles.get(p.aliases.get(name) ?? '') ?? null;
}

function presetWarnings(f: ConfigFile, preset: Preset, input: SitePresetsInput): void {
  const v = preset.values;
  if (v.queue !== undefined && input.queues !== null && !input.queues.has(v.queue))
    f.warning(['queue'], `queue ${v.queue} is not defined in queues.yaml; a job using this preset would be refused`);
  const profile = profileOf(preset, input);
  if (profile === null) {
    if (v.app === undefined) return;
    f.warning(['app'], `application profile ${v.app} is not defined; a job using this preset would be refused`);
    return;
  }
  if (profile === undefined) return;
  const r = merge(profile, jobOwnValues({ ...v, command: ['true'] }));
  if (r.ok) return;
  const field = r.error.field;
  const path = field.startsWith('limits.')
    ? field.split('.')
    : ['select', 'rusage', 'span', 'same', 'order', 'resreq'].includes(field)
      ? ['resreq']
      : [field === 'pre_exec' || field === 'post_exec' ? field : (field.split('.')[0] ?? field)];
  f.warning(
    path,
    `conflicts with application profile ${profile.name}: ${r.error.message}; a job using this preset would be refused (change the preset or the profile)`,
  );
}
