// Applying a ConfigFact: the author's cluster:admin checked against the configuration in force,
// the files loaded (model/config.ts), and on success the new configuration installed, usage
// rebuilt against it, and the profiles removed that pending jobs still name reported.

import type { ClusterConfig } from '../model/config-types.js';
import { formatDiagnosticShort } from '../model/diagnostics.js';
import { loadConfig } from '../model/config.js';
import { resolveProfile } from '../model/profiles.js';
import { authorize } from '../model/rbac.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, ConfigFact, NameCount } from './facts.js';
import type { ControllerState } from './state.js';
import { rebuildUsage } from './usage.js';

/** `file entry field: message`, as the result reports a configuration's errors and warnings. */
const diagnosticText = formatDiagnosticShort;

export function applyConfig(state: ControllerState, b: ConfigFact): ApplyResult {
  const current = state.config?.cluster ?? null;
  if (current !== null && b.user !== null) {
    const ok = authorize(current, b.user, 'cluster:admin');
    if (!ok.allowed) return reject('not_authorized', ok.reason);
  }
  const loaded = loadConfig(b.files);
  if (!loaded.ok) {
    const dangling = loaded.errors.find((e) => e.field === 'default_application');
    const text = loaded.errors.slice(0, 10).map(diagnosticText).join('; ');
    const more = loaded.errors.length > 10 ? ` (and ${loaded.errors.length - 10} more)` : '';
    return dangling !== undefined
      ? reject('default_dangling', `configuration refused, the current one stays in force: ${text}${more}`)
      : reject('config_invalid', `configuration refused, the current one stays in force: ${text}${more}`);
  }
  const next = loaded.config;
  // loadConfig refuses a dangling default; this is the controller's own re-check (brief, "Default profile").
  const def = next.cluster.defaultApplication;
  if (!next.profiles.has(def)) {
    return reject(
      'default_dangling',
      `configuration refused, the current one stays in force: default_application ${def} names no application profile`,
    );
  }
  const inUse = removedInUse(state, current, next);
  state.config = { files: b.files.map((x) => ({ path: x.path, text: x.text })), cluster: next };
  rebuildUsage(state.usage, next, state.jobs.values());
  return {
    kind: 'configApplied',
    inUse,
    warnings: loaded.warnings.map(diagnosticText),
  };
}

/** Profiles and aliases the new configuration removes that pending jobs still name, with counts. */
function removedInUse(state: ControllerState, current: ClusterConfig | null, next: ClusterConfig): NameCount[] {
  const counts = new Map<string, number>();
  for (const j of state.jobs.values()) {
    if (j.state !== 'PEND' || j.profile === null) continue;
    counts.set(j.profile, (counts.get(j.profile) ?? 0) + 1);
  }
  const out: NameCount[] = [];
  for (const [name, n] of counts) {
    const before = current === null ? null : resolveProfile(current, name);
    if (before === null) continue; // not removed by this configuration: it was already missing
    if (resolveProfile(next, name) !== null) continue;
    out.push({ name, isAlias: before.profile.name !== name, pendingJobs: n });
  }
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}
