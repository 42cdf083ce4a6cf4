// A host's capacity: what hosts.yaml allows reconciled with what the host's worker registered
// (RegisteredHost, replicated by a HostRegisteredFact, so that every controller, and a new leader
// after a failover, schedules with the same capacity). Which side wins, per kind:
//
//   slots, memory (`mem:`)   the smaller of the two.
//   numeric resources        the smaller of the two, where the worker registers the resource; one it
//                            does not register keeps hosts.yaml's value (a worker cannot see GPUs or
//                            licences unless told); one hosts.yaml does not declare is not used.
//                            The numeric `mem` (MB, what rusage[mem=...] reserves) is also capped at
//                            the registered memory.
//   booleans, strings        must match when the worker states them (--bool, --str): the host offers
//                            only what both sides agree on (a boolean both list, a string both give
//                            the same value). A worker that states none leaves hosts.yaml's.
//
// Every disagreement is a reason naming the host (`node01: registers 8 slots, hosts.yaml allows 64:
// using 8`), shown in the host view and `cluster status`, logged once at registration. A host that
// never registered has hosts.yaml's capacity (it takes no job before it registers). Pure.

import { amountProblem } from '../model/amount.js';
import type { ClusterConfig, HostConfig } from '../model/config-types.js';
import { formatSize as size } from '../model/units.js';

/** A named numeric or string value of a registration (sorted by name). */
export interface NamedValue<T> {
  readonly name: string;
  readonly value: T;
}

/** What a worker registered for its host (schema/facts.capnp `RegisteredHost`). */
export interface RegisteredHost {
  readonly host: string;
  readonly slots: number;
  readonly memBytes: number;
  /** Sorted; null: the worker states none, hosts.yaml's stand. */
  readonly booleans: readonly string[] | null;
  /** Sorted by name. */
  readonly numerics: readonly NamedValue<number>[];
  /** Sorted by name; null: the worker states none. */
  readonly strings: readonly NamedValue<string>[] | null;
  /** When the leader accepted the registration (the fact's time). */
  readonly timeMs: number;
}

/** Every field of RegisteredHost (the compiler checks the list is complete; the codec writes each). */
export const REGISTERED_HOST_FIELDS = [
  'host',
  'slots',
  'memBytes',
  'booleans',
  'numerics',
  'strings',
  'timeMs',
] as const satisfies readonly (keyof RegisteredHost)[];
type MissingField = Exclude<keyof RegisteredHost, (typeof REGISTERED_HOST_FIELDS)[number]>;
const fieldsComplete: [MissingField] extends [never] ? true : MissingField = true;
void fieldsComplete;

/** Most slots a registration may state (UInt32 in the schema). */
export const REGISTERED_SLOTS_MAX = 2 ** 32 - 1;
const MIB_BYTES = 1024 * 1024;
/** The numeric resource capped at the registered memory (MB). */
const MEM_RESOURCE = 'mem';

export interface HostCapacity {
  /** The capacity the scheduler and apply use. */
  readonly host: HostConfig;
  /** Why it differs from hosts.yaml, one reason per disagreement; empty when the two agree. */
  readonly mismatches: readonly string[];
}

export const NO_REGISTRATIONS: ReadonlyMap<string, RegisteredHost> = new Map();

/** Why a registration cannot be used (a value apply could not account exactly), or null. */
export function registrationProblem(r: RegisteredHost): string | null {
  if (!Number.isInteger(r.slots) || r.slots < 1 || r.slots > REGISTERED_SLOTS_MAX)
    return `host ${r.host} registers ${r.slots} slots: a whole number from 1 to ${REGISTERED_SLOTS_MAX}`;
  if (!Number.isSafeInteger(r.memBytes) || r.memBytes < 0)
    return `host ${r.host} registers ${r.memBytes} bytes of memory: a whole number of bytes`;
  for (const n of r.numerics) {
    const p = n.value < 0 ? 'negative' : amountProblem(n.value);
    if (p !== null) return `host ${r.host} registers numeric ${n.name}=${n.value}: ${p}`;
  }
  return null;
}

const memo = new WeakMap<RegisteredHost, { configured: HostConfig; capacity: HostCapacity }>();

/** The capacity of a configured host given its registration (undefined: it never registered). */
export function hostCapacity(configured: HostConfig, reg: RegisteredHost | undefined): HostCapacity {
  if (reg === undefined) return { host: configured, mismatches: [] };
  const seen = memo.get(reg);
  if (seen !== undefined && seen.configured === configured) return seen.capacity;
  const capacity = reconcile(configured, reg);
  memo.set(reg, { configured, capacity });
  return capacity;
}

