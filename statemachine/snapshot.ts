// The whole controller state as ONE Cap'n Proto message (schema/facts.capnp `Snapshot`), and back.
// `restore(snapshot(state))` equals `state`, field for field (state.property.test.ts proves it for
// random states), and replaying the log from a snapshot gives the state replaying from the start
// gives. The configuration is stored as its source files and rebuilt with loadConfig (pure), and
// the resource usage is rebuilt from the running jobs' records, so neither can drift. Finished
// jobs' specs and records are not decoded at restore: they stay in the snapshot's bytes and are
// decoded field by field when read (lazy-parts.ts), and the next snapshot copies their bytes; so do
// the fields of other jobs' specs that the scheduler does not read (PendingJobSpec).
//
// Layout (bytes; `capnp compile -ocapnp schema/facts.capnp`):
//   Snapshot 5 data words, 8 ptrs: formatVersion d0, appliedIndex d8, nextJobId d16, logTimeMs d24,
//            jobsCleaned d32 (a snapshot written before it has 4 data words: 0); config p0, jobs p1,
//            sessions p2, hosts p3 (the hosts' registrations, host-codec.ts; a snapshot written
//            before them has 3 ptrs: none), closedHosts p4 (before them: 4 ptrs, none closed;
//            snapshot-hosts.ts), arrays p5 (job arrays, each as a Job holding what its elements
//            share; none before arrays), hostCredentials p6, revokedTokens p7 (issue 19;
//            snapshot-hosts.ts; none before them: every host at epoch 0, no token revoked).
//   Job      (job-codec.ts) 8 data words, 14 ptrs. An array element (its id says so: model/job-id.ts)
//            leaves user, queue, profile, profileRequested, spec, submitTimeMs and the dependency
//            out: they are its array's (`arrays`), restored first.
//   Session  2 data words, 3 ptrs: lastSequence d0, lastTimeMs d8; clientId p0, result p1, user p2
//            (the session's owner, `user @4 :Text`; a snapshot written before it has 2 ptrs: null).

import { MESSAGE_BYTES_MAX, Reader, WireError, Writer, type StructRef } from '../wire/capnp-wire.js';
import { loadConfig } from '../model/config.js';
import { formatDiagnostic } from '../model/diagnostics.js';
import { readConfigFiles, readResult, writeConfigFiles, writeJobSpec, writeResult } from './facts-codec.js';
import {
  JOB_BYTES,
  JOB_DATA_WORDS,
  JOB_PTRS,
  readJob,
  SnapshotError,
  writeDependency,
  writeJob,
  type Moved,
} from './job-codec.js';
import { decodedSpec } from './lazy-parts.js';
import {
  restoreClosedHosts,
  restoreCredentials,
  restoreHosts,
  writeClosedHosts,
  writeCredentials,
  writeHosts,
} from './snapshot-hosts.js';
import type { Session } from './sessions.js';
import { emptyState, isRunning, watchJobEdits, type ControllerState, type Job } from './state.js';
import { makeArray } from './arrays.js';
import { account } from './usage.js';
import { arrayIdOf, isElementId } from '../model/job-id.js';

export { decodeJob, encodeJob, SnapshotError } from './job-codec.js';

/** Bumped only for an incompatible change (never expected: the schema evolves additively). */
export const SNAPSHOT_FORMAT_VERSION = 1;
/** Bytes reserved up front per job, so that a large snapshot does not regrow its buffer often. */
const SNAPSHOT_BYTES_PER_JOB_ESTIMATE = 1024;

