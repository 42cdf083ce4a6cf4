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

/** The same resources (the time aside): a re-registration that needs no new fact. */
export function sameResources(a: RegisteredHost, b: RegisteredHost): boolean {
  const key = (h: RegisteredHost): string =>
    JSON.stringify([h.host, h.slots, h.memBytes, h.booleans, h.numerics, h.strings]);
  return key(a) === key(b);
}

/** A WebSocket close reason is at most 123 bytes. */
const CLOSE_REASON_BYTES_MAX = 123;

/** A close reason within the WebSocket limit (host names are ASCII, so are these reasons). */
export function cutCloseReason(text: string): string {
  return Buffer.byteLength(text) <= CLOSE_REASON_BYTES_MAX ? text : `${text.slice(0, CLOSE_REASON_BYTES_MAX - 3)}...`;
}
