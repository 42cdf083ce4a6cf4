// The hosts' part of a snapshot (snapshot.ts): each host's last registration (`hosts`, host-codec.ts)
// and the hosts an administrator closed (`closedHosts`: ClosedHost 1 data word, 3 ptrs: timeMs d0;
// host p0, reason p1, user p2), the hosts' credential states (`hostCredentials`, issue 19:
// HostCredentialState 1 data word, 1 ptr: epoch d0, revoked bit 32; host p0) and the revoked tokens
// (`revokedTokens`: RevokedToken 1 data word, 1 ptr: untilMs d0; jti p0). A snapshot written before
// issue 19 has neither: every host at epoch 0 and no token revoked. Pure.

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

/** The hosts' credential states and the revoked tokens: small, written whole at once. */
export function writeCredentials(w: Writer, hostsPtr: number, tokensPtr: number, state: ControllerState): void {
  let at = w.structList(hostsPtr, state.hostCredentials.size, 1, 1);
  for (const [host, h] of state.hostCredentials) {
    w.u32(at, h.epoch);
    w.bool(at, 32, h.revoked);
    w.text(at + 8, host);
    at += 16;
  }
  at = w.structList(tokensPtr, state.revokedTokens.size, 1, 1);
  for (const [jti, until] of state.revokedTokens) {
    w.i64(at, until);
    w.text(at + 8, jti);
    at += 16;
  }
}

export function restoreCredentials(r: Reader, hostsPtr: number, tokensPtr: number, state: ControllerState): void {
  const hosts = hostsPtr < 0 ? null : r.list(hostsPtr);
  for (let i = 0; i < (hosts?.count ?? 0); i++) {
    const e = r.elem(hosts!, i);
    state.hostCredentials.set(r.text(e, 0) ?? '', { epoch: r.u32(e, 0), revoked: r.bool(e, 32) });
  }
  const tokens = tokensPtr < 0 ? null : r.list(tokensPtr);
  for (let i = 0; i < (tokens?.count ?? 0); i++) {
    const e = r.elem(tokens!, i);
    state.revokedTokens.set(r.text(e, 0) ?? '', r.i64(e, 0));
  }
}
