// The scheduler's view of the cluster for one pass: every configured host with what it has
// (hosts.yaml's capacity and attributes reconciled with its worker's registration,
// statemachine/host-capacity.ts, exactly as apply reconciles them) and what is free (capacity
// minus what running jobs hold, minus in-flight dispatches, minus what this pass has already
// reserved), plus the cluster-scoped pools (licenses). Built once per pass from the replicated state and then mutated only by
// reservations; nothing here reads a clock, a socket or randomness.
//
// Units (the same as resources.yaml, hosts.yaml and statemachine/usage.ts):
//   slots             tasks; one task holds one slot.
//   host numerics     as hosts.yaml `numeric:` declares them (`mem` in MB, `gpu` a count). A host
//                     that does not declare a resource has capacity 0 for rusage (usage.ts's rule)
//                     and no value for select / order.
//   maxmem            the host's configured memory (hosts.yaml `mem:`) in MB (MiB), an LSF built-in.
//   ncpus             the host's configured slots.
//
// Arithmetic: host-scoped capacities, what is held, pool totals and pool use are integers in
// milli-units (model/amount.ts), exactly as usage.ts accounts them, so the scheduler never
// proposes a placement apply declines by rounding (nor misses one apply would accept). What select
// sees (`startFree`, `startFree(name)`) and what reasons print is in units.
//
// Accounting rule (usage.ts): a host-scoped resource is reserved per task on each host; a
// cluster-scoped resource once per job from its pool; a pool without a total is not limited.
//
// Hosts are indexed 0..count-1 in name order (code-unit order), so every iteration is deterministic.

import type { ClusterConfig } from '../model/config-types.js';
import type { DispatchRecord } from '../statemachine/dispatch-record.js';
import { hostCapacity, type RegisteredHost } from '../statemachine/host-capacity.js';
import { fromMilli, toMilli } from '../model/amount.js';
import type { Usage } from '../statemachine/usage.js';

export const MIB_BYTES = 1024 * 1024;

/** One cluster-scoped pool (resources.yaml `scope: cluster` with a `total`). */
export interface Pool {
  readonly name: string;
  /** The pool's size in units (resources.yaml `total`), for reasons. */
  readonly total: number;
  readonly totalMilli: number;
  /** Milli-units held by running jobs, in-flight dispatches and this pass's reservations. */
  usedMilli: number;
}

/** The cluster-scoped pools of one pass. Pools without a total are absent (not limited). */
export class ClusterPools {
  private readonly pools = new Map<string, Pool>();
  /** Free amount of each pool when the pass began (what `select[license_foam>0]` sees). */
  private readonly freeAtStart = new Map<string, number>();

  constructor(config: ClusterConfig, usage: Usage, inFlight: readonly DispatchRecord[] = []) {
    for (const r of config.resources.values()) {
      if (r.scope !== 'cluster' || r.total === null) continue;
      const totalMilli = toMilli(r.total, `resources.yaml ${r.name} total`);
      this.pools.set(r.name, {
        name: r.name,
        total: r.total,
        totalMilli,
        usedMilli: usage.clusterRusage.get(r.name) ?? 0,
      });
    }
    for (const rec of inFlight) {
      for (const r of rec.resreq.rusage) {
        const p = this.pools.get(r.value.name);
        if (p !== undefined) p.usedMilli += toMilli(r.value.value, `rusage ${r.value.name} of an in-flight dispatch`);
      }
    }
    for (const p of this.pools.values()) this.freeAtStart.set(p.name, fromMilli(p.totalMilli - p.usedMilli));
  }

  /** The pool of a cluster-scoped resource, or undefined when it is not limited (or not cluster-scoped). */
  get(name: string): Pool | undefined {
    return this.pools.get(name);
  }

  /** Free now in units (total minus everything held and reserved); undefined when not a limited pool. */
  free(name: string): number | undefined {
    const p = this.pools.get(name);
    return p === undefined ? undefined : fromMilli(p.totalMilli - p.usedMilli);
  }

