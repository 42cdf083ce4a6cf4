// One applications.yaml entry → a Profile: units converted, resreq parsed and cross-checked, env
// sorted, XCE_* refused, the service section checked. Diagnostics point at the exact field.

import type { z } from 'zod';
import type { ConfigFile, Path } from './config-file.js';
import type { ProfileSchema, ServiceSchema } from './config-schema.js';
import type { Probe, ServicePort, ServiceSpec } from './config-types.js';
import { ENV_VARS_MAX, envNameProblem, TEXT_CHARS_MAX } from './job-limits.js';
import { isReservedEnvName, RESERVED_ENV_PREFIX } from './merge.js';
import type { EnvVar, Limits, Profile, ResReq } from './profile-types.js';
import { checkResReqResources, parseResReq, ResReqSyntaxError, type ResourceRef } from './resreq.js';
import { parseDuration, parseSize, UnitSyntaxError } from './units.js';

export type RawProfile = z.output<typeof ProfileSchema>;
type RawService = z.output<typeof ServiceSchema>;
type RawProbe = NonNullable<RawService['liveness']>;

/** Probe defaults (the values Kubernetes users expect). */
export const PROBE_PERIOD_S_DEFAULT = 10;
export const PROBE_TIMEOUT_S_DEFAULT = 1;
export const PROBE_FAILURE_THRESHOLD_DEFAULT = 3;
export const RESTART_BACKOFF_S_DEFAULT = 1;
export const RESTART_BACKOFF_MAX_S_DEFAULT = 300;

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

export function durationAt(f: ConfigFile, path: Path, v: string | number): number | null {
  if (typeof v === 'number') return v;
  try {
    return parseDuration(v);
  } catch (e) {
    if (e instanceof UnitSyntaxError) {
      f.error(path, e.message);
      return null;
    }
    throw e;
  }
}

export function sizeAt(f: ConfigFile, path: Path, v: string | number): number | null {
  if (typeof v === 'number') return v;
  try {
    return parseSize(v);
  } catch (e) {
    if (e instanceof UnitSyntaxError) {
      f.error(path, e.message);
      return null;
    }
    throw e;
  }
}

