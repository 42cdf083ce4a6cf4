// The facts codec: TypeScript facts ⇄ standard Cap'n Proto bytes of schema/facts.capnp.
// Hand-laid-out over capnp-wire.ts for speed (see that file for why); every offset below is the
// one `capnp compile -ocapnp schema/facts.capnp` prints, written as `d<byte>` for the data section
// and `p<index>` for pointers. facts-codec.test.ts checks the bytes against capnp-es and
// `capnp decode`, and the v0 fixture (no profile fields at all) against the decoder.
//
// Encode once on the leader, carry the bytes opaquely through Raft and the WAL, decode once per
// apply.
//
// This file holds the Fact and its bodies (config, submit, dispatch, status, control, host, clean,
// modify, hostControl, credential, batch) and the encoder's slabs; the parts are each in a file of
// their own, re-exported here: job-spec-codec.ts, dispatch-record-codec.ts (with resreq-codec.ts),
// result-codec.ts, shared-values-codec.ts (env lists, argvs and limits shared between jobs),
// host-codec.ts (a worker's registration), credential-codec.ts (issue 19), codec-shared.ts (enums,
// origins).

import { Reader, type StructRef, WireError, Writer } from '../wire/capnp-wire.js';
import { enumAt } from './codec-shared.js';
import { readDispatchRecord, readHosts, writeDispatchRecord, writeHosts } from './dispatch-record-codec.js';
import { readCredential, writeCredential } from './credential-codec.js';
import type {
  BatchFact,
  ConfigFile,
  ControlAction,
  DispatchFact,
  Fact,
  FactBody,
  JobStatus,
  JobStatusFact,
} from './facts.js';
import { CONTROL_ACTIONS } from './facts.js';
import { readRegisteredHost, writeRegisteredHost } from './host-codec.js';
import { readJobSpec, writeJobSpec } from './job-spec-codec.js';

export { WireError } from '../wire/capnp-wire.js';
export type { FieldReaders } from './codec-shared.js';
export { DISPATCH_RECORD_FIELDS, readDispatchRecord, readHosts, writeDispatchRecord } from './dispatch-record-codec.js';
export { EMPTY_SPEC, JOB_SPEC_FIELDS, readJobSpec, writeJobSpec } from './job-spec-codec.js';
export { readResult, writeResult } from './result-codec.js';

const FACT_TAGS = [
  'noop',
  'config',
  'submit',
  'dispatch',
  'status',
  'control',
  'host',
  'clean',
  'modify',
  'hostControl',
  'credential',
  'batch',
] as const;
const STATUS_TAGS = ['started', 'finished', 'launchError', 'suspended', 'resumed'] as const;

// =============================================================================================
// Writing

/** ModifyFact: jobId d0; user p0, queue p1, profile p2, profileRequested p3, spec p4. */
function writeModify(w: Writer, ptr: number, b: Extract<FactBody, { kind: 'modify' }>): void {
  const d = w.struct(ptr, 1, 5);
  const p = d + 8;
  w.u64(d, b.jobId);
  w.text(p, b.user);
  w.text(p + 8, b.queue);
  w.text(p + 16, b.profile);
  w.text(p + 24, b.profileRequested);
  writeJobSpec(w, p + 32, b.spec);
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
      const d = w.struct(ptr, 1, 6);
      const p = d + 8;
      w.bool(d, 0, b.dependencyKill);
      w.text(p, b.user);
      w.text(p + 8, b.queue);
      writeJobSpec(w, p + 16, b.spec);
      w.text(p + 24, b.profile);
      w.text(p + 32, b.profileRequested);
      w.text(p + 40, b.dependency);
      return;
    }
    case 'dispatch':
      writeDispatchAt(w, w.struct(ptr, 2, 3), b);
      return;
    case 'status':
      writeStatusAt(w, w.struct(ptr, 2, 1), b);
      return;
    case 'control': {
      const d = w.struct(ptr, 2, 1);
      w.u64(d, b.jobId);
      w.u16(d + 8, CONTROL_ACTIONS.indexOf(b.action));
      w.text(d + 16, b.user);
      return;
    }
    case 'host':
      writeRegisteredHost(w, ptr, b.registration);
      return;
    case 'modify':
      writeModify(w, ptr, b);
      return;
    case 'clean': {
      const p = w.struct(ptr, 0, 1);
      const at = w.primitiveList(p, 5, b.jobIds.length, b.jobIds.length * 8); // List(UInt64)
      for (let i = 0; i < b.jobIds.length; i++) w.u64(at + i * 8, b.jobIds[i]!);
      return;
    }
    case 'batch':
      writeBatch(w, ptr, b);
      return;
    case 'hostControl': {
      // HostControlFact: 1 data word, 3 pointers: close b0; host p0, reason p1, user p2.
      const d = w.struct(ptr, 1, 3);
      w.bool(d, 0, b.close);
      w.text(d + 8, b.host);
      w.text(d + 16, b.reason);
      w.text(d + 24, b.user);
      return;
    }
    case 'credential':
      writeCredential(w, ptr, b);
      return;
  }
}

