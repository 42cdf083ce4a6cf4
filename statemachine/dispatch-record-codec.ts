// The codec of a dispatch record (DispatchRecord, inside a DispatchFact and a snapshot's Job) and
// of a placement's hosts: the writer, the reader, and DISPATCH_RECORD_FIELDS (each field read
// alone, for a finished job's record kept encoded).

import type { Reader, StructRef, Writer } from '../wire/capnp-wire.js';
import type { EnvVar, WithOrigin } from '../model/profile-types.js';
import {
  EMPTY,
  enumAt,
  EXEC_MODES,
  type FieldReaders,
  LAUNCH_TYPES,
  LIMIT_KEYS,
  originNum,
  originOf,
} from './codec-shared.js';
import type { DispatchRecord, EffectiveLimits, HostTasks } from './dispatch-record.js';
import { readEffectiveResReq, writeEffectiveResReq } from './resreq-codec.js';

export function writeHosts(w: Writer, ptr: number, hosts: readonly HostTasks[]): void {
  if (hosts.length === 0) return;
  let at = w.structList(ptr, hosts.length, 1, 1);
  for (const h of hosts) {
    w.u32(at, h.tasks);
    w.text(at + 8, h.host);
    at += 16;
  }
}

/** DispatchRecord: 1 data word, 10 pointers. */
export function writeDispatchRecord(w: Writer, ptr: number, r: DispatchRecord): void {
  const d = w.struct(ptr, 1, 10);
  const p = d + 8;
  w.text(p, r.profile);
  w.text(p + 8, r.profileHash);
  w.u16(d, EXEC_MODES.indexOf(r.mode));
  w.u16(d + 2, LAUNCH_TYPES.indexOf(r.launchType));
  writeEffectiveResReq(w, p + 16, r.resreq);
  w.u32(d + 4, r.tasks);
  writeHosts(w, p + 24, r.hosts);
  if (r.env.length > 0) {
    let at = w.structList(p + 32, r.env.length, 1, 2); // EnvTerm: name p0, value p1, origin d0
    for (const e of r.env) {
      w.u16(at, originNum(e.origin));
      w.text(at + 8, e.value.name);
      w.text(at + 16, e.value.value);
      at += 24;
    }
  }
  let nLimits = 0;
  for (const k of LIMIT_KEYS) if (r.limits[k] !== undefined) nLimits++;
  if (nLimits > 0) {
    let at = w.structList(p + 40, nLimits, 2, 0); // LimitTerm: kind d0, value d8, origin d2
    for (let i = 0; i < LIMIT_KEYS.length; i++) {
      const v = r.limits[LIMIT_KEYS[i]!];
      if (v === undefined) continue;
      w.u16(at, i);
      w.u16(at + 2, originNum(v.origin));
      w.f64(at + 8, v.value);
      at += 16;
    }
  }
  w.text(p + 48, r.profilePreExec);
  w.text(p + 56, r.profilePostExec);
  w.text(p + 64, r.jobPreExec);
  w.text(p + 72, r.jobPostExec);
}

export function readHosts(r: Reader, ptr: number): readonly HostTasks[] {
  if (ptr < 0) return EMPTY;
  const l = r.list(ptr);
  if (l === null || l.count === 0) return EMPTY;
  const out = new Array<HostTasks>(l.count);
  for (let i = 0; i < l.count; i++) {
    const e = r.elem(l, i);
    out[i] = { host: r.text(e, 0) ?? '', tasks: r.u32(e, 0) };
  }
  return out;
}

function readRecordEnv(r: Reader, s: StructRef): readonly WithOrigin<EnvVar>[] {
  const el = s.ptrCount > 4 ? r.list(r.ptr(s, 4)) : null;
  if (el === null || el.count === 0) return EMPTY;
  const out = new Array<WithOrigin<EnvVar>>(el.count);
  for (let i = 0; i < el.count; i++) {
    const e = r.elem(el, i);
    out[i] = { value: { name: r.text(e, 0) ?? '', value: r.text(e, 1) ?? '' }, origin: originOf(r.u16(e, 0)) };
  }
  return out;
}

function readRecordLimits(r: Reader, s: StructRef): EffectiveLimits {
  const limits: { -readonly [K in keyof EffectiveLimits]?: WithOrigin<number> } = {};
  const ll = s.ptrCount > 5 ? r.list(r.ptr(s, 5)) : null;
  if (ll !== null) {
    for (let i = 0; i < ll.count; i++) {
      const e = r.elem(ll, i);
      const key = enumAt(LIMIT_KEYS, r.u16(e, 0), 'limit kind', e.data);
      limits[key] = { value: r.f64(e, 8), origin: originOf(r.u16(e, 2)) };
    }
  }
  return limits;
}

/** Each DispatchRecord field read on its own from a DispatchRecord struct (as JOB_SPEC_FIELDS). */
export const DISPATCH_RECORD_FIELDS: FieldReaders<DispatchRecord> = {
  profile: (r, s) => r.text(s, 0),
  profileHash: (r, s) => r.text(s, 1),
  mode: (r, s) => enumAt(EXEC_MODES, r.u16(s, 0), 'execution mode', s.data),
  launchType: (r, s) => enumAt(LAUNCH_TYPES, r.u16(s, 2), 'launch type', s.data),
  resreq: (r, s) => readEffectiveResReq(r, r.ptr(s, 2)),
  tasks: (r, s) => r.u32(s, 4),
  hosts: (r, s) => readHosts(r, r.ptr(s, 3)),
  env: readRecordEnv,
  limits: readRecordLimits,
  profilePreExec: (r, s) => r.text(s, 6),
  profilePostExec: (r, s) => r.text(s, 7),
  jobPreExec: (r, s) => r.text(s, 8),
  jobPostExec: (r, s) => r.text(s, 9),
};

/** A dispatch record; null for a null pointer (an old record: no profile, mode direct). */
export function readDispatchRecord(r: Reader, ptr: number): DispatchRecord | null {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return null;
  const F = DISPATCH_RECORD_FIELDS;
  return {
    profile: F.profile(r, s),
    profileHash: F.profileHash(r, s),
    mode: F.mode(r, s),
    launchType: F.launchType(r, s),
    resreq: F.resreq(r, s),
    tasks: F.tasks(r, s),
    hosts: F.hosts(r, s),
    env: F.env(r, s),
    limits: F.limits(r, s),
    profilePreExec: F.profilePreExec(r, s),
    profilePostExec: F.profilePostExec(r, s),
    jobPreExec: F.jobPreExec(r, s),
    jobPostExec: F.jobPostExec(r, s),
  };
}
