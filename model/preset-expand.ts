// Preset expansion (client side, brief "Presets"): `--preset A --preset B` and the command line
// become plain job values, and only those are submitted. Pure, so that xcecli and a portal (the
// client library exports it) get identical results.
//
// Order, each layer overriding the ones before it:
//   | 1 | site preset A        | deployed by the admin beside the cluster configuration |
//   | 2 | user preset A        | ~/.config/xce/presets/A.yaml, overriding the site's A  |
//   | 3 | site, then user B    | each later --preset, in the order given                |
//   | 4 | the command line     | what the user typed                                    |
// A later layer replaces an earlier one's value for an option as a whole: `-n`, `-R`, `-q`, `--app`,
// `-J`, `-o`, `--error`, `--pre-exec`, `--post-exec`. `-e NAME=...` and `-l NAME=...` are one
// option per NAME: a later layer replaces that variable or limit and keeps the others.
//
// The result carries each value's origin, so `--dry-run` can say `-n 128 (preset cfd-big, user)`.
// Expansion never judges values against a profile: the controller applies the additive rule to the
// result exactly as to typed values, so a preset can never do what a user could not type.

import type { JobValues, Preset, PresetSource } from './preset-schema.js';

export interface PresetLayer {
  readonly source: PresetSource;
  readonly preset: Preset;
}

export type ValueOrigin =
  | { readonly kind: 'preset'; readonly preset: string; readonly source: PresetSource }
  | { readonly kind: 'command line' };

/** One job value and where it came from: `-n` `128` (preset cfd-big, user). */
export interface OriginRow {
  /** The value's key in JobValues, dotted for env and limits: `tasks`, `env.FOAM_X`, `limits.runtime`. */
  readonly field: string;
  /** The command-line flag that sets it: `-n`, `-e FOAM_X`, `-l runtime`. */
  readonly option: string;
  readonly value: string;
  readonly origin: ValueOrigin;
}

export interface Expansion<T extends JobValues> {
  readonly job: T;
  /** In the order of FIELDS, env and limits by name. */
  readonly origins: readonly OriginRow[];
}

export class PresetError extends Error {
  override readonly name = 'PresetError';
}

type Scalar = Exclude<keyof JobValues, 'env' | 'limits'>;

/** The whole-value options, in the order a dry run lists them, with their flags. */
export const SCALAR_OPTIONS: ReadonlyArray<readonly [Scalar, string]> = [
  ['app', '--app'],
  ['queue', '-q'],
  ['name', '-J'],
  ['tasks', '-n'],
  ['resreq', '-R'],
  ['stdout', '-o'],
  ['stderr', '--error'],
  ['preExec', '--pre-exec'],
  ['postExec', '--post-exec'],
];

/**
 * The layers `--preset` names give, in expansion order: for each name its site preset, then the
 * user's of the same name. A name that is neither is refused.
 */
export function presetLayers(
  names: readonly string[],
  site: ReadonlyMap<string, Preset>,
  user: ReadonlyMap<string, Preset>,
  userDir = '~/.config/xce/presets',
): PresetLayer[] {
  const layers: PresetLayer[] = [];
  for (const name of names) {
    const s = site.get(name);
    const u = user.get(name);
    if (s === undefined && u === undefined)
      throw new PresetError(
        `preset ${name} is not defined: there is neither a site preset ${name} nor ${userDir}/${name}.yaml (see \`xcecli presets list\`)`,
      );
    if (s !== undefined) layers.push({ source: 'site', preset: s });
    if (u !== undefined) layers.push({ source: 'user', preset: u });
  }
  return layers;
}

/** `preset cfd-big, user` / `command line`. */
export function originLabel(o: ValueOrigin): string {
  return o.kind === 'preset' ? `preset ${o.preset}, ${o.source}` : 'command line';
}

/**
 * The job values of `commandLine` with the layers' values under them. Keys of `commandLine` that
 * are not job values (the command, the working directory) pass through unchanged.
 */
export function expandPresets<T extends JobValues>(layers: readonly PresetLayer[], commandLine: T): Expansion<T> {
  const cli: ValueOrigin = { kind: 'command line' };
  const all: Array<{ values: JobValues; origin: ValueOrigin }> = [
    ...layers.map((l) => ({
      values: l.preset.values,
      origin: { kind: 'preset', preset: l.preset.name, source: l.source } as const,
    })),
    { values: commandLine, origin: cli },
  ];
  const job: Record<string, unknown> = { ...(commandLine as object) };
  const origins: OriginRow[] = [];
  for (const [key, option] of SCALAR_OPTIONS) {
    let last: { value: string | number; origin: ValueOrigin } | null = null;
    for (const { values, origin } of all) {
      const v = values[key];
      if (v !== undefined) last = { value: v, origin };
    }
    if (last === null) continue;
    job[key] = last.value;
    origins.push({ field: key, option, value: String(last.value), origin: last.origin });
  }
  for (const [field, flag] of [
    ['env', '-e'],
    ['limits', '-l'],
  ] as const) {
    const merged = mergeByName(
      all,
      (v) => v[field],
      field,
      (n) => `${flag} ${n}`,
      origins,
    );
    if (merged !== null) job[field] = merged;
    else delete job[field];
  }
  return { job: job as T, origins };
}

/** env or limits: per name, the last layer's value; null when no layer sets any. */
function mergeByName(
  all: ReadonlyArray<{ values: JobValues; origin: ValueOrigin }>,
  get: (v: JobValues) => Readonly<Record<string, string | number | undefined>> | undefined,
  field: string,
  option: (name: string) => string,
  origins: OriginRow[],
): Record<string, string | number> | null {
  const out = new Map<string, { value: string | number; origin: ValueOrigin }>();
  for (const { values, origin } of all) {
    for (const [name, value] of Object.entries(get(values) ?? {}))
      if (value !== undefined) out.set(name, { value, origin });
  }
  if (out.size === 0) return null;
  const names = [...out.keys()].sort();
  const result: Record<string, string | number> = {};
  for (const name of names) {
    const { value, origin } = out.get(name) as { value: string | number; origin: ValueOrigin };
    result[name] = value;
    origins.push({ field: `${field}.${name}`, option: option(name), value: String(value), origin });
  }
  return result;
}
