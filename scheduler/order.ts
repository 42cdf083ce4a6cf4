// `order[...]`: the order in which a job's candidate hosts are tried. A list is kept sorted per
// (select, order) for the whole pass and repaired lazily: each reservation notes the host in the
// view's change log, and the next job that reads the list moves only the hosts that changed
// (binary-search re-insertion) instead of sorting 1,000 hosts again.
//
// Keys (ascending unless written `-key`): `slots` (free slots now), a host-scoped numeric resource
// (free now: `mem` in MB), `ncpus` (configured slots), `maxmem` (configured MB), a string attribute
// (`hname`, `rack`: code-unit order). A host without a value for a key sorts after every host with
// one, in either direction. Ties fall back to the host name, so the order is total and every pass
// with the same inputs tries hosts in the same order. No order given: `-slots` (most free first).

import type { OrderKey } from '../model/profile-types.js';
import type { HostView } from './host-view.js';

export const DEFAULT_ORDER: readonly OrderKey[] = Object.freeze([{ name: 'slots', descending: true }]);

type Compare = (a: number, b: number) => number;

/** A change of more hosts than count / FULL_SORT_DIVISOR re-sorts the whole list instead of moving each. */
const FULL_SORT_DIVISOR = 8;

export class OrderedHosts {
  private readonly arr: Int32Array;
  private readonly member: Uint8Array;
  private readonly compare: Compare;
  /** True when a key reads a value that reservations change (slots, a host resource). */
  readonly dynamic: boolean;
  private syncedAt: number;
  private readonly seen: Int32Array;
  private generation = 0;

  constructor(
    private readonly view: HostView,
    hosts: Int32Array,
    keys: readonly OrderKey[],
  ) {
    const built = buildCompare(view, keys);
    this.compare = built.compare;
    this.dynamic = built.dynamic;
    this.arr = Int32Array.from(hosts);
    this.member = new Uint8Array(view.count);
    for (const h of hosts) this.member[h] = 1;
    this.seen = new Int32Array(view.count).fill(-1);
    this.arr.sort(this.compare);
    this.syncedAt = view.changes;
  }

  /** The hosts in order, as of now (repairs the list first). Read-only for the caller. */
  hosts(): Int32Array {
    const end = this.view.changes;
    if (this.syncedAt === end) return this.arr;
    if (!this.dynamic) {
      this.syncedAt = end;
      return this.arr;
    }
    const gen = ++this.generation;
    const changed: number[] = [];
    for (let k = this.syncedAt; k < end; k++) {
      const h = this.view.changeAt(k);
      if (this.member[h] === 1 && this.seen[h] !== gen) {
        this.seen[h] = gen;
        changed.push(h);
      }
    }
    this.syncedAt = end;
    const arr = this.arr;
    const n = arr.length;
    if (changed.length === 0) return arr;
    if (changed.length * FULL_SORT_DIVISOR > n) {
      arr.sort(this.compare);
      return arr;
    }
    // Take the changed hosts out (the rest keep their keys, so stay sorted), then insert each.
    let m = n;
    for (const h of changed) {
      const p = arr.indexOf(h);
      arr.copyWithin(p, p + 1, m);
      m--;
    }
    const cmp = this.compare;
    for (const h of changed) {
      let lo = 0;
      let hi = m;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (cmp(arr[mid] as number, h) < 0) lo = mid + 1;
        else hi = mid;
      }
      arr.copyWithin(lo + 1, lo, m);
      arr[lo] = h;
      m++;
    }
    return arr;
  }
}

/** The canonical key of an order (`-slots`, `maxmem:-mem`), for caching lists. */
export function orderKeyText(keys: readonly OrderKey[]): string {
  return keys.map((k) => (k.descending ? `-${k.name}` : k.name)).join(':');
}

interface Accessor {
  readonly num?: (i: number) => number;
  readonly str?: readonly (string | undefined)[];
  readonly descending: boolean;
  /** True when reservations change the value (slots, a host resource): the list needs repairs. */
  readonly dynamic: boolean;
}

function buildCompare(view: HostView, keys: readonly OrderKey[]): { compare: Compare; dynamic: boolean } {
  // The default, and the most common explicit order: free slots, most first.
  if (keys.length === 1 && keys[0]!.name === 'slots' && view.stringOf('slots') === undefined) {
    return { compare: freeSlotsCompare(view.slotsFree, keys[0]!.descending), dynamic: true };
  }
  let dynamic = false;
  const acc: Accessor[] = [];
  for (const k of keys) {
    const a = accessorOf(view, k);
    // A name no host has a value for orders nothing: every host ties on it.
    if (a === undefined) continue;
    acc.push(a);
    if (a.dynamic) dynamic = true;
  }
  return { compare: compareByAccessors(acc), dynamic };
}

/** Free slots alone, ties by host: the fast path of the default order. */
function freeSlotsCompare(free: Float64Array, descending: boolean): Compare {
  return descending
    ? (a, b) => (free[b] as number) - (free[a] as number) || a - b
    : (a, b) => (free[a] as number) - (free[b] as number) || a - b;
}

/** How one order key reads a host's value: a string attribute, or a number (NaN when the host has none). */
function accessorOf(view: HostView, k: OrderKey): Accessor | undefined {
  const str = view.stringOf(k.name);
  if (str !== undefined) return { str, descending: k.descending, dynamic: false };
  switch (k.name) {
    case 'slots': {
      const free = view.slotsFree;
      return { num: (i) => free[i] as number, descending: k.descending, dynamic: true };
    }
    case 'ncpus': {
      const cap = view.slotsCap;
      return { num: (i) => cap[i] as number, descending: k.descending, dynamic: false };
    }
    case 'maxmem': {
      const mem = view.maxmemMb;
      return { num: (i) => mem[i] as number, descending: k.descending, dynamic: false };
    }
    default: {
      const r = view.declaredResource(k.name);
      if (r === undefined) return undefined;
      // Free milli-units: exact integers, ordered as the amounts in units are.
      const { capMilli, usedMilli, declared } = r;
      const num = (i: number): number => (declared[i] === 1 ? (capMilli[i] as number) - (usedMilli[i] as number) : NaN);
      return { num, descending: k.descending, dynamic: true };
    }
  }
}

/** Key by key; a host without a value sorts after every host with one, in either direction; ties by host. */
function compareByAccessors(acc: readonly Accessor[]): Compare {
  return (a, b) => {
    for (const k of acc) {
      let c: number;
      if (k.num !== undefined) {
        const x = k.num(a);
        const y = k.num(b);
        const xm = x !== x;
        const ym = y !== y;
        if (xm || ym) {
          if (xm && ym) continue;
          return xm ? 1 : -1;
        }
        c = x < y ? -1 : x > y ? 1 : 0;
      } else {
        const s = k.str as readonly (string | undefined)[];
        const x = s[a];
        const y = s[b];
        if (x === undefined || y === undefined) {
          if (x === undefined && y === undefined) continue;
          return x === undefined ? 1 : -1;
        }
        c = x < y ? -1 : x > y ? 1 : 0;
      }
      if (c !== 0) return k.descending ? -c : c;
    }
    return a - b;
  };
}
