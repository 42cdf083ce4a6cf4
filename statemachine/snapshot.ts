// The whole controller state as ONE Cap'n Proto message (schema/facts.capnp `Snapshot`), and back.
// `restore(snapshot(state))` equals `state`, field for field (state.property.test.ts proves it for
// random states), and replaying the log from a snapshot gives the state replaying from the start
// gives. The configuration is stored as its source files and rebuilt with loadConfig (pure), and
// the resource usage is rebuilt from the running jobs' records, so neither can drift. Finished
// jobs' specs and records are not decoded at restore: they stay in the snapshot's bytes and are
// decoded field by field when read (lazy-parts.ts), and the next snapshot copies their bytes.
//
// Layout (bytes; `capnp compile -ocapnp schema/facts.capnp`):
//   Snapshot 5 data words, 4 ptrs: formatVersion d0, appliedIndex d8, nextJobId d16, logTimeMs d24,
//            jobsCleaned d32 (a snapshot written before it has 4 data words: 0); config p0, jobs p1,
//            sessions p2, hosts p3 (the hosts' registrations, host-codec.ts; a snapshot written
//            before them has 3 ptrs: none).
//   Job      8 data words, 10 ptrs: id d0, state d8, started bit 80, runNumber d12, submitTimeMs d16,
//            requeueCount d24, pid d28, dispatchTimeMs d32, startTimeMs d40, endTimeMs d48,
//            exitCode d56; user p0, queue p1, profile p2, profileRequested p3, spec p4, record p5,
//            signal p6, reason p7, killRequestedBy p8, lastDecline p9.
//   Session  2 data words, 3 ptrs: lastSequence d0, lastTimeMs d8; clientId p0, result p1, user p2
//            (the session's owner, `user @4 :Text`; a snapshot written before it has 2 ptrs: null).

import { MESSAGE_BYTES_MAX, Reader, WireError, Writer, type StructRef } from '../wire/capnp-wire.js';
import { loadConfig } from '../model/config.js';
import { formatDiagnostic } from '../model/diagnostics.js';
import type { DispatchRecord } from './dispatch-record.js';
import {
  EMPTY_SPEC,
  readConfigFiles,
  readDispatchRecord,
  readJobSpec,
  readResult,
  writeConfigFiles,
  writeDispatchRecord,
  writeJobSpec,
  writeResult,
} from './facts-codec.js';
import type { JobSpec } from './facts.js';
import {
  readRegisteredHostIn,
  REGISTERED_HOST_DATA_WORDS,
  REGISTERED_HOST_PTRS,
  writeRegisteredHostAt,
} from './host-codec.js';
import { LazyDispatchRecord, LazyJobSpec } from './lazy-parts.js';
import type { Session } from './sessions.js';
import { emptyState, JOB_STATES, type ControllerState, type Job } from './state.js';
import { account } from './usage.js';

/** Bumped only for an incompatible change (never expected: the schema evolves additively). */
export const SNAPSHOT_FORMAT_VERSION = 1;
/** Bytes reserved up front per job, so that a large snapshot does not regrow its buffer often. */
const SNAPSHOT_BYTES_PER_JOB_ESTIMATE = 1024;

/** A snapshot that cannot be restored (corrupt, or written by an incompatible version). */
export class SnapshotError extends Error {
  override readonly name = 'SnapshotError';
}

const JOB_DATA_WORDS = 8;
const JOB_PTRS = 10;
const JOB_BYTES = (JOB_DATA_WORDS + JOB_PTRS) * 8;
const SESSION_DATA_WORDS = 2;
const SESSION_PTRS = 3;
const SESSION_BYTES = (SESSION_DATA_WORDS + SESSION_PTRS) * 8;

/**
 * Writes the whole state as one single-segment Cap'n Proto message. The caller must not modify the
 * bytes afterwards: finished jobs restored lazily (lazy-parts.ts) are copied into them as they are
 * and then read from them.
 */
export function snapshot(state: ControllerState): Uint8Array {
  const enc = new SnapshotEncoder(state);
  while (!enc.step(Number.POSITIVE_INFINITY));
  return enc.bytes();
}

