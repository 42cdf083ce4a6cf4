// What `xcecli presets list|show|diff|check` compute, apart from printing: the site presets (from
// the controllers) and the user's (from their folder) side by side, a preset's values as command-line
// options with their origins, the difference between a user's copy and the site's current version,
// and each preset checked against the current profiles by the controller's own dry run.

import type { JobSpec } from '../../api/protocol.js';
import type { SitePresetDetail } from '../../api/responses.js';
import type { Diagnostic } from '../../model/config-types.js';
import { expandPresets, originLabel, presetLayers, type OriginRow } from '../../model/preset-expand.js';
import type { Preset } from '../../model/presets.js';
import { ApiError } from '../api-error.js';
import type { XceClient } from '../client.js';
import { getSitePreset, listSitePresets, sitePresetOf } from './site.js';
import { readUserPresets, type UserPreset } from './user-files.js';

export interface PresetRow {
  readonly name: string;
  readonly source: 'site' | 'user';
  readonly label: string;
  readonly hash: string;
  readonly app: string | null;
  readonly description: string | null;
  /** Where it lives: `presets/x.yaml` on the cluster, or the user's file. */
  readonly file: string;
  /** A user preset with the name of a site preset: it overrides the site's values it sets. */
  readonly shadowsSite: boolean;
}

export interface PresetListing {
  readonly presets: PresetRow[];
  readonly userDir: string;
  /** The user's preset files that failed their checks, each problem naming file, entry and field. */
  readonly problems: Diagnostic[];
}

export async function presetListing(c: XceClient, stale: boolean): Promise<PresetListing> {
  const user = readUserPresets();
  const site = (await listSitePresets(c, stale)).presets;
  const siteNames = new Set(site.map((p) => p.name));
  const rows: PresetRow[] = site.map((p) => ({ ...p, source: 'site', shadowsSite: false }));
  for (const u of user.presets.values()) {
    rows.push({
      name: u.preset.name,
      source: 'user',
      label: u.label,
      hash: u.hash,
      app: u.preset.values.app ?? null,
      description: u.preset.description,
      file: u.file,
      shadowsSite: siteNames.has(u.preset.name),
    });
  }
  rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.source < b.source ? -1 : 1));
  return { presets: rows, userDir: user.dir, problems: user.problems };
}

/** A preset's values as options (`-n`, `-e NAME`, ...), with the layer each comes from. */
export function optionRows(layers: ReadonlyArray<{ source: 'site' | 'user'; preset: Preset }>): OriginRow[] {
  return [...expandPresets(layers, {}).origins];
}

export interface PresetShow {
  readonly name: string;
  readonly site: SitePresetDetail | null;
  readonly user: UserPreset | null;
  /** What `--preset NAME` sets, each value with its origin (site or user). */
  readonly values: Array<{ option: string; value: string; origin: string }>;
}

export async function presetShow(c: XceClient, name: string, user: UserPreset | null, stale: boolean) {
  const site = await getSitePreset(c, name, stale);
  const sitePreset = site === null ? new Map<string, Preset>() : new Map([[name, sitePresetOf(site)]]);
  const userPreset = user === null ? new Map<string, Preset>() : new Map([[name, user.preset]]);
  const rows = optionRows(presetLayers([name], sitePreset, userPreset));
  const values = rows.map((r) => ({ option: r.option, value: r.value, origin: originLabel(r.origin) }));
  return { name, site, user, values } satisfies PresetShow;
}

export interface PresetChange {
  readonly option: string;
  /** The user's copy's value; null: the copy does not set it. */
  readonly user: string | null;
  /** The site's current value; null: the site preset does not set it. */
  readonly site: string | null;
}

/** Option by option, where the user's copy and the site's version differ (the description is not compared). */
export function presetChanges(user: Preset, site: Preset): PresetChange[] {
  const mine = new Map(optionRows([{ source: 'user', preset: user }]).map((r) => [r.option, r.value]));
  const theirs = new Map(optionRows([{ source: 'site', preset: site }]).map((r) => [r.option, r.value]));
  const options = [...new Set([...mine.keys(), ...theirs.keys()])];
  const changes: PresetChange[] = [];
  for (const option of options) {
    const u = mine.get(option) ?? null;
    const s = theirs.get(option) ?? null;
    if (u !== s) changes.push({ option, user: u, site: s });
  }
  return changes;
}

export interface PresetCheck {
  readonly name: string;
  readonly sources: ReadonlyArray<'site' | 'user'>;
  readonly ok: boolean;
  /** The controller's refusal (naming the profile value), null when accepted. */
  readonly refusal: string | null;
}

/**
 * Each preset (site and user, or only `names`) expanded alone and judged by the controller's dry run:
 * the same admission a submit gets, so a refusal names the profile value exactly as a submit would.
 */
export async function checkPresets(
  c: XceClient,
  names: readonly string[],
): Promise<{
  checks: PresetCheck[];
  problems: Diagnostic[];
}> {
  const listing = await presetListing(c, false);
  const user = readUserPresets();
  const wanted = names.length > 0 ? [...new Set(names)] : [...new Set(listing.presets.map((p) => p.name))];
  const checks: PresetCheck[] = [];
  for (const name of wanted.sort()) {
    const detail = await getSitePreset(c, name);
    const site = detail === null ? new Map<string, Preset>() : new Map([[name, sitePresetOf(detail)]]);
    const u = user.presets.get(name);
    const mine = u === undefined ? new Map<string, Preset>() : new Map([[name, u.preset]]);
    const layers = presetLayers([name], site, mine, user.dir);
    const sources = layers.map((l) => l.source);
    const probe: JobSpec = { command: ['true'], cwd: process.cwd() };
    const job = expandPresets(layers, probe).job;
    try {
      await c.submit(job, true);
      checks.push({ name, sources, ok: true, refusal: null });
    } catch (e) {
      if (!(e instanceof ApiError) || !['rejected', 'forbidden', 'not-found'].includes(e.code)) throw e;
      checks.push({ name, sources, ok: false, refusal: e.message });
    }
  }
  return { checks, problems: user.problems };
}
