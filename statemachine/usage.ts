// What running jobs hold: slots per host and reserved resources (rusage), rebuilt identically on
// every controller from the running jobs' frozen dispatch records. Dispatch is applied only when
// its placement still fits (a dispatch decided on a stale view is declined and retried), and the
// scheduler reads the free amounts from here.
//
// Accounting rule (stated once, here): a host-scoped resource (resources.yaml `scope: host`, e.g.
// mem, gpu) is reserved per task on each host the job runs on; a cluster-scoped resource
// (`scope: cluster`, e.g. licenses) is reserved once per job from the shared pool. A resource
// with no known capacity (a cluster pool without a total) is not limited.
//
// Amounts are integers, milli-units (amount.ts): every rusage value, host capacity and pool total
// goes through `toMilli` before it is added or compared, so adding and releasing job by job holds
// exactly what a rebuild from scratch holds, whatever the order. The free amounts returned below
// are converted back to units for their readers.

import { amountProblem, fromMilli, toMilli } from '../model/amount.js';
import type { ClusterConfig, HostConfig } from '../model/config-types.js';
import type { DispatchRecord, HostTasks } from './dispatch-record.js';
import { capacityOf, NO_REGISTRATIONS, type RegisteredHost } from './host-capacity.js';

export interface Usage {
  /** host → slots held by running jobs. */
  readonly slots: Map<string, number>;
  /** host → resource → milli-units reserved on that host. */
  readonly hostRusage: Map<string, Map<string, number>>;
  /** resource → milli-units reserved from the cluster pool. */
  readonly clusterRusage: Map<string, number>;
}

export function emptyUsage(): Usage {
  return { slots: new Map(), hostRusage: new Map(), clusterRusage: new Map() };
}

function isClusterScoped(config: ClusterConfig | null, name: string): boolean {
  return config?.resources.get(name)?.scope === 'cluster';
}

function addTo(m: Map<string, number>, k: string, v: number): void {
  const n = (m.get(k) ?? 0) + v;
  if (n === 0) m.delete(k);
  else m.set(k, n);
}

/** A rusage value of a dispatch record in milli-units (placementProblem refused any other before the job ran). */
function rusageMilli(name: string, value: number): number {
  return toMilli(value, `rusage ${name} of a dispatch record`);
}

/** Adds (sign 1) or releases (sign -1) what a running job holds. */
export function account(usage: Usage, config: ClusterConfig | null, record: DispatchRecord, sign: 1 | -1): void {
  for (const h of record.hosts) {
    addTo(usage.slots, h.host, sign * h.tasks);
    for (const r of record.resreq.rusage) {
      if (isClusterScoped(config, r.value.name)) continue;
      let m = usage.hostRusage.get(h.host);
      if (m === undefined) usage.hostRusage.set(h.host, (m = new Map()));
      addTo(m, r.value.name, sign * rusageMilli(r.value.name, r.value.value) * h.tasks);
      if (m.size === 0) usage.hostRusage.delete(h.host);
    }
  }
  for (const r of record.resreq.rusage) {
    if (isClusterScoped(config, r.value.name))
      addTo(usage.clusterRusage, r.value.name, sign * rusageMilli(r.value.name, r.value.value));
  }
}

/**
 * Recomputes the usage from the running jobs' records under `config`. Called when the configuration
 * changes (a resource may change scope), so that every later add and release classifies a resource
 * the same way; restore builds the usage the same way.
 */
export function rebuildUsage(
  usage: Usage,
  config: ClusterConfig | null,
  running: Iterable<{ readonly state: string; readonly record: DispatchRecord | null }>,
): void {
  usage.slots.clear();
  usage.hostRusage.clear();
  usage.clusterRusage.clear();
  for (const j of running)
    if ((j.state === 'RUN' || j.state === 'SUSP') && j.record !== null) account(usage, config, j.record, 1);
}

/** A host's capacity of a host-scoped resource in milli-units: hosts.yaml `numeric`, 0 when not declared. */
function capacityMilli(host: HostConfig, name: string): number {
  const v = host.numerics.find((n) => n.name === name)?.value ?? 0;
  return toMilli(v, `hosts.yaml host ${host.name} numeric ${name}`);
}

