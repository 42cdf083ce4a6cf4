// The hosts' part of a snapshot (snapshot.ts): each host's last registration (`hosts`, host-codec.ts)
// and the hosts an administrator closed (`closedHosts`: ClosedHost 1 data word, 3 ptrs: timeMs d0;
// host p0, reason p1, user p2). Pure.

import type { Reader, Writer } from '../wire/capnp-wire.js';
import {
  readRegisteredHostIn,
  REGISTERED_HOST_DATA_WORDS,
  REGISTERED_HOST_PTRS,
  writeRegisteredHostAt,
} from './host-codec.js';
import type { ControllerState } from './state.js';

export function writeHosts(w: Writer, ptr: number, state: ControllerState): void {
  const bytes = (REGISTERED_HOST_DATA_WORDS + REGISTERED_HOST_PTRS) * 8;
  let at = w.structList(ptr, state.hosts.size, REGISTERED_HOST_DATA_WORDS, REGISTERED_HOST_PTRS);
  for (const h of state.hosts.values()) {
    writeRegisteredHostAt(w, at, h);
    at += bytes;
  }
}

export function writeClosedHosts(w: Writer, ptr: number, state: ControllerState): void {
  let at = w.structList(ptr, state.closedHosts.size, 1, 3);
  for (const h of state.closedHosts.values()) {
    w.i64(at, h.timeMs);
    w.text(at + 8, h.host);
    w.text(at + 16, h.reason);
    w.text(at + 24, h.user);
    at += 32;
  }
}

export function restoreHosts(r: Reader, ptr: number, state: ControllerState): void {
  const hosts = r.list(ptr);
  for (let i = 0; i < (hosts?.count ?? 0); i++) {
    const h = readRegisteredHostIn(r, r.elem(hosts!, i));
    state.hosts.set(h.host, h);
  }
}

export function restoreClosedHosts(r: Reader, ptr: number, state: ControllerState): void {
  const hosts = r.list(ptr);
  for (let i = 0; i < (hosts?.count ?? 0); i++) {
    const e = r.elem(hosts!, i);
    const host = r.text(e, 0) ?? '';
    state.closedHosts.set(host, { host, reason: r.text(e, 1), user: r.text(e, 2) ?? '', timeMs: r.i64(e, 0) });
  }
}