  startFree(name: string): number | undefined {
    return this.freeAtStart.get(name);
  }
}

/** A host-scoped numeric resource across all hosts (rusage capacity and what is held). */
export interface HostResource {
  readonly name: string;
  /** Capacity per host in milli-units, integers (0 when the host does not declare it: usage.ts's rule). */
  readonly capMilli: Float64Array;
  /** 1 when the host declares the resource (select / order see a value only then). */
  readonly declared: Uint8Array;
  /** Milli-units held per host by running jobs, in-flight dispatches and this pass's reservations (integers). */
  readonly usedMilli: Float64Array;
  /** Free in units (capacity - held) when the pass began, NaN where undeclared (what select sees). */
  readonly startFree: Float64Array;
}

export interface HostViewOptions {
  /** Dispatches proposed but not yet applied: their resources are taken although `usage` does not show them yet. */
  readonly inFlight?: readonly DispatchRecord[];
  /** The hosts' registrations (state.hosts): a registered host has the smaller capacity of the two. */
  readonly registered?: ReadonlyMap<string, RegisteredHost>;
}

export class HostView {
  readonly config: ClusterConfig;
  readonly count: number;
  /** Host names by index, sorted. */
  readonly names: readonly string[];
  readonly indexOf: ReadonlyMap<string, number>;
  /** 1 when the host's worker is connected and heartbeating (the caller's `available` set). */
  readonly available: Uint8Array;
  readonly availableCount: number;
  /** Configured slots (`ncpus`). */
  readonly slotsCap: Float64Array;
  /** Free slots now (configured minus held minus reserved; may go negative when a config shrank a host). */
  readonly slotsFree: Float64Array;
  /** Free slots when the pass began (what `select[slots>=4]` sees). */
  readonly slotsStartFree: Float64Array;
  /** Configured memory in MB (`maxmem`). */
  readonly maxmemMb: Float64Array;
  private readonly resources = new Map<string, HostResource>();
  private readonly booleans = new Map<string, Uint8Array>();
  private readonly strings = new Map<string, (string | undefined)[]>();
  /** Host indices whose free amounts changed, in order (ordered candidate lists replay it). */
  private changeLog: Int32Array = new Int32Array(1024);
  private changeCount = 0;

