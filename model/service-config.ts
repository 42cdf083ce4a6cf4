// The `service:` section of a profile of kind service → a ServiceSpec: ports unique, probes with
// exactly one action naming a port of the service, restart backoff and give-up, replicas and
// rollout that can work. The documented defaults are filled in here (and so are hashed).

import type { z } from 'zod';
import type { ConfigFile, Path } from './config-file.js';
import type { ServiceSchema } from './config-schema.js';
import type { Probe, ServicePort, ServiceSpec } from './config-types.js';
import { durationAt } from './config-values.js';

type RawService = z.output<typeof ServiceSchema>;
type RawProbe = NonNullable<RawService['liveness']>;

/** Probe defaults (the values Kubernetes users expect). */
export const PROBE_PERIOD_S_DEFAULT = 10;
export const PROBE_TIMEOUT_S_DEFAULT = 1;
export const PROBE_FAILURE_THRESHOLD_DEFAULT = 3;
export const RESTART_BACKOFF_S_DEFAULT = 1;
export const RESTART_BACKOFF_MAX_S_DEFAULT = 300;
/** A spread's skew when the profile gives none. */
export const SPREAD_MAX_SKEW_DEFAULT = 1;

/** Builds the service section; null after reporting when a part cannot be built. */
export function buildService(f: ConfigFile, path: Path, raw: RawService): ServiceSpec | null {
  const ports = servicePorts(f, path, raw.ports ?? []);
  const restart = serviceRestart(f, [...path, 'restart'], raw.restart);
  if (raw.replicas !== undefined && raw.replicas.min > raw.replicas.max) {
    f.error([...path, 'replicas'], `replicas min (${raw.replicas.min}) is larger than max (${raw.replicas.max})`);
  }
  if (raw.rollout !== undefined && raw.rollout.max_unavailable === 0 && raw.rollout.max_surge === 0) {
    f.error(
      [...path, 'rollout'],
      `rollout with max_unavailable 0 and max_surge 0 can never replace a replica; allow one of them`,
    );
  }
  const liveness = serviceProbe(f, path, 'liveness', raw.liveness, ports);
  const readiness = serviceProbe(f, path, 'readiness', raw.readiness, ports);
  if (restart === null) return null;
  return {
    restart,
    liveness,
    readiness,
    ports,
    replicas: raw.replicas === undefined ? null : { min: raw.replicas.min, max: raw.replicas.max },
    spread:
      raw.spread === undefined
        ? null
        : { across: raw.spread.across, maxSkew: raw.spread.max_skew ?? SPREAD_MAX_SKEW_DEFAULT },
    rollout:
      raw.rollout === undefined
        ? null
        : { maxUnavailable: raw.rollout.max_unavailable, maxSurge: raw.rollout.max_surge },
  };
}

/** The named ports, sorted by name; a name, or a fixed port and protocol, used twice is refused. */
function servicePorts(f: ConfigFile, path: Path, raw: NonNullable<RawService['ports']>): ServicePort[] {
  const ports: ServicePort[] = [];
  raw.forEach((p, i) => {
    const protocol = p.protocol ?? 'tcp';
    if (ports.some((q) => q.name === p.name))
      f.error([...path, 'ports', i, 'name'], `port name "${p.name}" is used twice`);
    else if (p.port !== undefined && p.port !== 0 && ports.some((q) => q.port === p.port && q.protocol === protocol))
      f.error([...path, 'ports', i, 'port'], `port ${p.port}/${protocol} is used twice`);
    else ports.push({ name: p.name, port: p.port ?? 0, protocol });
  });
  return ports.sort((a, b) => (a.name < b.name ? -1 : 1));
}

function serviceProbe(
  f: ConfigFile,
  path: Path,
  key: 'liveness' | 'readiness',
  r: RawProbe | undefined,
  ports: readonly ServicePort[],
): Probe | null {
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
}

/** The restart policy with its backoff (defaults filled in) and give-up; null when a duration is bad. */
function serviceRestart(f: ConfigFile, path: Path, rr: RawService['restart']): ServiceSpec['restart'] | null {
  const backoff =
    rr?.backoff === undefined ? RESTART_BACKOFF_S_DEFAULT : durationAt(f, [...path, 'backoff'], rr.backoff);
  const backoffMax =
    rr?.backoff_max === undefined
      ? RESTART_BACKOFF_MAX_S_DEFAULT
      : durationAt(f, [...path, 'backoff_max'], rr.backoff_max);
  if (backoff !== null && backoffMax !== null && backoff > backoffMax) {
    f.error([...path, 'backoff_max'], `restart backoff_max must not be shorter than backoff`);
  }
  let giveUp: ServiceSpec['restart']['giveUp'] = null;
  if (rr?.give_up !== undefined) {
    const w = durationAt(f, [...path, 'give_up', 'within'], rr.give_up.within);
    if (w !== null) giveUp = { attempts: rr.give_up.attempts, window_s: w };
  }
  if (rr?.policy === 'never' && (rr.give_up !== undefined || rr.backoff !== undefined)) {
    f.error(path, `restart policy never takes no backoff or give_up`);
  }
  if (backoff === null || backoffMax === null) return null;
  return { policy: rr?.policy ?? 'on-failure', backoffInitial_s: backoff, backoffMax_s: backoffMax, giveUp };
}
