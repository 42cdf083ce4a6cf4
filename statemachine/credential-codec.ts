// The CredentialFact's body (issue 19; schema/facts.capnp `CredentialFact`), for facts-codec.ts:
// 2 data words, 2 ptrs: untilMs d0, action d8 (CREDENTIAL_ACTIONS index); name p0, user p1. Pure.

import type { Reader, StructRef, Writer } from '../wire/capnp-wire.js';
import { enumAt } from './codec-shared.js';
import type { CredentialAction, CredentialFact } from './facts.js';
import { CREDENTIAL_ACTIONS } from './facts.js';

export function writeCredential(w: Writer, ptr: number, b: CredentialFact): void {
  const d = w.struct(ptr, 2, 2);
  w.i64(d, b.untilMs);
  w.u16(d + 8, CREDENTIAL_ACTIONS.indexOf(b.action));
  w.text(d + 16, b.name);
  w.text(d + 24, b.user);
}

export function readCredential(r: Reader, s: StructRef): CredentialFact {
  return {
    kind: 'credential',
    action: enumAt<CredentialAction>(CREDENTIAL_ACTIONS, r.u16(s, 8), 'credential action', s.data),
    untilMs: r.i64(s, 0),
    name: r.text(s, 0) ?? '',
    user: r.text(s, 1) ?? '',
  };
}
