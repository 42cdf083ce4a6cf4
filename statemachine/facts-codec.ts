// The facts codec: TypeScript facts ⇄ standard Cap'n Proto bytes of schema/facts.capnp.
// Hand-laid-out over capnp-wire.ts for speed (see that file for why); every offset below is the
// one `capnp compile -ocapnp schema/facts.capnp` prints, written as `d<byte>` for the data section
// and `p<index>` for pointers. facts-codec.test.ts checks the bytes against capnp-es and
// `capnp decode`, and the v0 fixture (no profile fields at all) against the decoder.
//
// Encode once on the leader, carry the bytes opaquely through Raft and the WAL, decode once per
// apply.

import { Reader, type StructRef, WireError, Writer } from '../wire/capnp-wire.js';
import type { DispatchRecord, EffectiveLimits, HostTasks } from './dispatch-record.js';
import type {
  ApplyResult,
  ConfigFile,
  ControlAction,
  DeclineCode,
  Fact,
  FactBody,
  JobSpec,
  JobStatus,
  NameCount,
  RejectCode,
} from './facts.js';
import { CONTROL_ACTIONS, RESULT_KINDS } from './facts.js';
import type {
  CmpOp,
  CompoundResReq,
  EffectiveResReq,
  EnvVar,
  ExecMode,
  LaunchType,
  Limits,
  OrderKey,
  Origin,
  RusageItem,
  SelectExpr,
  Span,
  WithOrigin,
} from '../model/profile-types.js';

import { mixKey, SHARED_LIST_LENGTH_MAX, SharedValues } from '../wire/shared-values.js';

export { WireError } from '../wire/capnp-wire.js';

const LAUNCH_TYPES: readonly LaunchType[] = ['serial', 'openmpi', 'mpich'];
const EXEC_MODES: readonly ExecMode[] = ['direct'];
const CMP_OPS: readonly CmpOp[] = ['>', '>=', '<', '<=', '==', '!='];
const LIMIT_KEYS = ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'] as const;
const FACT_TAGS = ['noop', 'config', 'submit', 'dispatch', 'status', 'control'] as const;
const STATUS_TAGS = ['started', 'finished', 'launchError'] as const;

function enumAt<T>(values: readonly T[], i: number, what: string, at: number): T {
  const v = values[i];
  if (v === undefined) throw new WireError(`unknown ${what} ${i} (written by a newer version?)`, at);
  return v;
}

const originOf = (n: number): Origin => (n === 1 ? 'profile' : 'job');
const originNum = (o: Origin): number => (o === 'profile' ? 1 : 0);

const EMPTY: readonly never[] = Object.freeze([]);

// =============================================================================================
// Writing

function writeEnvList(w: Writer, ptr: number, env: readonly EnvVar[]): void {
  if (env.length === 0) return;
  let at = w.structList(ptr, env.length, 0, 2);
  for (const e of env) {
    w.text(at, e.name);
    w.text(at + 8, e.value);
    at += 16;
  }
}

function writeLimits(w: Writer, ptr: number, l: Limits): void {
  if (l.runtime_s === undefined && l.memory_bytes === undefined && l.cpu_s === undefined && l.tasks === undefined)
    return;
  const d = w.struct(ptr, 4, 0);
  if (l.runtime_s !== undefined) w.u64(d, l.runtime_s);
  if (l.memory_bytes !== undefined) w.u64(d + 8, l.memory_bytes);
  if (l.cpu_s !== undefined) w.u64(d + 16, l.cpu_s);
  if (l.tasks !== undefined) w.u32(d + 24, l.tasks);
}

function writeTextList(w: Writer, ptr: number, list: readonly string[]): void {
  if (list.length === 0) return;
  const at = w.pointerList(ptr, list.length);
  for (let i = 0; i < list.length; i++) w.text(at + i * 8, list[i]!);
}