/** Parses a resreq string at `path`, reporting a syntax error at its exact column. */
export function resReqAt(
  f: ConfigFile,
  path: Path,
  text: string,
  resources: ReadonlyMap<string, ResourceRef> | null,
): ResReq | null {
  let parsed;
  try {
    parsed = parseResReq(text);
  } catch (e) {
    if (e instanceof ResReqSyntaxError) {
      const node = f.node(path);
      f.error(path, e.message, { columnOffset: f.quoteOffset(node) + e.column - 1 });
      return null;
    }
    throw e;
  }
  if (parsed.kind === 'compound') {
    f.error(
      path,
      `a profile's resreq must be one simple requirement; compound or alternative requirements ("${parsed.operator}") are not supported in a profile`,
    );
    return null;
  }
  if (resources !== null) {
    let bad = false;
    for (const p of checkResReqResources(parsed, resources)) {
      f.error(path, p.message);
      bad = true;
    }
    if (bad) return null;
  }
  return parsed;
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
  const before = f.diagnostics.filter((d) => d.severity === 'error').length;

  const resreq =
    raw.resreq === undefined || raw.resreq.trim() === ''
      ? null
      : resReqAt(f, [...path, 'resreq'], raw.resreq, resources);

  let tasks: Profile['tasks'] = null;
  if (raw.tasks !== undefined) {
    if (raw.tasks.min > raw.tasks.max) {
      f.error([...path, 'tasks'], `tasks min (${raw.tasks.min}) is larger than max (${raw.tasks.max})`);
    } else tasks = { min: raw.tasks.min, max: raw.tasks.max };
  }

  const limits: { -readonly [K in keyof Limits]: Limits[K] } = {};
  if (raw.limits !== undefined) {
    const l = raw.limits;
    const lp = [...path, 'limits'];
    if (l.runtime !== undefined)
      limits.runtime_s = positive(f, [...lp, 'runtime'], durationAt(f, [...lp, 'runtime'], l.runtime));
    if (l.memory !== undefined)
      limits.memory_bytes = positive(f, [...lp, 'memory'], sizeAt(f, [...lp, 'memory'], l.memory));
    if (l.cpu !== undefined) limits.cpu_s = positive(f, [...lp, 'cpu'], durationAt(f, [...lp, 'cpu'], l.cpu));
    if (l.tasks !== undefined) limits.tasks = l.tasks;
    for (const k of Object.keys(limits) as Array<keyof Limits>) if (limits[k] === undefined) delete limits[k];
  }

  const env: EnvVar[] = [];
  const rawEnv = Object.entries(raw.env ?? {});
  // The worker takes at most as many variables and characters from a profile as from a job.
  if (rawEnv.length > ENV_VARS_MAX)
    f.error([...path, 'env'], `a profile may set at most ${ENV_VARS_MAX} environment variables, not ${rawEnv.length}`);
  for (const [name, value] of rawEnv) {
    const ep = [...path, 'env', name];
    const nameProblem = envNameProblem(name);
    if (nameProblem !== null) {
      f.error(ep, nameProblem, { keyNode: f.keyNode([...path, 'env'], name) });
    } else if (String(value).length > TEXT_CHARS_MAX) {
      f.error(ep, `environment variable ${name} is longer than ${TEXT_CHARS_MAX} characters`);
    } else if (isReservedEnvName(name)) {
      f.error(
        ep,
        `environment variable ${name}: the ${RESERVED_ENV_PREFIX} prefix is reserved for variables XCE sets itself; rename it`,
        {
          keyNode: f.keyNode([...path, 'env'], name),
        },
      );
    } else env.push({ name, value: String(value) });
  }
  env.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  let service: ServiceSpec | null = null;
  const kind = raw.kind ?? 'batch';
  if (kind === 'service' && raw.service === undefined) {
    f.error([...path, 'kind'], `kind service needs a service: section (restart policy, probes, ports, replicas, ...)`);
  } else if (kind !== 'service' && raw.service !== undefined) {
    f.error([...path, 'service'], `a service: section needs kind: service on the profile`);
  } else if (raw.service !== undefined) {
    service = buildService(f, [...path, 'service'], raw.service);
  }

  const errors = f.diagnostics.filter((d) => d.severity === 'error').length;
  if (errors > before) return null;
  return {
    name: raw.name,
    description: emptyToNull(raw.description),
    aliases: raw.aliases ?? [],
    mode: 'direct',
    launchType: raw.launch_type ?? null,
    resreq:
      resreq !== null &&
      resreq.select.length + resreq.rusage.length === 0 &&
      resreq.span === null &&
      resreq.same === null &&
      resreq.order === null
        ? null
        : resreq,
    tasks,
    limits,
    env,
    preExec: emptyToNull(raw.pre_exec),
    postExec: emptyToNull(raw.post_exec),
    jobPrePostExec: raw.job_pre_post_exec ?? 'allow',
    service,
  };
}

function emptyToNull(s: string | undefined): string | null {
  return s === undefined || s === '' ? null : s;
}

function positive(f: ConfigFile, path: Path, v: number | null): number | undefined {
  if (v === null) return undefined;
  if (v <= 0) {
    f.error(path, `a limit of zero would stop every job; leave the limit out for none`);
    return undefined;
  }
  return v;
}