/**
 * Writes a snapshot a slice of jobs at a time, so that a controller can go on answering its peers
 * between slices (encoding a million jobs takes seconds, longer than an election timeout). It
 * writes the state as it was when it was constructed: everything but the jobs is written (or, the
 * sessions, copied) then, the job table is taken as a list of the jobs then, and the state may go on
 * changing meanwhile as long as each job is handed to `preserve` before it is first changed
 * (copy-on-write: its copy as it was is what gets written). Jobs added later are not in the list;
 * jobs removed later are still written. A change to the job table the caller did not announce is
 * caught at the next step (StateChangedError) while no job has been preserved: the snapshot would be
 * no state the log ever produced.
 */
export class SnapshotEncoder {
  private readonly w: Writer;
  private readonly jobList: Job[];
  private readonly sessions: Session[];
  private readonly appliedIndex: number;
  readonly jobCount: number;
  private readonly moved: Moved = { parts: [], ptrs: [] };
  /** The root struct's pointer section: config p0, jobs p1, sessions p2, hosts p3. */
  private readonly rootPtrs: number;
  private at: number;
  private next = 0;
  private left: number;
  private done: Uint8Array | null = null;
  /** Jobs as they were at construction, for those changed since (copy-on-write). */
  private readonly before = new Map<Job, Job>();
  /** Whether the caller announces changes (`preserve`): then the state may change meanwhile. */
  private copyOnWrite = false;

  constructor(private readonly state: ControllerState) {
    const w = new Writer(Math.min(MESSAGE_BYTES_MAX, 4096 + state.jobs.size * SNAPSHOT_BYTES_PER_JOB_ESTIMATE));
    const d = w.struct(w.root, 5, 4);
    w.u32(d, SNAPSHOT_FORMAT_VERSION);
    w.u64(d + 8, state.appliedIndex);
    w.u64(d + 16, state.nextJobId);
    w.i64(d + 24, state.logTimeMs);
    w.u64(d + 32, state.jobsCleaned);
    this.rootPtrs = d + 40;
    if (state.config !== null) writeConfigFiles(w, this.rootPtrs, state.config.files);
    writeHosts(w, this.rootPtrs + 24, state);
    this.at = w.structList(this.rootPtrs + 8, state.jobs.size, JOB_DATA_WORDS, JOB_PTRS);
    this.w = w;
    this.jobList = Array.from(state.jobs.values());
    this.sessions = Array.from(state.sessions.values(), (x) => ({ ...x }));
    this.appliedIndex = state.appliedIndex;
    this.jobCount = state.jobs.size;
    this.left = state.jobs.size;
  }

  /** From now on the state may change while the snapshot is written, each changed job `preserve`d first. */
  announceChanges(): void {
    this.copyOnWrite = true;
  }

  /**
   * The caller will change `job` (of the state this encoder writes): its current value is kept
   * for the snapshot first, unless already written or kept. From the first call on, the state may
   * change while the snapshot is being written.
   */
  preserve(job: Job): void {
    this.copyOnWrite = true;
    if (this.done !== null || this.before.has(job)) return;
    this.before.set(job, { ...job });
  }

  /** Jobs still to be written. */
  get jobsLeft(): number {
    return this.left;
  }

  /** Writes up to `maxJobs` more jobs (the sessions with the last ones); true once complete. */
  step(maxJobs: number): boolean {
    if (this.done !== null) return true;
    if (
      !this.copyOnWrite &&
      (this.state.appliedIndex !== this.appliedIndex || this.state.jobs.size !== this.jobCount)
    ) {
      throw new StateChangedError(
        `the state changed while its snapshot at index ${this.appliedIndex} was being written (now at index ${this.state.appliedIndex}, ${this.state.jobs.size} jobs instead of ${this.jobCount})`,
      );
    }
    const w = this.w;
    let n = Math.min(maxJobs, this.left);
    this.left -= n;
    const before = this.before;
    for (; n > 0; n--) {
      const job = this.jobList[this.next]!;
      this.jobList[this.next++] = undefined as unknown as Job; // written: not kept alive by the encoder
      writeJob(w, this.at, before.size === 0 ? job : (before.get(job) ?? job), this.moved);
      this.at += JOB_BYTES;
    }
    if (this.left > 0) return false;
    before.clear();
    let at = w.structList(this.rootPtrs + 16, this.sessions.length, SESSION_DATA_WORDS, SESSION_PTRS);
    for (const s of this.sessions) {
      w.u64(at, s.lastSequence);
      w.i64(at + 8, s.lastTimeMs);
      w.text(at + 16, s.clientId);
      writeResult(w, at + 24, s.result);
      w.text(at + 32, s.user);
      at += SESSION_BYTES;
    }
    const bytes = w.finish(false);
    const moved = this.moved;
    if (moved.parts.length > 0) {
      // The lazy parts now read from their copies in this message: the one they came from can go.
      const r = new Reader(bytes);
      for (let i = 0; i < moved.parts.length; i++) moved.parts[i]!.moveTo(r, moved.ptrs[i]!);
    }
    this.done = bytes;
    return true;
  }

