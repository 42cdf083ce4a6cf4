// The codec of a RegisteredHost (schema/facts.capnp), the body of a HostRegisteredFact and an entry
// of the snapshot's `hosts`. A null list (booleans, strings: "the worker states none") stays null;
// an empty one stays empty.
//
// Layout (`capnp compile -ocapnp schema/facts.capnp`):
//   RegisteredHost  3 data words, 4 ptrs: slots d0, memBytes d8, timeMs d16; host p0, booleans p1,
//                   numerics p2, strings p3.
//   NumericValue    1 data word, 1 ptr: value d0; name p0.
//   StringValue     0 data words, 2 ptrs: name p0, value p1.

import { type Reader, type StructRef, WireError, type Writer } from '../wire/capnp-wire.js';
import type { NamedValue, RegisteredHost } from './host-capacity.js';

export const REGISTERED_HOST_DATA_WORDS = 3;
export const REGISTERED_HOST_PTRS = 4;

/** Writes the struct's fields at `d` (its data section, as `w.struct` or a list element gives it). */
export function writeRegisteredHostAt(w: Writer, d: number, h: RegisteredHost): void {
  const p = d + REGISTERED_HOST_DATA_WORDS * 8;
  w.u32(d, h.slots);
  w.u64(d + 8, h.memBytes);
  w.i64(d + 16, h.timeMs);
  w.text(p, h.host);
  if (h.booleans !== null) {
    const at = w.pointerList(p + 8, h.booleans.length);
    h.booleans.forEach((b, i) => w.text(at + i * 8, b));
  }
  let at = w.structList(p + 16, h.numerics.length, 1, 1);
  for (const n of h.numerics) {
    w.f64(at, n.value);
    w.text(at + 8, n.name);
    at += 16;
  }
  if (h.strings !== null) {
    at = w.structList(p + 24, h.strings.length, 0, 2);
    for (const s of h.strings) {
      w.text(at, s.name);
      w.text(at + 8, s.value);
      at += 16;
    }
  }
}

export function writeRegisteredHost(w: Writer, ptr: number, h: RegisteredHost): void {
  writeRegisteredHostAt(w, w.struct(ptr, REGISTERED_HOST_DATA_WORDS, REGISTERED_HOST_PTRS), h);
}

export function readRegisteredHost(r: Reader, ptr: number): RegisteredHost {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) throw new WireError('host registration without its body', ptr);
  return readRegisteredHostIn(r, s);
}

/** A RegisteredHost from its struct (a list element of the snapshot's `hosts`). */
export function readRegisteredHostIn(r: Reader, s: StructRef): RegisteredHost {
  const listAt = (i: number) => (r.ptr(s, i) < 0 ? null : r.list(r.ptr(s, i)));
  const numerics: NamedValue<number>[] = [];
  const nl = listAt(2);
  for (let i = 0; i < (nl?.count ?? 0); i++) {
    const e = r.elem(nl!, i);
    numerics.push({ name: r.text(e, 0) ?? '', value: r.f64(e, 0) });
  }
  const sl = listAt(3);
  let strings: NamedValue<string>[] | null = null;
  if (sl !== null) {
    strings = [];
    for (let i = 0; i < sl.count; i++) {
      const e = r.elem(sl, i);
      strings.push({ name: r.text(e, 0) ?? '', value: r.text(e, 1) ?? '' });
    }
  }
  return {
    host: r.text(s, 0) ?? '',
    slots: r.u32(s, 0),
    memBytes: r.u64(s, 8),
    booleans: r.ptr(s, 1) < 0 ? null : r.textList(r.ptr(s, 1)),
    numerics,
    strings,
    timeMs: r.i64(s, 16),
  };
}