function buildService(f: ConfigFile, path: Path, raw: RawService): ServiceSpec | null {
  const ports: ServicePort[] = [];
  (raw.ports ?? []).forEach((p, i) => {
    if (ports.some((q) => q.name === p.name))
      f.error([...path, 'ports', i, 'name'], `port name "${p.name}" is used twice`);
    else if (
      p.port !== undefined &&
      p.port !== 0 &&
      ports.some((q) => q.port === p.port && q.protocol === (p.protocol ?? 'tcp'))
    ) {
      f.error([...path, 'ports', i, 'port'], `port ${p.port}/${p.protocol ?? 'tcp'} is used twice`);
    } else ports.push({ name: p.name, port: p.port ?? 0, protocol: p.protocol ?? 'tcp' });
  });
  ports.sort((a, b) => (a.name < b.name ? -1 : 1));

  const probe = (key: 'liveness' | 'readiness', r: RawProbe | undefined): Probe | null => {
    if (r === undefined) return null;
    const pp = [...path, key];
    const actions = [r.command !== undefined, r.tcp !== undefined, r.http !== undefined].filter(Boolean).length;
    if (actions !== 1) {
      f.error(pp, `a ${key} probe has exactly one of command, tcp or http (it has ${actions})`);
      return null;
    }
    const port = r.tcp?.port ?? r.http?.port;
    if (port !== undefined && !ports.some((q) => q.name === port)) {
      f.error(
        [...pp, r.tcp ? 'tcp' : 'http', 'port'],
        `${key} probe names port "${port}", which is not among this service's ports (${ports.map((q) => q.name).join(', ') || 'none'})`,
      );
      return null;
    }
    const action: Probe['action'] =
      r.command !== undefined
        ? { kind: 'command', command: r.command }
        : r.tcp !== undefined
          ? { kind: 'tcp', port: r.tcp.port }
          : { kind: 'http', port: (r.http as { port: string }).port, path: r.http?.path ?? '/' };
    const period = r.period === undefined ? PROBE_PERIOD_S_DEFAULT : durationAt(f, [...pp, 'period'], r.period);
    const timeout = r.timeout === undefined ? PROBE_TIMEOUT_S_DEFAULT : durationAt(f, [...pp, 'timeout'], r.timeout);
    const delay = r.initial_delay === undefined ? 0 : durationAt(f, [...pp, 'initial_delay'], r.initial_delay);
    if (period === null || timeout === null || delay === null) return null;
    if (period < 1) f.error([...pp, 'period'], `a probe period must be at least 1s`);
    if (timeout < 1 || timeout > period)
      f.error([...pp, 'timeout'], `a probe timeout must be at least 1s and not longer than its period`);
    return {
      action,
      period_s: period,
      timeout_s: timeout,
      initialDelay_s: delay,
      failureThreshold: r.failure_threshold ?? PROBE_FAILURE_THRESHOLD_DEFAULT,
    };
  };

  const rr = raw.restart;
  const backoff =
    rr?.backoff === undefined ? RESTART_BACKOFF_S_DEFAULT : durationAt(f, [...path, 'restart', 'backoff'], rr.backoff);
  const backoffMax =
    rr?.backoff_max === undefined
      ? RESTART_BACKOFF_MAX_S_DEFAULT
      : durationAt(f, [...path, 'restart', 'backoff_max'], rr.backoff_max);
  if (backoff !== null && backoffMax !== null && backoff > backoffMax) {
    f.error([...path, 'restart', 'backoff_max'], `restart backoff_max must not be shorter than backoff`);
  }
  let giveUp: ServiceSpec['restart']['giveUp'] = null;
  if (rr?.give_up !== undefined) {
    const w = durationAt(f, [...path, 'restart', 'give_up', 'within'], rr.give_up.within);
    if (w !== null) giveUp = { attempts: rr.give_up.attempts, window_s: w };
  }
  if (rr?.policy === 'never' && (rr.give_up !== undefined || rr.backoff !== undefined)) {
    f.error([...path, 'restart'], `restart policy never takes no backoff or give_up`);
  }

  if (raw.replicas !== undefined && raw.replicas.min > raw.replicas.max) {
    f.error([...path, 'replicas'], `replicas min (${raw.replicas.min}) is larger than max (${raw.replicas.max})`);
  }
  if (raw.rollout !== undefined && raw.rollout.max_unavailable === 0 && raw.rollout.max_surge === 0) {
    f.error(
      [...path, 'rollout'],
      `rollout with max_unavailable 0 and max_surge 0 can never replace a replica; allow one of them`,
    );
  }
  const liveness = probe('liveness', raw.liveness);
  const readiness = probe('readiness', raw.readiness);
  if (backoff === null || backoffMax === null) return null;
  return {
    restart: { policy: rr?.policy ?? 'on-failure', backoffInitial_s: backoff, backoffMax_s: backoffMax, giveUp },
    liveness,
    readiness,
    ports,
    replicas: raw.replicas === undefined ? null : { min: raw.replicas.min, max: raw.replicas.max },
    spread: raw.spread === undefined ? null : { across: raw.spread.across, maxSkew: raw.spread.max_skew ?? 1 },
    rollout:
      raw.rollout === undefined
        ? null
        : { maxUnavailable: raw.rollout.max_unavailable, maxSurge: raw.rollout.max_surge },
  };
}
