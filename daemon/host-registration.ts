// A worker's `register` frame as the replicated fact the leader proposes for it (a HostRegisteredFact,
// statemachine/host-capacity.ts), in canonical form (lists sorted, so that two registrations of the
// same resources are equal and a re-registration after a reconnect or a failover proposes nothing).

import type { NamedValue, RegisteredHost } from '../statemachine/host-capacity.js';
import type { Resources } from './worker-protocol.js';

const byName = <T>(a: NamedValue<T>, b: NamedValue<T>): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The registration of `host` with the resources its worker states, accepted at `timeMs`. */
export function registrationOf(host: string, r: Resources, timeMs: number): RegisteredHost {
  return {
    host,
    slots: r.slots,
    memBytes: r.mem_bytes,
    booleans: r.booleans === undefined ? null : [...new Set(r.booleans)].sort(),
    numerics: Object.entries(r.numerics)
      .map(([name, value]) => ({ name, value }))
      .sort(byName),
    strings:
      r.strings === undefined
        ? null
        : Object.entries(r.strings)
            .map(([name, value]) => ({ name, value }))
            .sort(byName),
    timeMs,
  };
}

/**
 * The same resources (the time aside): a re-registration that needs no new fact. Compared field by
 * field (every host of a site re-registers after a failover: no JSON text built per registration).
 */
export function sameResources(a: RegisteredHost, b: RegisteredHost): boolean {
  return (
    a.host === b.host &&
    a.slots === b.slots &&
    a.memBytes === b.memBytes &&
    sameList(a.booleans, b.booleans, (x, y) => x === y) &&
    sameList(a.numerics, b.numerics, sameNamed) &&
    sameList(a.strings, b.strings, sameNamed)
  );
}

function sameNamed<T>(x: NamedValue<T>, y: NamedValue<T>): boolean {
  return x.name === y.name && x.value === y.value;
}

function sameList<T>(a: readonly T[] | null, b: readonly T[] | null, same: (x: T, y: T) => boolean): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!same(a[i]!, b[i]!)) return false;
  return true;
}
