// A job as the snapshot and the accounting store write it (schema/facts.capnp `Job`), and back.
// An array element (its id says so: model/job-id.ts) is written in the snapshot without the values
// it shares with its array, which the snapshot writes once in `arrays` and restores first.
//
// Layout (bytes; `capnp compile -ocapnp schema/facts.capnp`):
//   Job      8 data words, 14 ptrs: id d0, state d8, started bit 80, dependencyKill bit 81,
//            runNumber d12, submitTimeMs d16, requeueCount d24, pid d28, dispatchTimeMs d32,
//            startTimeMs d40, endTimeMs d48, exitCode d56; user p0, queue p1, profile p2,
//            profileRequested p3, spec p4, record p5, signal p6, reason p7, killRequestedBy p8,
//            lastDecline p9, heldBy p10, events p11 (a job written before hold/modify has 10 ptrs:
//            not held, no events), dependency p12, dependencyResolved p13.
//   JobEvent 1 data word, 3 ptrs: timeMs d0; action p0, user p1, detail p2.

import { Reader, WireError, Writer, type StructRef } from '../wire/capnp-wire.js';
import { DependencySyntaxError } from '../model/dependency.js';
import { arrayIdOf, formatJobId, isElementId } from '../model/job-id.js';
import { EMPTY } from './codec-shared.js';
import { dependencyOf } from './dependency.js';
import type { DispatchRecord } from './dispatch-record.js';
import { EMPTY_SPEC, readDispatchRecord, writeDispatchRecord, writeJobSpec } from './facts-codec.js';
import type { JobSpec } from './facts.js';
import { LazyDispatchRecord, LazyJobSpec, LazyPart, LazySpecText, PendingJobSpec } from './lazy-parts.js';
import { JOB_STATES, type Job, type JobArray, type JobDependency, type JobEvent } from './state.js';

/** A snapshot that cannot be restored (corrupt, or written by an incompatible version). */
export class SnapshotError extends Error {
  override readonly name = 'SnapshotError';
}

export const JOB_DATA_WORDS = 8;
export const JOB_PTRS = 14;
const EVENT_BYTES = (1 + 3) * 8;
export const JOB_BYTES = (JOB_DATA_WORDS + JOB_PTRS) * 8;

/** Lazy parts copied into the message being written, and where (moved there once it is complete). */
export interface Moved {
  readonly parts: LazyPart<object>[];
  readonly ptrs: number[];
}

export function writeDependency(w: Writer, d: number, dep: JobDependency | null): void {
  if (dep === null) return;
  const p = d + JOB_DATA_WORDS * 8;
  w.bool(d, 81, dep.killWhenNever);
  w.text(p + 96, dep.text);
  w.text(p + 104, dep.resolved);
}

/** `whole`: also the values an array element shares with its array (the snapshot writes them with the array). */
export function writeJob(w: Writer, d: number, j: Job, moved: Moved, whole: boolean): void {
  const p = d + JOB_DATA_WORDS * 8;
  w.u64(d, j.id);
  w.u16(d + 8, JOB_STATES.indexOf(j.state));
  w.bool(d, 80, j.started);
  w.u32(d + 12, j.runNumber);
  w.u32(d + 24, j.requeueCount);
  w.u32(d + 28, j.pid);
  w.i64(d + 32, j.dispatchTimeMs);
  w.i64(d + 40, j.startTimeMs);
  w.i64(d + 48, j.endTimeMs);
  w.i32(d + 56, j.exitCode);
  // An array element's shared values are its array's, written once with it.
  if (whole || !isElementId(j.id)) {
    w.i64(d + 16, j.submitTimeMs);
    w.text(p, j.user);
    w.text(p + 8, j.queue);
    w.text(p + 16, j.profile);
    w.text(p + 24, j.profileRequested);
    writeDependency(w, d, j.dependency);
    if (j.spec instanceof LazySpecText) {
      j.spec.copyTo(w, p + 32);
      moved.parts.push(j.spec);
      moved.ptrs.push(p + 32);
    } else writeJobSpec(w, p + 32, j.spec);
  }
  if (j.record instanceof LazyDispatchRecord) {
    j.record.copyTo(w, p + 40);
    moved.parts.push(j.record);
    moved.ptrs.push(p + 40);
  } else if (j.record !== null) writeDispatchRecord(w, p + 40, j.record);
  w.text(p + 48, j.signal);
  w.text(p + 56, j.reason);
  w.text(p + 64, j.killRequestedBy);
  w.text(p + 72, j.lastDecline);
  w.text(p + 80, j.heldBy);
  writeEvents(w, p + 88, j.events);
}

function writeEvents(w: Writer, ptr: number, events: readonly JobEvent[]): void {
  if (events.length === 0) return;
  let at = w.structList(ptr, events.length, 1, 3);
  for (const e of events) {
    w.i64(at, e.timeMs);
    w.text(at + 8, e.action);
    w.text(at + 16, e.user);
    w.text(at + 24, e.detail);
    at += EVENT_BYTES;
  }
}

