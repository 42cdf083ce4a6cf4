// The cluster configuration the simulator's admin proposes: the shipped configs/ files, read once
// per process, then changed in memory from one ConfigFact to the next: profiles removed and put
// back, a cluster pool's total changed, hosts' capacities (with fractional-looking amounts such as
// 0.7 or 2.1 of a `scratch` resource) and slots changed. The files are rebuilt as YAML from the
// parsed documents, so what apply validates is what an admin's `xceadmin config upgrade` would send,
// without the comments (every node parses every ConfigFact: the shipped comments cost a third of it).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import type { SeededRandom } from '../../raft/prng.js';
import type { ConfigFile } from '../../statemachine/facts.js';

/** The simulator's host-scoped resource with fractional amounts (added to resources.yaml). */
export const SIM_SCRATCH_RESOURCE = 'scratch';
/** Amounts the simulator writes: thousandths at most, as resource amounts must be. */
export const SIM_FRACTIONS: readonly number[] = [0.1, 0.2, 0.3, 0.7];
/** Host capacities of `scratch` drawn from these (sums of the fractions above land on them). */
const SCRATCH_CAPACITIES: readonly number[] = [0.3, 0.7, 1, 1.1, 2.1, 3.3];
/** Profiles the simulator may remove and put back (never the default, python). */
const REMOVABLE_PROFILES: readonly string[] = ['openfoam', 'mpich', 'pytorch-gpu', 'jupyter'];

interface HostEntry {
  name: string;
  slots: number;
  mem: string;
  resources?: string[];
  numeric?: Record<string, number>;
  strings?: Record<string, string>;
}

interface ShippedConfig {
  /** Every shipped file as parsed YAML (comments dropped: the files are rebuilt from these). */
  readonly docs: ReadonlyMap<string, Record<string, unknown>>;
}

let shipped: ShippedConfig | undefined;

/** The shipped configs/ directory (this file runs from <outDir>/testing/sim/). */
export function shippedConfigDir(): string {
  return fileURLToPath(new URL('../../../configs/', import.meta.url));
}

/** Reads and parses configs/*.yaml once per process. */
function loadShipped(): ShippedConfig {
  if (shipped !== undefined) return shipped;
  const dir = shippedConfigDir();
  const docs = new Map<string, Record<string, unknown>>();
  for (const f of readdirSync(dir).sort())
    if (f.endsWith('.yaml')) docs.set(f, parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>);
  for (const need of ['xce.yaml', 'applications.yaml', 'hosts.yaml', 'resources.yaml']) {
    if (!docs.has(need)) throw new Error(`the simulator needs ${need} in ${dir} (the shipped configuration)`);
  }
  shipped = { docs };
  return shipped;
}

/** One run's configuration, changed in memory. */
export class SimConfig {
  private readonly removed = new Set<string>();
  private licenseTotal = 20;
  private readonly hosts: HostEntry[];
  /** Bumped by each change (the trace names versions). */
  version = 0;
  private cached: { version: number; files: ConfigFile[] } | undefined;

  constructor(private readonly controllers: readonly number[]) {
    const hosts = (loadShipped().docs.get('hosts.yaml')!['hosts'] ?? []) as HostEntry[];
    this.hosts = hosts.map((h) => ({ ...h, numeric: { ...(h.numeric ?? {}), [SIM_SCRATCH_RESOURCE]: 2.1 } }));
  }

  /** Names of the shipped hosts. */
  hostNames(): string[] {
    return this.hosts.map((h) => h.name);
  }

  isRemoved(profile: string): boolean {
    return this.removed.has(profile);
  }

  /** Applies one random change; returns what it did, for the trace. */
  mutate(rng: SeededRandom): string {
    this.version++;
    const r = rng.intBelow(5);
    if (r === 0) {
      const name = rng.pick(REMOVABLE_PROFILES);
      if (this.removed.delete(name)) return `profile ${name} put back`;
      this.removed.add(name);
      return `profile ${name} removed`;
    }
    if (r === 1) {
      this.licenseTotal = rng.pick([0, 1, 2, 3, 20]);
      return `license_foam total ${this.licenseTotal}`;
    }
    const h = rng.pick(this.hosts);
    if (r === 2) {
      const v = rng.pick(SCRATCH_CAPACITIES);
      h.numeric = { ...h.numeric, [SIM_SCRATCH_RESOURCE]: v };
      return `host ${h.name} scratch ${v}`;
    }
    if (r === 3) {
      h.slots = rng.pick([1, 2, 4, 32, 64]);
      return `host ${h.name} slots ${h.slots}`;
    }
    const gpu = h.numeric?.['gpu'];
    if (gpu !== undefined) {
      const v = rng.pick([0.9, 1, 2.5, 4]);
      h.numeric = { ...h.numeric, gpu: v };
      return `host ${h.name} gpu ${v}`;
    }
    const mem = h.numeric?.['mem'] ?? 1024;
    const v = rng.pick([mem / 2, mem + 0.5, 262144]);
    h.numeric = { ...h.numeric, mem: v };
    return `host ${h.name} mem ${v}`;
  }

  /** The configuration files as they stand (rebuilt as YAML after a change, else the same objects). */
  files(): ConfigFile[] {
    if (this.cached?.version === this.version) return this.cached.files;
    const out: ConfigFile[] = [];
    for (const [path, doc] of loadShipped().docs) out.push({ path, text: stringify(this.fileDoc(path, doc)) });
    this.cached = { version: this.version, files: out };
    return out;
  }

  private fileDoc(path: string, doc: Record<string, unknown>): Record<string, unknown> {
    switch (path) {
      case 'xce.yaml':
        return { ...doc, controllers: this.controllers.map((id) => ({ id, host: '127.0.0.1', port: 7100 + id })) };
      case 'applications.yaml':
        return {
          ...doc,
          applications: (doc['applications'] as Record<string, unknown>[]).filter(
            (a) => !this.removed.has(String(a['name'])),
          ),
        };
      case 'hosts.yaml':
        return { ...doc, hosts: this.hosts };
      case 'resources.yaml': {
        const resources = (doc['resources'] as Record<string, unknown>[]).map((r) =>
          r['name'] === 'license_foam' ? { ...r, total: this.licenseTotal } : r,
        );
        resources.push({
          name: SIM_SCRATCH_RESOURCE,
          type: 'numeric',
          description: "Scratch space in TB (the simulator's fractional resource)",
        });
        return { ...doc, resources };
      }
      default:
        return doc;
    }
  }
}