  /** The complete snapshot (after step() returned true). */
  bytes(): Uint8Array {
    if (this.done === null) throw new Error(`the snapshot is not complete: ${this.left} jobs left to write`);
    return this.done;
  }
}

/** The state a snapshot was being written of changed before the snapshot was complete. */
export class StateChangedError extends Error {
  override readonly name = 'StateChangedError';
}

/** Lazy parts copied into the message being written, and where (moved there once it is complete). */
interface Moved {
  readonly parts: (LazyJobSpec | LazyDispatchRecord)[];
  readonly ptrs: number[];
}

function writeHosts(w: Writer, ptr: number, state: ControllerState): void {
  const bytes = (REGISTERED_HOST_DATA_WORDS + REGISTERED_HOST_PTRS) * 8;
  let at = w.structList(ptr, state.hosts.size, REGISTERED_HOST_DATA_WORDS, REGISTERED_HOST_PTRS);
  for (const h of state.hosts.values()) {
    writeRegisteredHostAt(w, at, h);
    at += bytes;
  }
}

function writeJob(w: Writer, d: number, j: Job, moved: Moved): void {
  const p = d + JOB_DATA_WORDS * 8;
  w.u64(d, j.id);
  w.u16(d + 8, JOB_STATES.indexOf(j.state));
  w.bool(d, 80, j.started);
  w.u32(d + 12, j.runNumber);
  w.i64(d + 16, j.submitTimeMs);
  w.u32(d + 24, j.requeueCount);
  w.u32(d + 28, j.pid);
  w.i64(d + 32, j.dispatchTimeMs);
  w.i64(d + 40, j.startTimeMs);
  w.i64(d + 48, j.endTimeMs);
  w.i32(d + 56, j.exitCode);
  w.text(p, j.user);
  w.text(p + 8, j.queue);
  w.text(p + 16, j.profile);
  w.text(p + 24, j.profileRequested);
  if (j.spec instanceof LazyJobSpec) {
    j.spec.copyTo(w, p + 32);
    moved.parts.push(j.spec);
    moved.ptrs.push(p + 32);
  } else writeJobSpec(w, p + 32, j.spec);
  if (j.record instanceof LazyDispatchRecord) {
    j.record.copyTo(w, p + 40);
    moved.parts.push(j.record);
    moved.ptrs.push(p + 40);
  } else if (j.record !== null) writeDispatchRecord(w, p + 40, j.record);
  w.text(p + 48, j.signal);
  w.text(p + 56, j.reason);
  w.text(p + 64, j.killRequestedBy);
  w.text(p + 72, j.lastDecline);
}

/**
 * One job as a Cap'n Proto message of its own (schema/facts.capnp `Job`, the snapshot's layout): the
 * final record a controller's accounting store keeps of a cleaned job. A restored job's lazy parts
 * are copied as they are and keep reading from where they came from.
 */