/** A job's events; none is one shared frozen list (a job's events are replaced, never changed in place). */
function readEvents(r: Reader, ptr: number): readonly JobEvent[] {
  const l = ptr < 0 ? null : r.list(ptr);
  if (l === null) return EMPTY;
  const out = new Array<JobEvent>(l.count);
  for (let i = 0; i < l.count; i++) {
    const e = r.elem(l, i);
    out[i] = { action: r.text(e, 0) ?? '', user: r.text(e, 1), timeMs: r.i64(e, 0), detail: r.text(e, 2) };
  }
  return out;
}

/**
 * One job as a Cap'n Proto message of its own (schema/facts.capnp `Job`, the snapshot's layout): the
 * final record a controller's accounting store keeps of a cleaned job. A restored job's lazy parts
 * are copied as they are and keep reading from where they came from.
 */
export function encodeJob(job: Job): Uint8Array {
  const w = new Writer(2048);
  const d = w.struct(w.root, JOB_DATA_WORDS, JOB_PTRS);
  writeJob(w, d, job, { parts: [], ptrs: [] }, true);
  return w.finish(true);
}

/** The job encodeJob wrote; its spec and record are read lazily when finished. Throws SnapshotError. */
export function decodeJob(bytes: Uint8Array): Job {
  try {
    const r = new Reader(bytes);
    const s = r.struct(r.root);
    if (s === null) throw new SnapshotError('job record has no root');
    return readJob(r, s);
  } catch (e) {
    if (e instanceof WireError) throw new SnapshotError(`job record is corrupt: ${e.message}`);
    throw e;
  }
}

/**
 * One job of a snapshot; a finished one keeps its spec and record encoded, a pending or running one
 * the part of its spec the scheduler does not read (lazy-parts.ts, PendingJobSpec). With
 * `arrays` (a snapshot's), an array element takes the values it shares from its array. One object
 * literal in the field order of arrays.ts newJob (a restore builds a million of them: no spread, and
 * the same shape as the jobs apply makes).
 */
export function readJob(r: Reader, js: StructRef, arrays?: ReadonlyMap<number, JobArray>): Job {
  const state = JOB_STATES[r.u16(js, 8)];
  const id = r.u64(js, 0);
  if (state === undefined) throw new SnapshotError(`job ${id} has unknown state ${r.u16(js, 8)}`);
  const finished = state === 'DONE' || state === 'EXIT';
  let a: Omit<JobArray, 'name' | 'limit' | 'indices'> | undefined;
  if (arrays !== undefined && isElementId(id)) {
    a = arrays.get(arrayIdOf(id));
    if (a === undefined) throw new SnapshotError(`job ${formatJobId(id)} is an element of no array in the snapshot`);
  }
  return {
    id,
    state,
    user: a !== undefined ? a.user : (r.text(js, 0) ?? ''),
    queue: a !== undefined ? a.queue : (r.text(js, 1) ?? ''),
    profile: a !== undefined ? a.profile : r.text(js, 2),
    profileRequested: a !== undefined ? a.profileRequested : r.text(js, 3),
    spec: a !== undefined ? a.spec : finished ? lazySpec(r, r.ptr(js, 4)) : pendingSpec(r, r.ptr(js, 4)),
    submitTimeMs: a !== undefined ? a.submitTimeMs : r.i64(js, 16),
    runNumber: r.u32(js, 12),
    requeueCount: r.u32(js, 24),
    record: finished ? lazyRecord(r, r.ptr(js, 5)) : readDispatchRecord(r, r.ptr(js, 5)),
    dispatchTimeMs: r.i64(js, 32),
    started: r.bool(js, 80),
    pid: r.u32(js, 28),
    startTimeMs: r.i64(js, 40),
    endTimeMs: r.i64(js, 48),
    exitCode: r.i32(js, 56),
    signal: r.text(js, 6),
    reason: r.text(js, 7),
    killRequestedBy: r.text(js, 8),
    lastDecline: r.text(js, 9),
    heldBy: r.text(js, 10),
    events: readEvents(r, r.ptr(js, 11)),
    dependency: a !== undefined ? a.dependency : readDependency(r, js),
  };
}

function readDependency(r: Reader, js: StructRef): JobDependency | null {
  const text = r.text(js, 12);
  const resolved = r.text(js, 13);
  if (text === null || resolved === null) return null;
  try {
    return dependencyOf(text, resolved, r.bool(js, 81));
  } catch (e) {
    if (e instanceof DependencySyntaxError)
      throw new SnapshotError(
        `job ${r.u64(js, 0)}'s dependency ${JSON.stringify(resolved)} does not parse: ${e.message}`,
      );
    throw e;
  }
}

// A finished job's spec and record are rarely read again: they stay encoded (lazy-parts.ts). The
// pointer is checked here (a struct, in bounds); the fields are checked when read.

function lazySpec(r: Reader, ptr: number): JobSpec {
  if (ptr < 0 || r.struct(ptr) === null) return EMPTY_SPEC;
  return new LazyJobSpec(r, ptr);
}

/** A pending or running job's spec: what the scheduler reads decoded now, the rest when read. */
function pendingSpec(r: Reader, ptr: number): JobSpec {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return EMPTY_SPEC;
  return new PendingJobSpec(r, ptr, s);
}

function lazyRecord(r: Reader, ptr: number): DispatchRecord | null {
  if (ptr < 0 || r.struct(ptr) === null) return null;
  return new LazyDispatchRecord(r, ptr);
}