/** BatchFact: dispatches p0 (List(DispatchFact)), statuses p1 (List(JobStatusFact)). */
function writeBatch(w: Writer, ptr: number, b: BatchFact): void {
  const p = w.struct(ptr, 0, 2);
  let at = w.structList(p, b.dispatches.length, 2, 3); // DispatchFact: 2 data words, 3 pointers
  for (const d of b.dispatches) {
    writeDispatchAt(w, at, d);
    at += 40;
  }
  at = w.structList(p + 8, b.statuses.length, 2, 1); // JobStatusFact: 2 data words, 1 pointer
  for (const st of b.statuses) {
    writeStatusAt(w, at, st);
    at += 24;
  }
}

/** A DispatchFact into the struct whose data section starts at `d` (2 data words, 3 pointers). */
function writeDispatchAt(w: Writer, d: number, b: DispatchFact): void {
  const p = d + 16;
  w.u64(d, b.jobId);
  w.u32(d + 8, b.runNumber);
  writeHosts(w, p, b.placement);
  if (b.record !== null) writeDispatchRecord(w, p + 8, b.record);
  w.text(p + 16, b.schedulerHash);
}

/** A JobStatusFact into the struct whose data section starts at `d` (2 data words, 1 pointer). */
function writeStatusAt(w: Writer, d: number, b: JobStatusFact): void {
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
  } else if (s.type === 'launchError') {
    const x = w.struct(d + 16, 0, 1);
    w.text(x, s.reason);
  } else {
    const x = w.struct(d + 16, 1, 0); // JobSignalled: timeMs d0
    w.i64(x, s.timeMs);
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

// =============================================================================================
// Reading

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
        dependency: r.text(s, 5),
        dependencyKill: r.bool(s, 0),
      };
    case 'dispatch':
      return readDispatch(r, s);
    case 'status':
      return readStatus(r, s);
    case 'control':
      return {
        kind,
        jobId: r.u64(s, 0),
        action: enumAt<ControlAction>(CONTROL_ACTIONS, r.u16(s, 8), 'control action', s.data),
        user: r.text(s, 0) ?? '',
      };
    case 'host':
      return { kind, registration: readRegisteredHost(r, ptr) };
    case 'clean':
      return { kind, jobIds: r.u64ListAt(r.ptr(s, 0)) ?? [] };
    case 'batch': {
      const dp = r.ptr(s, 0);
      const sp = r.ptr(s, 1);
      const dl = dp < 0 ? null : r.list(dp);
      const sl = sp < 0 ? null : r.list(sp);
      const dispatches = new Array<DispatchFact>(dl?.count ?? 0);
      for (let i = 0; i < dispatches.length; i++) dispatches[i] = readDispatch(r, r.elem(dl!, i));
      const statuses = new Array<JobStatusFact>(sl?.count ?? 0);
      for (let i = 0; i < statuses.length; i++) statuses[i] = readStatus(r, r.elem(sl!, i));
      return { kind, dispatches, statuses };
    }
    case 'modify':
      return {
        kind,
        jobId: r.u64(s, 0),
        user: r.text(s, 0) ?? '',
        queue: r.text(s, 1) ?? '',
        profile: r.text(s, 2),
        profileRequested: r.text(s, 3),
        spec: readJobSpec(r, r.ptr(s, 4)),
      };
    case 'hostControl':
      return { kind, host: r.text(s, 0) ?? '', close: r.bool(s, 0), reason: r.text(s, 1), user: r.text(s, 2) ?? '' };
    case 'credential':
      return readCredential(r, s);
  }
}

function readDispatch(r: Reader, s: StructRef): DispatchFact {
  return {
    kind: 'dispatch',
    jobId: r.u64(s, 0),
    runNumber: r.u32(s, 8),
    placement: readHosts(r, r.ptr(s, 0)),
    record: readDispatchRecord(r, r.ptr(s, 1)),
    schedulerHash: r.text(s, 2),
  };
}

function readStatus(r: Reader, s: StructRef): JobStatusFact {
  const st = enumAt(STATUS_TAGS, r.u16(s, 12), 'job status kind', s.data);
  const x = s.ptrCount > 0 ? r.struct(r.ptr(s, 0)) : null;
  if (x === null) throw new WireError('job status without its body', s.data);
  let status: JobStatus;
  if (st === 'started') status = { type: st, pid: r.u32(x, 0), timeMs: r.i64(x, 8) };
  else if (st === 'finished')
    status = { type: st, exitCode: r.i32(x, 0), signal: r.text(x, 0), reason: r.text(x, 1), timeMs: r.i64(x, 8) };
  else if (st === 'launchError') status = { type: st, reason: r.text(x, 0) ?? '' };
  else status = { type: st, timeMs: r.i64(x, 0) };
  return { kind: 'status', jobId: r.u64(s, 0), runNumber: r.u32(s, 8), status };
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