export function encodeJob(job: Job): Uint8Array {
  const w = new Writer(2048);
  const d = w.struct(w.root, JOB_DATA_WORDS, JOB_PTRS);
  writeJob(w, d, job, { parts: [], ptrs: [] });
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
 * Rebuilds the state a snapshot was taken of. Throws SnapshotError when it cannot. Finished jobs'
 * specs and records stay in `bytes` and are decoded when read (lazy-parts.ts): the caller must not
 * modify `bytes` afterwards.
 */
export function restore(bytes: Uint8Array): ControllerState {
  try {
    return restoreOrThrow(bytes);
  } catch (e) {
    if (e instanceof WireError) throw new SnapshotError(`snapshot is corrupt: ${e.message}`);
    throw e;
  }
}

function restoreOrThrow(bytes: Uint8Array): ControllerState {
  const r = new Reader(bytes);
  const s = r.struct(r.root);
  if (s === null) throw new SnapshotError('snapshot has no root');
  const version = r.u32(s, 0);
  if (version !== SNAPSHOT_FORMAT_VERSION)
    throw new SnapshotError(`snapshot format ${version} is not ${SNAPSHOT_FORMAT_VERSION}`);
  const state = emptyState();
  state.appliedIndex = r.u64(s, 8);
  state.nextJobId = r.u64(s, 16);
  state.logTimeMs = r.i64(s, 24);
  state.jobsCleaned = r.u64(s, 32);

  const files = readConfigFiles(r, r.ptr(s, 0));
  if (files !== null) {
    const loaded = loadConfig(files);
    if (!loaded.ok) {
      throw new SnapshotError(
        `the snapshot's configuration no longer loads: ${loaded.errors.map(formatDiagnostic).join('; ')}`,
      );
    }
    state.config = { files, cluster: loaded.config };
  }
  const cluster = state.config?.cluster ?? null;

  const jobs = s.ptrCount > 1 ? r.list(r.ptr(s, 1)) : null;
  if (jobs !== null) {
    for (let i = 0; i < jobs.count; i++) {
      const job = readJob(r, r.elem(jobs, i));
      state.jobs.set(job.id, job);
      if (job.state === 'RUN' && job.record !== null) account(state.usage, cluster, job.record, 1);
    }
  }

  const sessions = s.ptrCount > 2 ? r.list(r.ptr(s, 2)) : null;
  if (sessions !== null) {
    for (let i = 0; i < sessions.count; i++) {
      const session = readSession(r, r.elem(sessions, i));
      state.sessions.set(session.clientId, session);
    }
  }
  if (s.ptrCount > 3) restoreHosts(r, r.ptr(s, 3), state);
  return state;
}

/** One job of a snapshot; a finished one keeps its spec and record encoded (lazy-parts.ts). */
function readJob(r: Reader, js: StructRef): Job {
  const state_ = JOB_STATES[r.u16(js, 8)];
  if (state_ === undefined) throw new SnapshotError(`job ${r.u64(js, 0)} has unknown state ${r.u16(js, 8)}`);
  const finished = state_ === 'DONE' || state_ === 'EXIT';
  return {
    id: r.u64(js, 0),
    state: state_,
    user: r.text(js, 0) ?? '',
    queue: r.text(js, 1) ?? '',
    profile: r.text(js, 2),
    profileRequested: r.text(js, 3),
    spec: finished ? lazySpec(r, r.ptr(js, 4)) : readJobSpec(r, r.ptr(js, 4)),
    submitTimeMs: r.i64(js, 16),
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
  };
}

function readSession(r: Reader, e: StructRef): Session {
  return {
    clientId: r.text(e, 0) ?? '',
    user: r.text(e, 2),
    lastSequence: r.u64(e, 0),
    lastTimeMs: r.i64(e, 8),
    result: readResult(r, r.ptr(e, 1)),
  };
}

function restoreHosts(r: Reader, ptr: number, state: ControllerState): void {
  const hosts = r.list(ptr);
  for (let i = 0; i < (hosts?.count ?? 0); i++) {
    const h = readRegisteredHostIn(r, r.elem(hosts!, i));
    state.hosts.set(h.host, h);
  }
}

// A finished job's spec and record are rarely read again: they stay encoded (lazy-parts.ts). The
// pointer is checked here (a struct, in bounds); the fields are checked when read.

function lazySpec(r: Reader, ptr: number): JobSpec {
  if (ptr < 0 || r.struct(ptr) === null) return EMPTY_SPEC;
  return new LazyJobSpec(r, ptr);
}

function lazyRecord(r: Reader, ptr: number): DispatchRecord | null {
  if (ptr < 0 || r.struct(ptr) === null) return null;
  return new LazyDispatchRecord(r, ptr);
}