/**
 * Why the placement does not fit what is free now, or null when it fits. Compares milli-units only.
 * A host's capacity is hosts.yaml's reconciled with its worker's registration (host-capacity.ts).
 */
export function placementProblem(
  usage: Usage,
  config: ClusterConfig,
  hosts: readonly HostTasks[],
  record: DispatchRecord,
  registered: ReadonlyMap<string, RegisteredHost> = NO_REGISTRATIONS,
): string | null {
  for (const r of record.resreq.rusage) {
    const problem = amountProblem(r.value.value);
    if (problem !== null) return `rusage ${r.value.name} of the dispatch record: ${problem}`;
  }
  const seen = new Set<string>();
  for (const h of hosts) {
    if (seen.has(h.host)) return `host ${h.host} appears twice in the placement`;
    seen.add(h.host);
    if (!Number.isInteger(h.tasks) || h.tasks < 1) return `placement gives host ${h.host} ${h.tasks} tasks`;
    const host = capacityOf(config, registered, h.host);
    if (host === undefined) return `host ${h.host} is not defined`;
    const used = usage.slots.get(h.host) ?? 0;
    if (used + h.tasks > host.slots)
      return `host ${h.host} has ${host.slots - used} free slots, the placement needs ${h.tasks}`;
    for (const r of record.resreq.rusage) {
      const name = r.value.name;
      if (isClusterScoped(config, name)) continue;
      const capacity = capacityMilli(host, name);
      const held = usage.hostRusage.get(h.host)?.get(name) ?? 0;
      const need = rusageMilli(name, r.value.value) * h.tasks;
      if (!Number.isSafeInteger(need))
        return `host ${h.host}: ${h.tasks} tasks of rusage ${name}=${r.value.value} exceed the largest amount`;
      if (held + need > capacity)
        return `host ${h.host} has ${fromMilli(capacity - held)} ${name} free, the placement needs ${fromMilli(need)}`;
    }
  }
  for (const r of record.resreq.rusage) {
    const name = r.value.name;
    const res = config.resources.get(name);
    if (res === undefined || res.scope !== 'cluster' || res.total === null) continue;
    const total = toMilli(res.total, `resources.yaml ${name} total`);
    const held = usage.clusterRusage.get(name) ?? 0;
    if (held + rusageMilli(name, r.value.value) > total)
      return `${fromMilli(total - held)} of ${res.total} ${name} free, the job needs ${r.value.value}`;
  }
  return null;
}

/** Free slots on a host now (the scheduler's view), 0 for an unknown host. */
export function freeSlots(
  usage: Usage,
  config: ClusterConfig,
  host: string,
  registered: ReadonlyMap<string, RegisteredHost> = NO_REGISTRATIONS,
): number {
  const h = capacityOf(config, registered, host);
  return h === undefined ? 0 : h.slots - (usage.slots.get(host) ?? 0);
}

/** Free amount (units) of a host-scoped resource on a host now (capacity from hosts.yaml `numeric`), computed in milli-units. */
export function freeHostResource(
  usage: Usage,
  config: ClusterConfig,
  host: string,
  name: string,
  registered: ReadonlyMap<string, RegisteredHost> = NO_REGISTRATIONS,
): number {
  const h = capacityOf(config, registered, host);
  if (h === undefined) return 0;
  return fromMilli(capacityMilli(h, name) - (usage.hostRusage.get(host)?.get(name) ?? 0));
}

/** Free amount (units) of a cluster pool (licenses) now, computed in milli-units; Infinity for a pool without a total. */
export function freeClusterResource(usage: Usage, config: ClusterConfig, name: string): number {
  const r = config.resources.get(name);
  if (r === undefined || r.scope !== 'cluster') return 0;
  if (r.total === null) return Infinity;
  return fromMilli(toMilli(r.total, `resources.yaml ${name} total`) - (usage.clusterRusage.get(name) ?? 0));
}
