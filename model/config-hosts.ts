// loadConfig's rules for resources.yaml and hosts.yaml: resources unique, not built in, a shared
// (cluster-scope) one numeric with a total; a host's resources defined, host-scope and listed
// under their type; amounts exact to 0.001 (amount.ts).

import { amountProblem } from './amount.js';
import type { Path } from './config-file.js';
import type { HostConfig, ResourceConfig } from './config-types.js';
import { eachNamed, type Parsed } from './config-parsed.js';
import { sizeAt } from './config-values.js';
import { BUILTIN_HOST_RESOURCES } from './resreq.js';

type RawResource = NonNullable<NonNullable<NonNullable<Parsed['resources.yaml']>['data']>['resources'][number]>;
type RawHost = NonNullable<NonNullable<NonNullable<Parsed['hosts.yaml']>['data']>['hosts'][number]>;

export function checkResources(parsed: Parsed): Map<string, ResourceConfig> | null {
  return eachNamed<RawResource, ResourceConfig>(parsed['resources.yaml'], 'resources', 'resource', (r, path, f) => {
    if (BUILTIN_HOST_RESOURCES.has(r.name)) {
      f.error(
        [...path, 'name'],
        `resource "${r.name}" is built in (every worker reports it); remove it from resources.yaml`,
      );
      return null;
    }
    const scope = r.scope ?? 'host';
    if (scope === 'cluster') {
      if (r.type !== 'numeric')
        f.error([...path, 'type'], `a cluster-scope (shared) resource must be numeric, with a total`);
      if (r.total === undefined)
        f.error(
          [...path, 'scope'],
          `a cluster-scope (shared) resource needs a total (the size of the pool, e.g. the license count)`,
        );
    } else if (r.total !== undefined) {
      f.error(
        [...path, 'total'],
        `total applies to cluster-scope resources only; a host resource's amount is set per host in hosts.yaml`,
      );
    }
    const totalProblem = r.total === undefined ? null : amountProblem(r.total);
    if (totalProblem !== null) f.error([...path, 'total'], totalProblem);
    return { name: r.name, type: r.type, scope, total: r.total ?? null, description: r.description ?? null };
  });
}

export function checkHosts(
  parsed: Parsed,
  resources: ReadonlyMap<string, ResourceConfig> | null,
): Map<string, HostConfig> | null {
  return eachNamed<RawHost, HostConfig>(parsed['hosts.yaml'], 'hosts', 'host', (h, path, f) => {
    const mem = sizeAt(f, [...path, 'mem'], h.mem);
    const check = (
      key: 'resources' | 'numeric' | 'strings',
      name: string,
      want: 'boolean' | 'numeric' | 'string',
      at: Path,
    ): void => {
      if (resources === null) return;
      const r = resources.get(name);
      if (r === undefined)
        f.error(at, `host ${h.name} lists resource "${name}", which is not defined in resources.yaml`);
      else if (r.scope !== 'host')
        f.error(at, `resource "${name}" is cluster-scope (a shared pool); hosts cannot hold it`);
      else if (r.type !== want)
        f.error(
          at,
          `resource "${name}" is ${r.type}; list it under ${r.type === 'boolean' ? 'resources' : r.type === 'numeric' ? 'numeric' : 'strings'}, not ${key}`,
        );
    };
    (h.resources ?? []).forEach((n, k) => check('resources', n, 'boolean', [...path, 'resources', k]));
    for (const n of Object.keys(h.numeric ?? {})) check('numeric', n, 'numeric', [...path, 'numeric', n]);
    // Capacities are counted in milli-units like the reservations against them (amount.ts).
    for (const [n, v] of Object.entries(h.numeric ?? {})) {
      const problem = amountProblem(v);
      if (problem !== null) f.error([...path, 'numeric', n], problem);
    }
    for (const n of Object.keys(h.strings ?? {})) check('strings', n, 'string', [...path, 'strings', n]);
    if (mem === null) return null;
    return {
      name: h.name,
      slots: h.slots,
      mem_bytes: mem,
      booleans: [...new Set(h.resources ?? [])].sort(),
      numerics: Object.entries(h.numeric ?? {})
        .map(([name, value]) => ({ name, value }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
      strings: Object.entries(h.strings ?? {})
        .map(([name, value]) => ({ name, value }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
    };
  });
}
