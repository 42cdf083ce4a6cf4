// One applications.yaml entry → a Profile: units converted, resreq parsed and cross-checked, env
// sorted, XCE_* refused, limits the worker honours exactly, the service section (service-config.ts)
// checked. Diagnostics point at the exact field.

import type { z } from 'zod';
import type { ConfigFile, Path } from './config-file.js';
import type { ProfileSchema } from './config-schema.js';
import type { ServiceSpec } from './config-types.js';
import { ENV_VARS_MAX, envNameProblem, TEXT_CHARS_MAX } from './job-limits.js';
import { LIMIT_KEYS, LIMIT_NAMES, type LimitKey, limitValueProblem } from './limit-values.js';
import { isReservedEnvName, RESERVED_ENV_PREFIX } from './merge.js';
import type { EnvVar, Limits, Profile } from './profile-types.js';
import { isEmptyResReq, type ResourceRef } from './resreq.js';
import { durationAt, resReqAt, sizeAt } from './config-values.js';
import { buildService } from './service-config.js';

export type RawProfile = z.output<typeof ProfileSchema>;

/** The built-in profile of a cluster without applications.yaml: mode direct, no attributes. */
export function builtinDefaultProfile(name: string): Profile {
  return {
    name,
    description: 'built-in default profile: mode direct, no attributes',
    aliases: [],
    mode: 'direct',
    launchType: null,
    resreq: null,
    tasks: null,
    limits: {},
    env: [],
    preExec: null,
    postExec: null,
    jobPrePostExec: 'allow',
    service: null,
  };
}

/**
 * Builds a profile from its checked shape. Returns null after reporting when any field is wrong.
 * `resources` null skips the cross-check against resources.yaml (used when that file failed).
 */
export function buildProfile(
  f: ConfigFile,
  path: Path,
  raw: RawProfile,
  resources: ReadonlyMap<string, ResourceRef> | null,
): Profile | null {
  const before = errorCount(f);
  const resreq =
    raw.resreq === undefined || raw.resreq.trim() === ''
      ? null
      : resReqAt(f, [...path, 'resreq'], raw.resreq, resources);
  const tasks = profileTasks(f, path, raw.tasks);
  const limits = raw.limits === undefined ? {} : profileLimits(f, [...path, 'limits'], raw.limits);
  const env = profileEnv(f, [...path, 'env'], raw.env ?? {});
  const service = profileService(f, path, raw);
  if (errorCount(f) > before) return null;
  return {
    name: raw.name,
    description: emptyToNull(raw.description),
    aliases: raw.aliases ?? [],
    mode: 'direct',
    launchType: raw.launch_type ?? null,
    resreq: resreq === null || isEmptyResReq(resreq) ? null : resreq,
    tasks,
    limits,
    env,
    preExec: emptyToNull(raw.pre_exec),
    postExec: emptyToNull(raw.post_exec),
    jobPrePostExec: raw.job_pre_post_exec ?? 'allow',
    service,
  };
}

function errorCount(f: ConfigFile): number {
  return f.diagnostics.filter((d) => d.severity === 'error').length;
}

function emptyToNull(s: string | undefined): string | null {
  return s === undefined || s === '' ? null : s;
}

function profileTasks(f: ConfigFile, path: Path, raw: RawProfile['tasks']): Profile['tasks'] {
  if (raw === undefined) return null;
  if (raw.min > raw.max) {
    f.error([...path, 'tasks'], `tasks min (${raw.min}) is larger than max (${raw.max})`);
    return null;
  }
  return { min: raw.min, max: raw.max };
}

/** The limits in canonical units, each one the worker honours exactly (limit-values.ts). */
function profileLimits(f: ConfigFile, path: Path, raw: NonNullable<RawProfile['limits']>): Limits {
  const limits: { -readonly [K in keyof Limits]: Limits[K] } = {};
  const parsed: Record<LimitKey, number | null | undefined> = {
    runtime_s: raw.runtime === undefined ? undefined : durationAt(f, [...path, 'runtime'], raw.runtime),
    memory_bytes: raw.memory === undefined ? undefined : sizeAt(f, [...path, 'memory'], raw.memory),
    cpu_s: raw.cpu === undefined ? undefined : durationAt(f, [...path, 'cpu'], raw.cpu),
    tasks: raw.tasks,
  };
  for (const key of LIMIT_KEYS) {
    const v = parsed[key];
    if (v === undefined || v === null) continue;
    const problem = limitValueProblem(key, v);
    if (problem !== null) f.error([...path, LIMIT_NAMES[key]], problem);
    else limits[key] = v;
  }
  return limits;
}

/** The env sorted by name; names checked as a job's are, XCE_* reserved. */
function profileEnv(f: ConfigFile, path: Path, raw: NonNullable<RawProfile['env']>): EnvVar[] {
  const env: EnvVar[] = [];
  const entries = Object.entries(raw);
  // The worker takes at most as many variables and characters from a profile as from a job.
  if (entries.length > ENV_VARS_MAX)
    f.error(path, `a profile may set at most ${ENV_VARS_MAX} environment variables, not ${entries.length}`);
  for (const [name, value] of entries) {
    const at = { keyNode: f.keyNode(path, name) };
    const nameProblem = envNameProblem(name);
    if (nameProblem !== null) f.error([...path, name], nameProblem, at);
    else if (String(value).length > TEXT_CHARS_MAX)
      f.error([...path, name], `environment variable ${name} is longer than ${TEXT_CHARS_MAX} characters`);
    else if (isReservedEnvName(name))
      f.error(
        [...path, name],
        `environment variable ${name}: the ${RESERVED_ENV_PREFIX} prefix is reserved for variables XCE sets itself; rename it`,
        at,
      );
    else env.push({ name, value: String(value) });
  }
  return env.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The service section, present exactly when the profile is of kind service. */
function profileService(f: ConfigFile, path: Path, raw: RawProfile): ServiceSpec | null {
  const kind = raw.kind ?? 'batch';
  if (kind === 'service' && raw.service === undefined) {
    f.error([...path, 'kind'], `kind service needs a service: section (restart policy, probes, ports, replicas, ...)`);
    return null;
  }
  if (kind !== 'service' && raw.service !== undefined) {
    f.error([...path, 'service'], `a service: section needs kind: service on the profile`);
    return null;
  }
  return raw.service === undefined ? null : buildService(f, [...path, 'service'], raw.service);
}