  constructor(config: ClusterConfig, usage: Usage, available: ReadonlySet<string>, opts: HostViewOptions = {}) {
    this.config = config;
    const names = [...config.hosts.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const n = names.length;
    this.count = n;
    this.names = names;
    const indexOf = new Map<string, number>();
    names.forEach((name, i) => indexOf.set(name, i));
    this.indexOf = indexOf;
    this.available = new Uint8Array(n);
    this.slotsCap = new Float64Array(n);
    this.slotsFree = new Float64Array(n);
    this.maxmemMb = new Float64Array(n);
    const hname: (string | undefined)[] = new Array<string | undefined>(n);
    let availableCount = 0;

    // Every host-scoped numeric resource any host declares gets a row; a resource named only in a
    // rusage gets one lazily (all zeros) through hostResource().
    for (let i = 0; i < n; i++) {
      const name = names[i] as string;
      const h = hostCapacity(config.hosts.get(name)!, opts.registered?.get(name)).host;
      hname[i] = h.name;
      if (available.has(h.name)) {
        this.available[i] = 1;
        availableCount++;
      }
      this.slotsCap[i] = h.slots;
      this.slotsFree[i] = h.slots - (usage.slots.get(h.name) ?? 0);
      this.maxmemMb[i] = Math.floor(h.mem_bytes / MIB_BYTES);
      for (const b of h.booleans) this.booleanRow(b)[i] = 1;
      for (const s of h.strings) this.stringRow(s.name)[i] = s.value;
      for (const r of h.numerics) {
        const row = this.hostResource(r.name);
        row.capMilli[i] = toMilli(r.value, `hosts.yaml host ${h.name} numeric ${r.name}`);
        row.declared[i] = 1;
      }
    }
    this.availableCount = availableCount;
    this.strings.set('hname', hname);
    for (const [host, held] of usage.hostRusage) {
      const i = indexOf.get(host);
      if (i === undefined) continue;
      for (const [name, milli] of held) this.hostResource(name).usedMilli[i]! += milli;
    }
    for (const rec of opts.inFlight ?? []) {
      for (const ht of rec.hosts) {
        const i = indexOf.get(ht.host);
        if (i === undefined) continue;
        this.slotsFree[i]! -= ht.tasks;
        for (const r of rec.resreq.rusage) {
          if (config.resources.get(r.value.name)?.scope === 'cluster') continue;
          this.hostResource(r.value.name).usedMilli[i]! +=
            toMilli(r.value.value, `rusage ${r.value.name} of an in-flight dispatch`) * ht.tasks;
        }
      }
    }
    this.slotsStartFree = Float64Array.from(this.slotsFree);
    for (const row of this.resources.values()) this.fillStartFree(row);
  }

  private fillStartFree(row: HostResource): void {
    for (let i = 0; i < this.count; i++)
      row.startFree[i] =
        row.declared[i] === 1 ? fromMilli((row.capMilli[i] as number) - (row.usedMilli[i] as number)) : NaN;
  }

  private booleanRow(name: string): Uint8Array {
    let row = this.booleans.get(name);
    if (row === undefined) this.booleans.set(name, (row = new Uint8Array(this.count)));
    return row;
  }

  private stringRow(name: string): (string | undefined)[] {
    let row = this.strings.get(name);
    if (row === undefined) this.strings.set(name, (row = new Array<string | undefined>(this.count)));
    return row;
  }

  /** True when `name` is a cluster-scoped resource (reserved once per job from a pool). */
  isClusterScoped(name: string): boolean {
    return this.config.resources.get(name)?.scope === 'cluster';
  }

  /** The host-scoped numeric resource `name` (created empty, capacity 0 everywhere, when no host declares it). */
  hostResource(name: string): HostResource {
    let row = this.resources.get(name);
    if (row === undefined) {
      const n = this.count;
      row = {
        name,
        capMilli: new Float64Array(n),
        declared: new Uint8Array(n),
        usedMilli: new Float64Array(n),
        startFree: new Float64Array(n).fill(NaN),
      };
      this.resources.set(name, row);
    }
    return row;
  }

  /** A declared host-scoped numeric resource, or undefined when no host declares `name`. */
  declaredResource(name: string): HostResource | undefined {
    const row = this.resources.get(name);
    if (row === undefined) return undefined;
    for (let i = 0; i < this.count; i++) if (row.declared[i] === 1) return row;
    return undefined;
  }

  /** Hosts that have the boolean resource (undefined when no host has it). */
  booleanOf(name: string): Uint8Array | undefined {
    return this.booleans.get(name);
  }

  /** A string attribute per host (`hname`, `rack`, `model`), undefined where the host has none. */
  stringOf(name: string): readonly (string | undefined)[] | undefined {
    return this.strings.get(name);
  }

  /** Records that host `i`'s free amounts changed (ordered candidate lists re-sort it lazily). */
  noteChange(i: number): void {
    if (this.changeCount === this.changeLog.length) {
      const next = new Int32Array(this.changeLog.length * 2);
      next.set(this.changeLog);
      this.changeLog = next;
    }
    this.changeLog[this.changeCount++] = i;
  }

  /** The number of changes noted so far (a cursor into the change log). */
  get changes(): number {
    return this.changeCount;
  }

  /** The host index of change number `k` (0 <= k < changes). */
  changeAt(k: number): number {
    return this.changeLog[k] as number;
  }
}
