// `xcecli jobs submit --preset NAME [--preset NAME2]`: the presets expanded into plain job values
// before anything is submitted (model/preset-expand.ts: site preset, the user's of the same name,
// later --preset flags, then the command line). A user preset file with a problem is refused here,
// naming file, entry and field, before the controller is asked anything; the controller gets only
// the expanded values and judges them exactly as typed ones.

import type { JobSpec } from '../../api/protocol.js';
import { JobValueError, jobSpecOf } from '../../model/job-own-values.js';
import { expandPresets, originLabel, presetLayers, PresetError, type OriginRow } from '../../model/preset-expand.js';
import type { Preset } from '../../model/presets.js';
import type { XceClient } from '../client.js';
import { UsageError } from '../submit-args.js';
import { getSitePreset, sitePresetOf } from './site.js';
import { readUserPreset, userPresetDir } from './user-files.js';

export interface ExpandedSubmit {
  readonly spec: JobSpec;
  /** The --preset names given (none: the spec is the command line's, unchanged). */
  readonly presets: readonly string[];
  readonly origins: readonly OriginRow[];
}

export async function expandForSubmit(
  c: XceClient,
  names: readonly string[],
  commandLine: JobSpec,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ExpandedSubmit> {
  if (names.length === 0) return { spec: commandLine, presets: [], origins: [] };
  const unique = [...new Set(names)];
  const user = new Map<string, Preset>();
  for (const n of unique) {
    const p = readUserPreset(n, env); // local files first: a bad one stops here
    if (p !== null) user.set(n, p.preset);
  }
  const site = new Map<string, Preset>();
  for (const n of unique) {
    const d = await getSitePreset(c, n);
    if (d !== null) site.set(n, sitePresetOf(d));
  }
  let expanded;
  try {
    expanded = expandPresets(presetLayers(names, site, user, userPresetDir(env)), commandLine);
  } catch (e) {
    if (e instanceof PresetError) throw new UsageError(e.message);
    throw e;
  }
  try {
    jobSpecOf(expanded.job);
  } catch (e) {
    if (e instanceof JobValueError) throw new UsageError(`after expanding the presets: ${e.field}: ${e.message}`);
    throw e;
  }
  // The dependency is no preset value: it is the command line's alone.
  const dep = {
    ...(commandLine.dependency !== undefined ? { dependency: commandLine.dependency } : {}),
    ...(commandLine.dependencyNever !== undefined ? { dependencyNever: commandLine.dependencyNever } : {}),
  };
  return { spec: { ...expanded.job, ...dep }, presets: names, origins: expanded.origins };
}

/** The answer as `--json` prints it: with presets, each job value's origin is added (`presetOrigins`). */
export function withOrigins(result: object, x: ExpandedSubmit): object {
  if (x.presets.length === 0) return result;
  const presetOrigins = x.origins.map((o) => ({
    option: o.option,
    field: o.field,
    value: o.value,
    origin: originLabel(o.origin),
  }));
  return { ...result, presets: x.presets, presetOrigins };
}

const shown = (v: string): string => (/[\s"']/.test(v) || v === '' ? JSON.stringify(v) : v);

/** `-n 128 (preset cfd-big, user)`, one value a line, under the dry run's profile section ('' without presets). */
export function renderOrigins(x: ExpandedSubmit): string {
  if (x.presets.length === 0) return '';
  const lines = [`Job values after --preset ${x.presets.join(' --preset ')} (what is submitted), with their origin`];
  for (const o of x.origins) {
    const text = /^-[el] /.test(o.option) ? `${o.option}=${shown(o.value)}` : `${o.option} ${shown(o.value)}`;
    lines.push(`  ${text.padEnd(46)} (${originLabel(o.origin)})`);
  }
  return lines.join('\n') + '\n';
}
