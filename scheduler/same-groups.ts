// `same[a:b]`: the candidate hosts grouped by their values of the named attributes (string,
// boolean, ncpus, maxmem or a declared numeric), in the order of each group's first host; a host
// without a value for one of them is in no group.

import { fromMilli } from '../model/amount.js';
import type { HostView } from './host-view.js';

export interface SameGroup {
  /** The attributes' values, joined by NUL. */
  readonly key: string;
  readonly hosts: number[];
}

/** The groups of `list` (host indices, in order) sharing the values of `same`. */
export function sameGroups(view: HostView, same: readonly string[] | null, list: ArrayLike<number>): SameGroup[] {
  const attrs = (same ?? []).map((a) => attrValues(view, a));
  const groups = new Map<string, SameGroup>();
  outer: for (let k = 0; k < list.length; k++) {
    const i = list[k] as number;
    let key = '';
    for (let a = 0; a < attrs.length; a++) {
      const val = attrs[a]!(i);
      if (val === undefined) continue outer;
      key += a === 0 ? val : `\u0000${val}`;
    }
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = { key, hosts: [] }));
    g.hosts.push(i);
  }
  return [...groups.values()];
}

/** A host attribute's value as text for `same[...]`, undefined where the host has none. */
function attrValues(v: HostView, name: string): (i: number) => string | undefined {
  const s = v.stringOf(name);
  if (s !== undefined) return (i) => s[i];
  const b = v.booleanOf(name);
  if (b !== undefined) return (i) => (b[i] === 1 ? '1' : '0');
  switch (name) {
    case 'ncpus':
      return (i) => String(v.slotsCap[i]);
    case 'maxmem':
      return (i) => String(v.maxmemMb[i]);
  }
  const r = v.declaredResource(name);
  if (r !== undefined) return (i) => (r.declared[i] === 1 ? String(fromMilli(r.capMilli[i] as number)) : undefined);
  return () => undefined;
}