/** JobSpec: 1 data word, 10 pointers. */
export function writeJobSpec(w: Writer, ptr: number, s: JobSpec): void {
  const d = w.struct(ptr, 1, 10);
  const p = d + 8;
  w.text(p, s.resreq);
  if (s.tasks !== null) w.u32(d, s.tasks);
  writeEnvList(w, p + 8, s.env);
  writeLimits(w, p + 16, s.limits);
  w.text(p + 24, s.preExec);
  w.text(p + 32, s.postExec);
  writeTextList(w, p + 40, s.command);
  w.text(p + 48, s.cwd);
  w.text(p + 56, s.stdoutPath);
  w.text(p + 64, s.stderrPath);
  w.text(p + 72, s.jobName);
}

function writeHosts(w: Writer, ptr: number, hosts: readonly HostTasks[]): void {
  if (hosts.length === 0) return;
  let at = w.structList(ptr, hosts.length, 1, 1);
  for (const h of hosts) {
    w.u32(at, h.tasks);
    w.text(at + 8, h.host);
    at += 16;
  }
}

/** SelectExpr: 1 data word (the union tag), 1 pointer. */
function writeSelectExprAt(w: Writer, d: number, e: SelectExpr): void {
  const p = d + 8;
  switch (e.kind) {
    case 'bool':
      w.text(p, e.name);
      return;
    case 'cmp': {
      w.u16(d, 1);
      const c = w.struct(p, 2, 2);
      w.text(c + 16, e.name);
      w.u16(c, CMP_OPS.indexOf(e.op));
      if (typeof e.value === 'string') {
        w.bool(c, 16, true);
        w.text(c + 24, e.value);
      } else {
        w.f64(c + 8, e.value);
      }
      return;
    }
    case 'not':
      w.u16(d, 2);
      writeSelectExprAt(w, w.struct(p, 1, 1), e.expr);
      return;
    case 'and':
    case 'or': {
      w.u16(d, e.kind === 'and' ? 3 : 4);
      let at = w.structList(p, e.args.length, 1, 1);
      for (const a of e.args) {
        writeSelectExprAt(w, at, a);
        at += 16;
      }
      return;
    }
  }
}

/** EffectiveResReq: 0 data words, 6 pointers. */
function writeEffectiveResReq(w: Writer, ptr: number, r: EffectiveResReq): void {
  const p = w.struct(ptr, 0, 6);
  writeResReqBody(w, p, r.select, r.rusage, r.span, r.same, r.order);
  if (r.compound !== undefined) writeCompound(w, p + 40, r.compound);
}

function writeResReqBody(
  w: Writer,
  p: number,
  select: readonly WithOrigin<SelectExpr>[],
  rusage: readonly WithOrigin<RusageItem>[],
  span: WithOrigin<Span> | null,
  same: WithOrigin<readonly string[]> | null,
  order: WithOrigin<readonly OrderKey[]> | null,
): void {
  if (select.length > 0) {
    let at = w.structList(p, select.length, 1, 1); // SelectTerm: expr p0, origin d0
    for (const t of select) {
      w.u16(at, originNum(t.origin));
      writeSelectExprAt(w, w.struct(at + 8, 1, 1), t.value);
      at += 16;
    }
  }
  if (rusage.length > 0) {
    let at = w.structList(p + 8, rusage.length, 3, 1); // RusageTerm: name p0, value d0, hasDuration b64, durationS d16, origin d10
    for (const t of rusage) {
      w.f64(at, t.value.value);
      if (t.value.duration_s !== undefined) {
        w.bool(at, 64, true);
        w.f64(at + 16, t.value.duration_s);
      }
      w.u16(at + 10, originNum(t.origin));
      w.text(at + 24, t.value.name);
      at += 32;
    }
  }
  if (span !== null) {
    const d = w.struct(p + 16, 2, 0); // SpanTerm: ptile d0, hosts d4, origin d8
    if (span.value.ptile !== undefined) w.u32(d, span.value.ptile);
    if (span.value.hosts !== undefined) w.u32(d + 4, span.value.hosts);
    w.u16(d + 8, originNum(span.origin));
  }
  if (same !== null) {
    const d = w.struct(p + 24, 1, 1); // SameTerm: names p0, origin d0
    w.u16(d, originNum(same.origin));
    if (same.value.length > 0) writeTextList(w, d + 8, same.value);
    else w.pointerList(d + 8, 0);
  }
  if (order !== null) {
    const d = w.struct(p + 32, 1, 1); // OrderTerm: keys p0, origin d0
    w.u16(d, originNum(order.origin));
    let at = w.structList(d + 8, order.value.length, 1, 1); // OrderKey: name p0, descending b0
    for (const k of order.value) {
      w.bool(at, 0, k.descending);
      w.text(at + 8, k.name);
      at += 16;
    }
  }
}

