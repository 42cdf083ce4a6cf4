// A user's presets: one file per preset in `presets/` of the user's config directory
// ($XCE_CONFIG_DIR, else $XDG_CONFIG_HOME/xce, else ~/.config/xce; cli/settings.ts), checked with
// the same rules as site presets (model/presets.ts) except the resource names, which only the
// cluster knows (the controller checks them at submit).

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostic } from '../../model/config-types.js';
import { formatDiagnostic } from '../../model/diagnostics.js';
import { PRESETS_DIR } from '../../model/config-presets.js';
import { NAME_PATTERN } from '../../model/config-schema.js';
import { CONFIG_FILE_BYTES_MAX } from '../../model/config-file.js';
import { parsePresetFile, presetHash, presetLabel, type Preset } from '../../model/presets.js';
import { configDir } from '../settings.js';
import { UsageError } from '../submit-args.js';

/** User preset files read at most (a hand-kept folder). */
export const USER_PRESETS_MAX = 1000;

export interface UserPreset {
  readonly preset: Preset;
  readonly file: string;
  readonly hash: string;
  readonly label: string;
  /** `openfoam@3f2a9c` from the header `xcecli presets pull` writes, null when none. */
  readonly pulledFrom: string | null;
}

export interface UserPresets {
  readonly dir: string;
  readonly presets: Map<string, UserPreset>;
  /** Problems of files that failed their checks (those presets are not in `presets`). */
  readonly problems: Diagnostic[];
}

export function userPresetDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), PRESETS_DIR);
}

/** The header `presets pull` writes above a copied site preset. */
export function pulledHeader(label: string): string {
  return `# pulled from site preset ${label} (xcecli presets pull); \`xcecli presets diff\` shows what changed since\n`;
}

const PULLED = /^# pulled from site preset (\S+@[0-9a-f]+)/;

/** Refuses a name that cannot be a preset file's name (so it never becomes a path outside the folder). */
export function checkPresetName(name: string): void {
  if (!NAME_PATTERN.test(name))
    throw new UsageError(
      `preset name "${name}": a name starts with a letter and holds only letters, digits, "_", "." and "-"`,
    );
}

function readOne(dir: string, fileName: string, problems: Diagnostic[]): UserPreset | null {
  const file = join(dir, fileName);
  if (statSync(file).size > CONFIG_FILE_BYTES_MAX) {
    problems.push({ severity: 'error', file, message: `${file} is larger than ${CONFIG_FILE_BYTES_MAX} bytes` });
    return null;
  }
  const text = readFileSync(file, 'utf8');
  const r = parsePresetFile(file, text);
  problems.push(...r.diagnostics.filter((d) => d.severity === 'error'));
  if (r.preset === null) return null;
  const hash = presetHash(r.preset);
  const pulled = PULLED.exec(text);
  return { preset: r.preset, file, hash, label: presetLabel(r.preset.name, hash), pulledFrom: pulled?.[1] ?? null };
}

/** Every preset file of the user's folder (none when it does not exist). */
export function readUserPresets(env: NodeJS.ProcessEnv = process.env): UserPresets {
  const dir = userPresetDir(env);
  const presets = new Map<string, UserPreset>();
  const problems: Diagnostic[] = [];
  if (!existsSync(dir)) return { dir, presets, problems };
  const names = readdirSync(dir)
    .filter((n) => n.endsWith('.yaml') || n.endsWith('.yml'))
    .sort()
    .slice(0, USER_PRESETS_MAX);
  for (const n of names) {
    if (!statSync(join(dir, n)).isFile()) continue;
    const p = readOne(dir, n, problems);
    if (p !== null) presets.set(p.preset.name, p);
  }
  return { dir, presets, problems };
}

/**
 * The user's preset NAME (NAME.yaml), null when there is none; a file with problems is refused
 * with every problem named (file, entry, field), before anything is sent anywhere.
 */
export function readUserPreset(name: string, env: NodeJS.ProcessEnv = process.env): UserPreset | null {
  checkPresetName(name);
  const dir = userPresetDir(env);
  const fileName = [`${name}.yaml`, `${name}.yml`].find((f) => existsSync(join(dir, f)));
  if (fileName === undefined) return null;
  const problems: Diagnostic[] = [];
  const p = readOne(dir, fileName, problems);
  if (p === null) throw new UsageError(presetProblemsMessage(problems));
  return p;
}

export function presetProblemsMessage(problems: readonly Diagnostic[]): string {
  const n = problems.length;
  return `preset file refused (${n} problem${n === 1 ? '' : 's'}); nothing was sent:\n${problems.map(formatDiagnostic).join('\n')}`;
}

/** Writes `text` as the user's preset NAME, atomically; returns the file's path. */
export function writeUserPreset(name: string, text: string, env: NodeJS.ProcessEnv = process.env): string {
  checkPresetName(name);
  const dir = userPresetDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${name}.yaml`);
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}