const ROOT_PTRS = 8;
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
 * writes the state as it was when it was constructed, while the state goes on changing: everything
 * but the jobs (counters, configuration, hosts, closed hosts, arrays) is written then and the
 * sessions are copied then; the jobs are read from the live job table as they are written, each
 * job as it was before its first change from then on (copy-on-write: the encoder watches the
 * state's job edits, state.ts editJob and removeJob, the only ways to change a job or take it out).
 * Nothing is copied up front: constructing costs no more with a million jobs than with ten.
 *
 * The job table's order is submit order, ascending by (owner, id) (invariants.ts checks it): so a
 * job added later comes after every job of the snapshot and is not reached (the snapshot has
 * `jobCount` jobs), and a job of the snapshot that leaves before it is written is kept aside and
 * written at its place in that order. A table out of that order (a bug, or a test's made-up state)
 * is written as it is while no job leaves; a job leaving it during the encoding fails the step.
 * `close` (or the last step) stops the watching. `seen`, if given, is called with each job as
 * written.
 */
export class SnapshotEncoder {
  private readonly w: Writer;
  private readonly live: Iterator<Job>;
  /** The next job of the live table, taken from `live` but not yet written (a removed one may come first). */
  private peeked: Job | null = null;
  /** Jobs of the snapshot that left the state before being written, ascending by (owner, id). */
  private readonly removed: Job[] = [];
  private removedAt = 0;
  /** The last job written (null: none yet); every later one comes after it. */
  private last: Job | null = null;
  /** Jobs that left the state during the encoding, and the first pair of jobs found out of order. */
  private removals = 0;
  private disorder: string | null = null;
  /** Jobs with an owner id from here on were submitted after the snapshot's index. */
  private readonly newFrom: number;
  private readonly sessions: Session[];
  readonly jobCount: number;
  private readonly moved: Moved = { parts: [], ptrs: [] };
  /**
   * The root struct's pointer section: config p0, jobs p1, sessions p2, hosts p3, closed hosts p4,
   * arrays p5, hostCredentials p6, revokedTokens p7.
   */
  private readonly rootPtrs: number;
  private at: number;
  private left: number;
  private done: Uint8Array | null = null;
  /** Jobs as they were at construction, for those changed since (copy-on-write). */
  private readonly before = new Map<Job, Job>();
  private unwatch: (() => void) | null;

  constructor(
    state: ControllerState,
    private readonly seen?: (job: Job) => void,
  ) {
    const w = new Writer(Math.min(MESSAGE_BYTES_MAX, 4096 + state.jobs.size * SNAPSHOT_BYTES_PER_JOB_ESTIMATE));
    const d = w.struct(w.root, 5, ROOT_PTRS);
    w.u32(d, SNAPSHOT_FORMAT_VERSION);
    w.u64(d + 8, state.appliedIndex);
    w.u64(d + 16, state.nextJobId);
    w.i64(d + 24, state.logTimeMs);
    w.u64(d + 32, state.jobsCleaned);
    this.rootPtrs = d + 40;
    if (state.config !== null) writeConfigFiles(w, this.rootPtrs, state.config.files);
    writeHosts(w, this.rootPtrs + 24, state);
    writeClosedHosts(w, this.rootPtrs + 32, state);
    writeArrays(w, this.rootPtrs + 40, state);
    writeCredentials(w, this.rootPtrs + 48, this.rootPtrs + 56, state);
    this.at = w.structList(this.rootPtrs + 8, state.jobs.size, JOB_DATA_WORDS, JOB_PTRS);
    this.w = w;
    this.live = state.jobs.values();
    this.newFrom = state.nextJobId;
    this.sessions = Array.from(state.sessions.values(), (x) => ({ ...x }));
    this.jobCount = state.jobs.size;
    this.left = state.jobs.size;
    this.unwatch = watchJobEdits(state, {
      edited: (job) => this.preserve(job),
      removed: (job) => this.keepRemoved(job),
    });
  }

  /** `job` is about to change: its value as it is now is what gets written (unless written already). */
  private preserve(job: Job): void {
    if (this.before.has(job)) return;
    // Every field of a job is replaced, never changed in place (state.ts JobDraft): a shallow copy keeps it.
    this.before.set(job, { ...job });
  }

  /** `job` is about to leave the state: kept to be written at its place, unless written already or not ours. */
  private keepRemoved(job: Job): void {
    this.removals++;
    if (job === this.peeked || ownerOf(job) >= this.newFrom) return;
    if (this.last !== null && !comesBefore(this.last, job)) return;
    const r = this.removed;
    let i = r.length;
    while (i > this.removedAt && comesBefore(job, r[i - 1]!)) i--;
    r.splice(i, 0, job);
  }

  /** The next job of the snapshot in table order: the live table's next, or a removed one before it. */
  private nextJob(): Job {
    if (this.peeked === null) {
      const n = this.live.next();
      this.peeked = n.done === true ? null : n.value;
    }
    const live = this.peeked;
    const removed = this.removed[this.removedAt];
    if (removed !== undefined && (live === null || comesBefore(removed, live))) {
      this.removed[this.removedAt++] = undefined as unknown as Job; // not kept alive by the encoder
      return removed;
    }
    if (live === null) throw new Error(`the job table ran out with ${this.left} jobs of the snapshot to write`);
    this.peeked = null;
    return live;
  }

  /** Stops watching the state's job edits (the snapshot is complete or abandoned). */
  close(): void {
    this.unwatch?.();
    this.unwatch = null;
    this.before.clear();
    this.removed.length = 0;
  }

  /** Jobs still to be written. */
  get jobsLeft(): number {
    return this.left;
  }

  /** Writes up to `maxJobs` more jobs (the sessions with the last ones); true once complete. */
  step(maxJobs: number): boolean {
    if (this.done !== null) return true;
    if (this.unwatch === null) throw new Error('the snapshot encoder was closed before the snapshot was complete');
    const w = this.w;
    let n = Math.min(maxJobs, this.left);
    this.left -= n;
    const before = this.before;
    for (; n > 0; n--) {
      const job = this.nextJob();
      if (this.last !== null && this.disorder === null && !comesBefore(this.last, job))
        this.disorder = `job ${job.id} after job ${this.last.id}`;
      if (this.disorder !== null && this.removals > 0)
        throw new Error(`jobs left a job table out of submit order during its snapshot: ${this.disorder}`);
      this.last = job;
      const was = before.size === 0 ? job : (before.get(job) ?? job);
      writeJob(w, this.at, was, this.moved, false);
      this.seen?.(was);
      this.at += JOB_BYTES;
    }
    if (this.left > 0) return false;
    this.close();
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

/** The id a job was submitted under: its own, or an array element's array's. */
const ownerOf = (j: Job): number => (isElementId(j.id) ? arrayIdOf(j.id) : j.id);

/** `a` comes before `b` in the job table (submit order: by owner id, then by id). */
function comesBefore(a: Job, b: Job): boolean {
  const oa = ownerOf(a);
  const ob = ownerOf(b);
  return oa < ob || (oa === ob && a.id < b.id);
}

function writeArrays(w: Writer, ptr: number, state: ControllerState): void {
  let at = w.structList(ptr, state.arrays.size, JOB_DATA_WORDS, JOB_PTRS);
  for (const a of state.arrays.values()) {
    const p = at + JOB_DATA_WORDS * 8;
    w.u64(at, a.id);
    w.i64(at + 16, a.submitTimeMs);
    w.text(p, a.user);
    w.text(p + 8, a.queue);
    w.text(p + 16, a.profile);
    w.text(p + 24, a.profileRequested);
    writeJobSpec(w, p + 32, a.spec);
    writeDependency(w, at, a.dependency);
    at += JOB_BYTES;
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

  const arrays = s.ptrCount > 5 ? r.list(r.ptr(s, 5)) : null;
  for (let i = 0; i < (arrays?.count ?? 0); i++) {
    const t = readJob(r, r.elem(arrays!, i));
    const array = makeArray({
      id: t.id,
      user: t.user,
      queue: t.queue,
      profile: t.profile,
      profileRequested: t.profileRequested,
      spec: decodedSpec(t.spec),
      submitTimeMs: t.submitTimeMs,
      dependency: t.dependency,
    });
    if (array === null)
      throw new SnapshotError(`job array ${t.id} has no array name (${JSON.stringify(t.spec.jobName)})`);
    state.arrays.set(array.id, array);
  }
  const jobs = s.ptrCount > 1 ? r.list(r.ptr(s, 1)) : null;
  if (jobs !== null) {
    // Decoded first, put in the table after: a million young jobs stored into the growing Map, each
    // store a pointer from old space to new and each rehash moving them again, took about a sixth
    // more CPU than storing them once most have been promoted (same order, same table).
    const decoded = new Array<Job>(jobs.count);
    for (let i = 0; i < jobs.count; i++) {
      const job = readJob(r, r.elem(jobs, i), state.arrays);
      decoded[i] = job;
      if (isRunning(job) && job.record !== null) account(state.usage, cluster, job.record, 1);
    }
    for (const job of decoded) state.jobs.set(job.id, job);
  }

  const sessions = s.ptrCount > 2 ? r.list(r.ptr(s, 2)) : null;
  if (sessions !== null) {
    for (let i = 0; i < sessions.count; i++) {
      const session = readSession(r, r.elem(sessions, i));
      state.sessions.set(session.clientId, session);
    }
  }
  if (s.ptrCount > 3) restoreHosts(r, r.ptr(s, 3), state);
  if (s.ptrCount > 4) restoreClosedHosts(r, r.ptr(s, 4), state);
  restoreCredentials(r, r.ptr(s, 6), r.ptr(s, 7), state);
  return state;
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
