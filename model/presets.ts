// One preset file → a Preset, or every problem with it, each naming the file, the entry (the
// preset's name) and the field, with line:column (config-file.ts). Pure: the client reads a user's
// files, the configuration loader the site's. The same rules for both: the shape (preset-schema.ts),
// the name matching the file name, `-R` syntax (and, where the cluster's resources are known, its
// resource names), env names (XCE_* reserved), units, and at last the controller's own conversion
// of a job's values (job-own-values.ts), so a preset that passes here is one a submit takes.
//
// A preset's content hash (its version, like a profile's) is SHA-256 over its name and values in a
// canonical form: comments, key order and `description` do not change it.

import { createHash } from 'node:crypto';
import { ConfigFile, type Path } from './config-file.js';
import type { Diagnostic } from './config-types.js';
import { JobValueError, jobSpecOf } from './job-own-values.js';
import { envNameProblem } from './job-limits.js';
import { isReservedEnvName, RESERVED_ENV_PREFIX } from './merge-env.js';
import { durationAt, sizeAt } from './config-values.js';
import { PresetSchema, type JobValues, type Preset, type RawPreset } from './preset-schema.js';
import { checkResReqResources, parseResReq, ResReqSyntaxError, type ResourceRef } from './resreq.js';
import { SHORT_HASH_CHARS } from './profile-hash.js';

export type { JobValues, Preset, PresetSource } from './preset-schema.js';

export interface PresetFileResult {
  /** null when the file has an error. */
  readonly preset: Preset | null;
  readonly diagnostics: readonly Diagnostic[];
}

/** `cfd-big.yaml` → `cfd-big` (the name a preset file must carry). */
export function presetFileStem(path: string): string {
  const base = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  return base.replace(/\.ya?ml$/, '');
}

/**
 * Checks one preset file. `file` is what diagnostics name (a user's full path, or `presets/x.yaml`
 * for a site preset); `resources` (resources.yaml, when known) also checks `-R`'s resource names.
 */
export function parsePresetFile(
  file: string,
  text: string,
  resources: ReadonlyMap<string, ResourceRef> | null = null,
): PresetFileResult {
  const f = new ConfigFile(file, text);
  const preset = checkPreset(f, resources);
  return { preset, diagnostics: presetDiagnostics(f) };
}

/** The checks of parsePresetFile on a file already opened (the configuration loader adds its own warnings). */
export function checkPreset(f: ConfigFile, resources: ReadonlyMap<string, ResourceRef> | null): Preset | null {
  const raw = f.validate(PresetSchema);
  if (raw === null) return null;
  const stem = presetFileStem(f.file);
  if (raw.name !== stem)
    f.error(
      ['name'],
      `the preset is named "${raw.name}" but its file is ${stem}.yaml; a preset lives in a file of its own name`,
    );
  const values = presetValues(f, raw, resources);
  return f.ok ? { name: raw.name, description: raw.description ?? null, values } : null;
}

/** The file's diagnostics, each naming the entry: the preset's name as written, else the file's. */
export function presetDiagnostics(f: ConfigFile): Diagnostic[] {
  const written = f.doc === null ? null : (f.value() as { name?: unknown } | null);
  const entry = typeof written?.name === 'string' && written.name !== '' ? written.name : presetFileStem(f.file);
  return f.diagnostics.map((d) => (d.entry === undefined ? { ...d, entry } : d));
}

/** The raw preset's values in the client's terms, each problem reported at its field. */
function presetValues(f: ConfigFile, raw: RawPreset, resources: ReadonlyMap<string, ResourceRef> | null): JobValues {
  const v: { -readonly [K in keyof JobValues]: JobValues[K] } = {};
  if (raw.app !== undefined) v.app = raw.app;
  if (raw.queue !== undefined) v.queue = raw.queue;
  if (raw.job_name !== undefined) v.name = raw.job_name;
  if (raw.tasks !== undefined) v.tasks = raw.tasks;
  if (raw.resreq !== undefined && raw.resreq.trim() !== '') {
    checkResReq(f, ['resreq'], raw.resreq, resources);
    v.resreq = raw.resreq;
  }
  if (raw.env !== undefined) v.env = presetEnv(f, raw.env);
  if (raw.limits !== undefined) {
    const l = raw.limits;
    const out: { runtime?: string; memory?: string; cpu?: string; tasks?: number } = {};
    if (l.runtime !== undefined && durationAt(f, ['limits', 'runtime'], l.runtime) !== null)
      out.runtime = String(l.runtime);
    if (l.memory !== undefined && sizeAt(f, ['limits', 'memory'], l.memory) !== null) out.memory = String(l.memory);
    if (l.cpu !== undefined && durationAt(f, ['limits', 'cpu'], l.cpu) !== null) out.cpu = String(l.cpu);
    if (l.tasks !== undefined) out.tasks = l.tasks;
    v.limits = out;
  }
  if (raw.pre_exec !== undefined) v.preExec = raw.pre_exec;
  if (raw.post_exec !== undefined) v.postExec = raw.post_exec;
  if (raw.output !== undefined) v.stdout = raw.output;
  if (raw.error !== undefined) v.stderr = raw.error;
  if (f.ok) {
    // The controller's own conversion: what passes here, a submit takes.
    try {
      jobSpecOf({ ...v, command: ['true'] });
    } catch (e) {
      if (!(e instanceof JobValueError)) throw e;
      f.error(e.field.split('.'), e.message);
    }
  }
  return v;
}

function checkResReq(f: ConfigFile, path: Path, text: string, resources: ReadonlyMap<string, ResourceRef> | null) {
  try {
    const parsed = parseResReq(text);
    if (resources !== null) for (const p of checkResReqResources(parsed, resources)) f.error(path, p.message);
  } catch (e) {
    if (!(e instanceof ResReqSyntaxError)) throw e;
    const node = f.node(path);
    f.error(path, e.message, { columnOffset: f.quoteOffset(node) + e.column - 1 });
  }
}

function presetEnv(f: ConfigFile, env: Readonly<Record<string, string | number | boolean>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const keyNode = f.keyNode(['env'], name);
    const problem = envNameProblem(name);
    if (problem !== null) f.error(['env', name], problem, { keyNode });
    else if (isReservedEnvName(name))
      f.error(
        ['env', name],
        `environment variable ${name}: the ${RESERVED_ENV_PREFIX} prefix is reserved for variables XCE sets itself; rename it`,
        { keyNode },
      );
    else out[name] = String(value);
  }
  return out;
}

/** JSON with object keys sorted at every level: the canonical text a hash is taken over. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value as object)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Hex SHA-256 of the preset's name and values (not its description, comments or key order). */
export function presetHash(p: Preset): string {
  return createHash('sha256')
    .update(canonicalJson({ name: p.name, values: p.values }))
    .digest('hex');
}

/** `cfd-big@3f2a9c`. */
export function presetLabel(name: string, hash: string): string {
  return `${name}@${hash.slice(0, SHORT_HASH_CHARS)}`;
}