/** The capacity apply and the scheduler use for host `name`; undefined when hosts.yaml does not list it. */
export function capacityOf(
  config: ClusterConfig,
  registered: ReadonlyMap<string, RegisteredHost>,
  name: string,
): HostConfig | undefined {
  const h = config.hosts.get(name);
  return h === undefined ? undefined : hostCapacity(h, registered.get(name)).host;
}

/** Every configured host's reasons, in host-name order (empty when all agree). */
export function mismatchedHosts(
  config: ClusterConfig,
  registered: ReadonlyMap<string, RegisteredHost>,
): Array<{ host: string; reasons: readonly string[] }> {
  const out: Array<{ host: string; reasons: readonly string[] }> = [];
  for (const name of [...config.hosts.keys()].sort()) {
    const c = hostCapacity(config.hosts.get(name)!, registered.get(name));
    if (c.mismatches.length > 0) out.push({ host: name, reasons: c.mismatches });
  }
  return out;
}

/** How many configured hosts mismatchedHosts would list (GET /metrics: no sort, no list). */
export function mismatchedHostCount(config: ClusterConfig, registered: ReadonlyMap<string, RegisteredHost>): number {
  let n = 0;
  for (const [name, h] of config.hosts) if (hostCapacity(h, registered.get(name)).mismatches.length > 0) n++;
  return n;
}

function reconcile(h: HostConfig, r: RegisteredHost): HostCapacity {
  const why: string[] = [];
  const at = `${h.name}: registers`;
  const slots = Math.min(h.slots, r.slots);
  if (r.slots !== h.slots) why.push(`${at} ${r.slots} slots, hosts.yaml allows ${h.slots}: using ${slots}`);
  const mem_bytes = Math.min(h.mem_bytes, r.memBytes);
  if (r.memBytes !== h.mem_bytes)
    why.push(`${at} ${size(r.memBytes)} memory, hosts.yaml allows ${size(h.mem_bytes)}: using ${size(mem_bytes)}`);
  return {
    host: {
      name: h.name,
      slots,
      mem_bytes,
      numerics: reconcileNumerics(h, r, why),
      booleans: reconcileBooleans(h, r, why),
      strings: reconcileStrings(h, r, why),
    },
    mismatches: why,
  };
}

function reconcileNumerics(h: HostConfig, r: RegisteredHost, why: string[]): HostConfig['numerics'] {
  const at = `${h.name}: registers`;
  const given = new Map(r.numerics.map((n) => [n.name, n.value]));
  const out: Array<{ name: string; value: number }> = [];
  for (const n of h.numerics) {
    const reg = given.get(n.name);
    let value = reg === undefined ? n.value : Math.min(n.value, reg);
    if (reg !== undefined && reg !== n.value)
      why.push(`${at} ${n.name}=${reg}, hosts.yaml allows ${n.name}=${n.value}: using ${value}`);
    if (n.name === MEM_RESOURCE) {
      const mem_mb = Math.floor(r.memBytes / MIB_BYTES);
      if (mem_mb < value) {
        why.push(`${at} ${size(r.memBytes)} memory, hosts.yaml's numeric mem is ${value} MB: using ${mem_mb}`);
        value = mem_mb;
      }
    }
    out.push({ name: n.name, value });
  }
  for (const n of r.numerics)
    if (!h.numerics.some((c) => c.name === n.name))
      why.push(`${at} ${n.name}=${n.value}, hosts.yaml declares no ${n.name}: using none`);
  return out;
}

function reconcileBooleans(h: HostConfig, r: RegisteredHost, why: string[]): readonly string[] {
  if (r.booleans === null) return h.booleans;
  const reg = new Set(r.booleans);
  const both = h.booleans.filter((b) => reg.has(b));
  const same = both.length === h.booleans.length && both.length === reg.size;
  if (!same)
    why.push(
      `${h.name}: registers booleans [${r.booleans.join(', ')}], hosts.yaml has [${h.booleans.join(', ')}]: using [${both.join(', ')}]`,
    );
  return both;
}

function reconcileStrings(h: HostConfig, r: RegisteredHost, why: string[]): HostConfig['strings'] {
  if (r.strings === null) return h.strings;
  const reg = new Map(r.strings.map((s) => [s.name, s.value]));
  const out: Array<{ name: string; value: string }> = [];
  for (const s of h.strings) {
    const v = reg.get(s.name);
    if (v === s.value) out.push(s);
    else if (v === undefined)
      why.push(`${h.name}: registers no ${s.name}, hosts.yaml has ${s.name}=${s.value}: using none`);
    else why.push(`${h.name}: registers ${s.name}=${v}, hosts.yaml has ${s.name}=${s.value}: using none`);
  }
  for (const s of r.strings)
    if (!h.strings.some((c) => c.name === s.name))
      why.push(`${h.name}: registers ${s.name}=${s.value}, hosts.yaml has no ${s.name}: using none`);
  return out;
}
