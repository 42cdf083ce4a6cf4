// The small values that repeat from job to job: an env list, a text list (argv) and limits,
// written, and read once and shared, frozen, between jobs (wire/shared-values.ts). Keys are the
// texts' intern slots (Reader.textSlot); a candidate is checked field by field, strings by identity
// (interned) or, failing that, by value.

import type { Reader, Writer } from '../wire/capnp-wire.js';
import type { EnvVar, Limits } from '../model/profile-types.js';
import { mixKey, SHARED_LIST_LENGTH_MAX, SharedValues } from '../wire/shared-values.js';
import { EMPTY } from './codec-shared.js';

export function writeEnvList(w: Writer, ptr: number, env: readonly EnvVar[]): void {
  if (env.length === 0) return;
  let at = w.structList(ptr, env.length, 0, 2);
  for (const e of env) {
    w.text(at, e.name);
    w.text(at + 8, e.value);
    at += 16;
  }
}

export function writeLimits(w: Writer, ptr: number, l: Limits): void {
  if (l.runtime_s === undefined && l.memory_bytes === undefined && l.cpu_s === undefined && l.tasks === undefined)
    return;
  const d = w.struct(ptr, 4, 0);
  if (l.runtime_s !== undefined) w.u64(d, l.runtime_s);
  if (l.memory_bytes !== undefined) w.u64(d + 8, l.memory_bytes);
  if (l.cpu_s !== undefined) w.u64(d + 16, l.cpu_s);
  if (l.tasks !== undefined) w.u32(d + 24, l.tasks);
}

export function writeTextList(w: Writer, ptr: number, list: readonly string[]): void {
  if (list.length === 0) return;
  const at = w.pointerList(ptr, list.length);
  for (let i = 0; i < list.length; i++) w.text(at + i * 8, list[i]!);
}

const SHARED_ENV_LISTS = new SharedValues<readonly EnvVar[]>(4096);
const SHARED_ARGVS = new SharedValues<readonly string[]>(4096);
const SHARED_LIMITS = new SharedValues<Limits>(256);
const scratchNames = new Array<string>(SHARED_LIST_LENGTH_MAX).fill('');
const scratchValues = new Array<string>(SHARED_LIST_LENGTH_MAX).fill('');

export function readEnvList(r: Reader, ptr: number): readonly EnvVar[] {
  if (ptr < 0) return EMPTY;
  const l = r.list(ptr);
  if (l === null || l.count === 0) return EMPTY;
  const n = l.count;
  if (n > SHARED_LIST_LENGTH_MAX) {
    const out = new Array<EnvVar>(n);
    for (let i = 0; i < n; i++) {
      const e = r.elem(l, i);
      out[i] = { name: r.text(e, 0) ?? '', value: r.text(e, 1) ?? '' };
    }
    return out;
  }
  let key = n;
  let shareable = true;
  for (let i = 0; i < n; i++) {
    const e = r.elem(l, i);
    scratchNames[i] = r.text(e, 0) ?? '';
    shareable &&= r.textSlot >= 0;
    key = mixKey(key, r.textSlot);
    scratchValues[i] = r.text(e, 1) ?? '';
    shareable &&= r.textSlot >= 0;
    key = mixKey(key, r.textSlot);
  }
  if (shareable) {
    const c = SHARED_ENV_LISTS.candidate(key);
    if (c !== undefined && c.length === n) {
      let i = 0;
      while (i < n && c[i]!.name === scratchNames[i] && c[i]!.value === scratchValues[i]) i++;
      if (i === n) {
        SHARED_ENV_LISTS.hit(key);
        return c;
      }
    }
  }
  const out = new Array<EnvVar>(n);
  for (let i = 0; i < n; i++) out[i] = { name: scratchNames[i]!, value: scratchValues[i]! };
  if (shareable && SHARED_ENV_LISTS.admit(key)) {
    for (const e of out) Object.freeze(e);
    SHARED_ENV_LISTS.set(key, Object.freeze(out));
  }
  return out;
}

const NO_LIMITS: Limits = Object.freeze({});

export function readLimits(r: Reader, ptr: number): Limits {
  if (ptr < 0) return NO_LIMITS;
  const s = r.struct(ptr);
  if (s === null) return NO_LIMITS;
  const runtime = r.u64(s, 0);
  const memory = r.u64(s, 8);
  const cpu = r.u64(s, 16);
  const tasks = r.u32(s, 24);
  const key = mixKey(mixKey(mixKey(mixKey(0, runtime | 0), memory | 0), (cpu | 0) ^ (memory / 4294967296)), tasks | 0);
  const c = SHARED_LIMITS.candidate(key);
  if (
    c !== undefined &&
    (c.runtime_s ?? 0) === runtime &&
    (c.memory_bytes ?? 0) === memory &&
    (c.cpu_s ?? 0) === cpu &&
    (c.tasks ?? 0) === tasks
  ) {
    SHARED_LIMITS.hit(key);
    return c;
  }
  const out: { -readonly [K in keyof Limits]?: number } = {};
  if (runtime !== 0) out.runtime_s = runtime;
  if (memory !== 0) out.memory_bytes = memory;
  if (cpu !== 0) out.cpu_s = cpu;
  if (tasks !== 0) out.tasks = tasks;
  if (SHARED_LIMITS.admit(key)) SHARED_LIMITS.set(key, Object.freeze(out));
  return out;
}

export function readTextListOrEmpty(r: Reader, ptr: number): readonly string[] {
  if (ptr < 0) return EMPTY;
  const l = r.textListRef(ptr);
  if (l === null || l.count === 0) return EMPTY;
  const n = l.count;
  if (n > SHARED_LIST_LENGTH_MAX) {
    const out = new Array<string>(n);
    for (let i = 0; i < n; i++) out[i] = r.textAt(l.start + i * 8) ?? '';
    return out;
  }
  let key = n;
  let shareable = true;
  for (let i = 0; i < n; i++) {
    scratchValues[i] = r.textAt(l.start + i * 8) ?? '';
    shareable &&= r.textSlot >= 0;
    key = mixKey(key, r.textSlot);
  }
  if (shareable) {
    const c = SHARED_ARGVS.candidate(key);
    if (c !== undefined && c.length === n) {
      let i = 0;
      while (i < n && c[i] === scratchValues[i]) i++;
      if (i === n) {
        SHARED_ARGVS.hit(key);
        return c;
      }
    }
  }
  const out = scratchValues.slice(0, n);
  if (shareable && SHARED_ARGVS.admit(key)) SHARED_ARGVS.set(key, Object.freeze(out));
  return out;
}