function writeCompound(w: Writer, ptr: number, c: CompoundResReq): void {
  const p = w.struct(ptr, 0, 2); // CompoundResReq: parts p0, operator p1
  let at = w.structList(p, c.parts.length, 0, 6);
  for (const part of c.parts) {
    const job = <T>(v: T): WithOrigin<T> => ({ value: v, origin: 'job' });
    writeResReqBody(
      w,
      at,
      part.select.map(job),
      part.rusage.map(job),
      part.span === null ? null : job(part.span),
      part.same === null ? null : job(part.same),
      part.order === null ? null : job(part.order),
    );
    at += 48;
  }
  w.text(p + 8, c.operator);
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

function writeBody(w: Writer, ptr: number, b: FactBody): void {
  switch (b.kind) {
    case 'noop':
      return;
    case 'config': {
      const p = w.struct(ptr, 0, 2);
      writeConfigFiles(w, p, b.files);
      w.text(p + 8, b.user);
      return;
    }
    case 'submit': {
      const p = w.struct(ptr, 0, 5);
      w.text(p, b.user);
      w.text(p + 8, b.queue);
      writeJobSpec(w, p + 16, b.spec);
      w.text(p + 24, b.profile);
      w.text(p + 32, b.profileRequested);
      return;
    }
    case 'dispatch': {
      const d = w.struct(ptr, 2, 3);
      const p = d + 16;
      w.u64(d, b.jobId);
      w.u32(d + 8, b.runNumber);
      writeHosts(w, p, b.placement);
      if (b.record !== null) writeDispatchRecord(w, p + 8, b.record);
      w.text(p + 16, b.schedulerHash);
      return;
    }
    case 'status': {
      const d = w.struct(ptr, 2, 1);
      w.u64(d, b.jobId);
      w.u32(d + 8, b.runNumber);
      const s = b.status;
      w.u16(d + 12, STATUS_TAGS.indexOf(s.type));
      if (s.type === 'started') {
        const x = w.struct(d + 16, 2, 0);
        w.u32(x, s.pid);
        w.i64(x + 8, s.timeMs);
      } else if (s.type === 'finished') {
        const x = w.struct(d + 16, 2, 2);
        w.i32(x, s.exitCode);
        w.i64(x + 8, s.timeMs);
        w.text(x + 16, s.signal);
        w.text(x + 24, s.reason);
      } else {
        const x = w.struct(d + 16, 0, 1);
        w.text(x, s.reason);
      }
      return;
    }
    case 'control': {
      const d = w.struct(ptr, 2, 1);
      w.u64(d, b.jobId);
      w.u16(d + 8, CONTROL_ACTIONS.indexOf(b.action));
      w.text(d + 16, b.user);
      return;
    }
  }
}

export function writeConfigFiles(w: Writer, ptr: number, files: readonly ConfigFile[]): void {
  let at = w.structList(ptr, files.length, 0, 2);
  for (const f of files) {
    w.text(at, f.path);
    w.text(at + 8, f.text);
    at += 16;
  }
}

/** Fact: 3 data words, 2 pointers. */
export function writeFact(w: Writer, ptr: number, f: Fact): void {
  const d = w.struct(ptr, 3, 2);
  w.text(d + 24, f.clientId);
  w.u64(d, f.sequence);
  w.i64(d + 8, f.timeMs);
  w.u16(d + 16, FACT_TAGS.indexOf(f.body.kind));
  writeBody(w, d + 32, f.body);
}

const scratch = new Writer(4096);

/**
 * encodeFact cuts its results from slabs of this many bytes, as Node's Buffer pool does: one
 * ArrayBuffer per some hundred facts instead of one each (a 512-byte ArrayBuffer of its own cost
 * about as much as encoding the fact). A slab lives while a fact cut from it does; the Raft log
 * holds consecutive facts, so slabs are shared by facts that live and die together.
 */
const FACT_SLAB_BYTES = 64 * 1024;
/** A fact larger than this (a ConfigFact) gets an ArrayBuffer of its own. */
const FACT_SLAB_FACT_BYTES_MAX = FACT_SLAB_BYTES / 8;
let slab = new Uint8Array(FACT_SLAB_BYTES);
let slabUsedBytes = 0;

/**
 * Encodes a fact as one standard single-segment Cap'n Proto message. The bytes are the fact's own
 * (never written again), but their `buffer` may be shared with other facts: read them through the
 * view (byteOffset, byteLength), as every consumer here does.
 */
export function encodeFact(f: Fact): Uint8Array {
  scratch.reset();
  writeFact(scratch, scratch.root, f);
  const message = scratch.finish(false);
  const n = message.length;
  if (n > FACT_SLAB_FACT_BYTES_MAX) return message.slice();
  if (slabUsedBytes + n > FACT_SLAB_BYTES) {
    slab = new Uint8Array(FACT_SLAB_BYTES);
    slabUsedBytes = 0;
  }
  const out = slab.subarray(slabUsedBytes, slabUsedBytes + n);
  out.set(message);
  slabUsedBytes += n; // messages are whole words: the next one starts 8-byte aligned
  return out;
}

/** ApplyResult: 2 data words, 4 pointers. */
export function writeResult(w: Writer, ptr: number, r: ApplyResult): void {
  const d = w.struct(ptr, 2, 4);
  const p = d + 16;
  w.u16(d, RESULT_KINDS.indexOf(r.kind));
  switch (r.kind) {
    case 'noop':
      return;
    case 'submitted':
    case 'statusApplied':
    case 'controlled':
      w.u64(d + 8, r.jobId);
      return;
    case 'rejected':
      w.text(p, r.code);
      w.text(p + 8, r.message);
      return;
    case 'declined':
      w.u64(d + 8, r.jobId);
      w.text(p, r.code);
      w.text(p + 8, r.message);
      return;
    case 'ignored':
      w.u64(d + 8, r.jobId);
      w.text(p + 8, r.message);
      return;
    case 'dispatched':
      w.u64(d + 8, r.jobId);
      w.u32(d + 4, r.runNumber);
      return;
    case 'configApplied': {
      let at = w.structList(p + 16, r.inUse.length, 1, 1); // NameCount: name p0, isAlias b0, pendingJobs d4
      for (const n of r.inUse) {
        w.bool(at, 0, n.isAlias);
        w.u32(at + 4, n.pendingJobs);
        w.text(at + 8, n.name);
        at += 16;
      }
      writeTextList(w, p + 24, r.warnings);
      return;
    }
  }
}

// =============================================================================================
// Reading

// A job's env list, argv and limits repeat from job to job: decoded once and shared, frozen
// (shared-values.ts). Keys are the texts' intern slots (Reader.textSlot); a candidate is checked
// field by field, strings by identity (interned) or, failing that, by value.

const SHARED_ENV_LISTS = new SharedValues<readonly EnvVar[]>(4096);
const SHARED_ARGVS = new SharedValues<readonly string[]>(4096);
const SHARED_LIMITS = new SharedValues<Limits>(256);
const scratchNames = new Array<string>(SHARED_LIST_LENGTH_MAX).fill('');
const scratchValues = new Array<string>(SHARED_LIST_LENGTH_MAX).fill('');

function readEnvList(r: Reader, ptr: number): readonly EnvVar[] {
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

function readLimits(r: Reader, ptr: number): Limits {
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

function readTextListOrEmpty(r: Reader, ptr: number): readonly string[] {
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

/** The spec a null pointer stands for (a job with no values of its own). */
export const EMPTY_SPEC: JobSpec = Object.freeze({
  resreq: null,
  tasks: null,
  env: EMPTY,
  limits: Object.freeze({}),
  preExec: null,
  postExec: null,
  command: EMPTY,
  cwd: null,
  stdoutPath: null,
  stderrPath: null,
  jobName: null,
});

/** One reader per field of T, each reading that field alone from T's struct. */
export type FieldReaders<T> = { readonly [K in keyof T]-?: (r: Reader, s: StructRef) => T[K] };

/**
 * Each JobSpec field read on its own from a JobSpec struct: readJobSpec reads them all; stored.ts
 * reads one when a finished job's spec, kept encoded, is asked for it.
 */
export const JOB_SPEC_FIELDS: FieldReaders<JobSpec> = {
  resreq: (r, s) => r.text(s, 0),
  tasks: (r, s) => {
    const tasks = r.u32(s, 0);
    return tasks === 0 ? null : tasks;
  },
  env: (r, s) => readEnvList(r, r.ptr(s, 1)),
  limits: (r, s) => readLimits(r, r.ptr(s, 2)),
  preExec: (r, s) => r.text(s, 3),
  postExec: (r, s) => r.text(s, 4),
  command: (r, s) => readTextListOrEmpty(r, r.ptr(s, 5)),
  cwd: (r, s) => r.text(s, 6),
  stdoutPath: (r, s) => r.text(s, 7),
  stderrPath: (r, s) => r.text(s, 8),
  jobName: (r, s) => r.text(s, 9),
};

export function readJobSpec(r: Reader, ptr: number): JobSpec {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return EMPTY_SPEC;
  const F = JOB_SPEC_FIELDS;
  return {
    resreq: F.resreq(r, s),
    tasks: F.tasks(r, s),
    env: F.env(r, s),
    limits: F.limits(r, s),
    preExec: F.preExec(r, s),
    postExec: F.postExec(r, s),
    command: F.command(r, s),
    cwd: F.cwd(r, s),
    stdoutPath: F.stdoutPath(r, s),
    stderrPath: F.stderrPath(r, s),
    jobName: F.jobName(r, s),
  };
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

function readSelectExpr(r: Reader, s: StructRef): SelectExpr {
  r.enter(s.data);
  try {
    const tag = r.u16(s, 0);
    const p = r.ptr(s, 0);
    switch (tag) {
      case 0:
        return { kind: 'bool', name: r.text(s, 0) ?? '' };
      case 1: {
        const c = p < 0 ? null : r.struct(p);
        if (c === null) throw new WireError('select comparison without its body', s.data);
        const name = r.text(c, 0) ?? '';
        const op = enumAt(CMP_OPS, r.u16(c, 0), 'comparison operator', c.data);
        const value: number | string = r.bool(c, 16) ? (r.text(c, 1) ?? '') : r.f64(c, 8);
        return { kind: 'cmp', name, op, value };
      }
      case 2: {
        const inner = p < 0 ? null : r.struct(p);
        if (inner === null) throw new WireError('select `not` without its operand', s.data);
        return { kind: 'not', expr: readSelectExpr(r, inner) };
      }
      case 3:
      case 4: {
        const l = p < 0 ? null : r.list(p);
        const args: SelectExpr[] = [];
        if (l !== null) for (let i = 0; i < l.count; i++) args.push(readSelectExpr(r, r.elem(l, i)));
        return { kind: tag === 3 ? 'and' : 'or', args };
      }
      default:
        throw new WireError(`unknown select expression kind ${tag}`, s.data);
    }
  } finally {
    r.leave();
  }
}

interface ResReqBody {
  select: readonly WithOrigin<SelectExpr>[];
  rusage: readonly WithOrigin<RusageItem>[];
  span: WithOrigin<Span> | null;
  same: WithOrigin<readonly string[]> | null;
  order: WithOrigin<readonly OrderKey[]> | null;
}

function readResReqBody(r: Reader, s: StructRef): ResReqBody {
  let select: readonly WithOrigin<SelectExpr>[] = EMPTY;
  const sl = s.ptrCount > 0 ? r.list(r.ptr(s, 0)) : null;
  if (sl !== null && sl.count > 0) {
    const out: WithOrigin<SelectExpr>[] = (select = []) as WithOrigin<SelectExpr>[];
    for (let i = 0; i < sl.count; i++) {
      const t = r.elem(sl, i);
      const e = t.ptrCount > 0 ? r.struct(r.ptr(t, 0)) : null;
      if (e === null) throw new WireError('select term without its expression', t.data);
      out.push({ value: readSelectExpr(r, e), origin: originOf(r.u16(t, 0)) });
    }
  }
  let rusage: readonly WithOrigin<RusageItem>[] = EMPTY;
  const rl = s.ptrCount > 1 ? r.list(r.ptr(s, 1)) : null;
  if (rl !== null && rl.count > 0) {
    const out: WithOrigin<RusageItem>[] = (rusage = []) as WithOrigin<RusageItem>[];
    for (let i = 0; i < rl.count; i++) {
      const t = r.elem(rl, i);
      const item: RusageItem = r.bool(t, 64)
        ? { name: r.text(t, 0) ?? '', value: r.f64(t, 0), duration_s: r.f64(t, 16) }
        : { name: r.text(t, 0) ?? '', value: r.f64(t, 0) };
      out.push({ value: item, origin: originOf(r.u16(t, 10)) });
    }
  }
  let span: WithOrigin<Span> | null = null;
  const sp = s.ptrCount > 2 ? r.struct(r.ptr(s, 2)) : null;
  if (sp !== null) {
    const ptile = r.u32(sp, 0);
    const hosts = r.u32(sp, 4);
    const v: { ptile?: number; hosts?: number } = {};
    if (ptile !== 0) v.ptile = ptile;
    if (hosts !== 0) v.hosts = hosts;
    span = { value: v, origin: originOf(r.u16(sp, 8)) };
  }
  let same: WithOrigin<readonly string[]> | null = null;
  const sa = s.ptrCount > 3 ? r.struct(r.ptr(s, 3)) : null;
  if (sa !== null) same = { value: readTextListOrEmpty(r, r.ptr(sa, 0)), origin: originOf(r.u16(sa, 0)) };
  let order: WithOrigin<readonly OrderKey[]> | null = null;
  const or = s.ptrCount > 4 ? r.struct(r.ptr(s, 4)) : null;
  if (or !== null) {
    const keys: OrderKey[] = [];
    const kl = or.ptrCount > 0 ? r.list(r.ptr(or, 0)) : null;
    if (kl !== null) {
      for (let i = 0; i < kl.count; i++) {
        const k = r.elem(kl, i);
        keys.push({ name: r.text(k, 0) ?? '', descending: r.bool(k, 0) });
      }
    }
    order = { value: keys, origin: originOf(r.u16(or, 0)) };
  }
  return { select, rusage, span, same, order };
}

function readEffectiveResReq(r: Reader, ptr: number): EffectiveResReq {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return { select: EMPTY, rusage: EMPTY, span: null, same: null, order: null };
  const body: EffectiveResReq = readResReqBody(r, s);
  const c = s.ptrCount > 5 ? r.struct(r.ptr(s, 5)) : null;
  if (c === null) return body;
  const parts: import('../model/profile-types.js').ResReq[] = [];
  const pl = c.ptrCount > 0 ? r.list(r.ptr(c, 0)) : null;
  if (pl !== null) {
    for (let i = 0; i < pl.count; i++) {
      const b = readResReqBody(r, r.elem(pl, i));
      parts.push({
        kind: 'simple',
        select: b.select.map((t) => t.value),
        rusage: b.rusage.map((t) => t.value),
        span: b.span === null ? null : b.span.value,
        same: b.same === null ? null : b.same.value,
        order: b.order === null ? null : b.order.value,
      });
    }
  }
  const op = r.text(c, 1);
  if (op !== '+' && op !== '||') throw new WireError(`unknown compound operator ${JSON.stringify(op)}`, c.data);
  return { ...body, compound: { kind: 'compound', parts, operator: op } };
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

export function readConfigFiles(r: Reader, ptr: number): ConfigFile[] | null {
  const l = ptr < 0 ? null : r.list(ptr);
  if (l === null) return null;
  const out = new Array<ConfigFile>(l.count);
  for (let i = 0; i < l.count; i++) {
    const e = r.elem(l, i);
    out[i] = { path: r.text(e, 0) ?? '', text: r.text(e, 1) ?? '' };
  }
  return out;
}

function readBody(r: Reader, tag: number, ptr: number, at: number): FactBody {
  const kind = enumAt(FACT_TAGS, tag, 'fact kind', at);
  if (kind === 'noop') return { kind };
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) throw new WireError(`${kind} fact without its body`, at);
  switch (kind) {
    case 'config':
      return { kind, files: readConfigFiles(r, r.ptr(s, 0)) ?? [], user: r.text(s, 1) };
    case 'submit':
      return {
        kind,
        user: r.text(s, 0) ?? '',
        queue: r.text(s, 1) ?? '',
        spec: readJobSpec(r, r.ptr(s, 2)),
        profile: r.text(s, 3),
        profileRequested: r.text(s, 4),
      };
    case 'dispatch':
      return {
        kind,
        jobId: r.u64(s, 0),
        runNumber: r.u32(s, 8),
        placement: readHosts(r, r.ptr(s, 0)),
        record: readDispatchRecord(r, r.ptr(s, 1)),
        schedulerHash: r.text(s, 2),
      };
    case 'status': {
      const st = enumAt(STATUS_TAGS, r.u16(s, 12), 'job status kind', s.data);
      const x = s.ptrCount > 0 ? r.struct(r.ptr(s, 0)) : null;
      if (x === null) throw new WireError('job status without its body', s.data);
      let status: JobStatus;
      if (st === 'started') status = { type: st, pid: r.u32(x, 0), timeMs: r.i64(x, 8) };
      else if (st === 'finished')
        status = { type: st, exitCode: r.i32(x, 0), signal: r.text(x, 0), reason: r.text(x, 1), timeMs: r.i64(x, 8) };
      else status = { type: st, reason: r.text(x, 0) ?? '' };
      return { kind, jobId: r.u64(s, 0), runNumber: r.u32(s, 8), status };
    }
    case 'control':
      return {
        kind,
        jobId: r.u64(s, 0),
        action: enumAt<ControlAction>(CONTROL_ACTIONS, r.u16(s, 8), 'control action', s.data),
        user: r.text(s, 0) ?? '',
      };
  }
}

export function readFact(r: Reader, ptr: number): Fact {
  const s = r.struct(ptr);
  if (s === null) throw new WireError('null fact', ptr);
  return {
    clientId: r.text(s, 0),
    sequence: r.u64(s, 0),
    timeMs: r.i64(s, 8),
    body: readBody(r, r.u16(s, 16), r.ptr(s, 1), s.data),
  };
}

/** Decodes a fact; throws WireError when the bytes are not a valid fact message. */
export function decodeFact(bytes: Uint8Array): Fact {
  const r = new Reader(bytes);
  return readFact(r, r.root);
}

export function readResult(r: Reader, ptr: number): ApplyResult {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return { kind: 'noop' };
  const kind = enumAt(RESULT_KINDS, r.u16(s, 0), 'result kind', s.data);
  const jobId = r.u64(s, 8);
  switch (kind) {
    case 'noop':
      return { kind };
    case 'submitted':
    case 'statusApplied':
    case 'controlled':
      return { kind, jobId };
    case 'rejected':
      return { kind, code: (r.text(s, 0) ?? '') as RejectCode, message: r.text(s, 1) ?? '' };
    case 'declined':
      return { kind, jobId, code: (r.text(s, 0) ?? '') as DeclineCode, message: r.text(s, 1) ?? '' };
    case 'ignored':
      return { kind, jobId, message: r.text(s, 1) ?? '' };
    case 'dispatched':
      return { kind, jobId, runNumber: r.u32(s, 4) };
    case 'configApplied': {
      const inUse: NameCount[] = [];
      const l = s.ptrCount > 2 ? r.list(r.ptr(s, 2)) : null;
      if (l !== null) {
        for (let i = 0; i < l.count; i++) {
          const e = r.elem(l, i);
          inUse.push({ name: r.text(e, 0) ?? '', isAlias: r.bool(e, 0), pendingJobs: r.u32(e, 4) });
        }
      }
      return { kind, inUse, warnings: readTextListOrEmpty(r, r.ptr(s, 3)) };
    }
  }
}
