// A finished job's spec and dispatch record, kept as their Cap'n Proto bytes inside the snapshot
// they were restored from, and decoded one field at a time when a field is read.
//
// Why: restoring 1,000,000 jobs spent about half its time building (and having the garbage
// collector promote) the objects of finished jobs' specs and records: some 30 objects per job that
// are rarely read again (`jobs show`, `jobs list`). A finished job cannot run again without going
// back to PEND (requeue, restart), where apply.ts decodes its spec in full (`decodedSpec`).
// A pending or running job's spec (PendingJobSpec) is half of each: what the scheduler reads on
// every pass is decoded at restore into plain data properties, the rest is read when asked for
// (restoring a million pending jobs spent about a third of its CPU on their names and argvs).
//
// Contract:
// - A LazyJobSpec or PendingJobSpec is a JobSpec and a LazyDispatchRecord a DispatchRecord: every field reads as the
//   eager decoder (facts-codec.ts) would have decoded it, through the same per-field readers
//   (JOB_SPEC_FIELDS, DISPATCH_RECORD_FIELDS), so the two cannot drift. A field is decoded anew
//   on each read (nothing is cached: reading every finished job once does not grow the heap).
// - `toJSON` gives the plain value, so a lazy part serialises like an eager one.
// - The message is never modified: restore() and snapshot() say so to their callers. snapshot()
//   copies a lazy part's bytes as they are (Reader.copyTo) and then points the part at the new
//   message, so a controller keeps at most the latest snapshot alive, which Raft's storage holds
//   anyway to send to followers.
// - restore() checks that each part's pointer is a struct in bounds; the part's content is checked
//   (bounds, UTF-8, enums) when a field is read, and a bad one throws WireError there. The bytes on
//   disk are protected by a SHA-256 per chunk (wal/snapshot-store.ts).
// - Pure: no I/O, no clock.

import type { Reader, StructRef, Writer } from '../wire/capnp-wire.js';
import { textHashAt, WireError } from '../wire/capnp-wire.js';
import type { DispatchRecord, EffectiveLimits, HostTasks } from './dispatch-record.js';
import { DISPATCH_RECORD_FIELDS, JOB_SPEC_FIELDS, readDispatchRecord, readJobSpec } from './facts-codec.js';
import { JOB_NAME_PTR } from './job-spec-codec.js';
import type { JobSpec } from './facts.js';
import type { EffectiveResReq, EnvVar, ExecMode, LaunchType, Limits, WithOrigin } from '../model/profile-types.js';

/** Where a lazy part's struct is: a reader over the message and the position of the pointer to it. */
export abstract class LazyPart<T> {
  constructor(
    private reader: Reader,
    private ptrPos: number,
  ) {}

  /** The part's struct, the traversal budget given back for this one read. */
  protected struct(): StructRef {
    const r = this.reader;
    r.resetBudget();
    const s = r.struct(this.ptrPos);
    if (s === null) throw new WireError('a lazily held part lost its struct', this.ptrPos);
    return s;
  }

  protected get r(): Reader {
    return this.reader;
  }

  /** The whole value, decoded (a plain object, as the eager decoder gives). */
  abstract decode(): T;

  toJSON(): T {
    return this.decode();
  }

  /** Copies the part's bytes as they are into `w` at pointer `dstPtr`. */
  copyTo(w: Writer, dstPtr: number): void {
    this.reader.resetBudget();
    this.reader.copyTo(w, dstPtr, this.ptrPos);
  }

  /** Points the part at its copy in another message (snapshot.ts, once that message is complete). */
  moveTo(reader: Reader, ptrPos: number): void {
    this.reader = reader;
    this.ptrPos = ptrPos;
  }

  /** For the decoders below. */
  protected get at(): number {
    return this.ptrPos;
  }
}

const S = JOB_SPEC_FIELDS;

/** A finished job's JobSpec, read field by field from its bytes. */
/** The spec fields both lazy specs read from the bytes on each read, and the whole spec decoded. */
export abstract class LazySpecText extends LazyPart<JobSpec> {
  get command(): readonly string[] {
    return S.command(this.r, this.struct());
  }
  get cwd(): string | null {
    return S.cwd(this.r, this.struct());
  }
  get stdoutPath(): string | null {
    return S.stdoutPath(this.r, this.struct());
  }
  get stderrPath(): string | null {
    return S.stderrPath(this.r, this.struct());
  }
  get jobName(): string | null {
    return S.jobName(this.r, this.struct());
  }
  /** The job name's textHash (wire/text-hash.ts), from its bytes in place; -1: no name. The name index's build. */
  jobNameHash(): number {
    return textHashAt(this.r, this.r.ptr(this.struct(), JOB_NAME_PTR));
  }
  get script(): string | null {
    return S.script(this.r, this.struct());
  }
  decode(): JobSpec {
    this.r.resetBudget();
    return readJobSpec(this.r, this.at);
  }
}

export class LazyJobSpec extends LazySpecText implements JobSpec {
  get resreq(): string | null {
    return S.resreq(this.r, this.struct());
  }
  get tasks(): number | null {
    return S.tasks(this.r, this.struct());
  }
  get env(): readonly EnvVar[] {
    return S.env(this.r, this.struct());
  }
  get limits(): Limits {
    return S.limits(this.r, this.struct());
  }
  get preExec(): string | null {
    return S.preExec(this.r, this.struct());
  }
  get postExec(): string | null {
    return S.postExec(this.r, this.struct());
  }
}

/**
 * A pending (or running) job's JobSpec restored from a snapshot: the fields the scheduler reads on
 * each pass (resreq, tasks, env, limits, pre/post-exec: ownValues, MergeCache's key) are decoded at
 * restore and held as plain data properties; the others (command, cwd, the output paths, the job
 * name, the script) are read from the bytes when asked for, as a finished job's are. Why: a
 * million pending jobs each have a job name of their own (a string per job to decode and keep) and
 * an argv to look up; read only by a dispatch, `jobs show|list` and a dependency by name.
 */
export class PendingJobSpec extends LazySpecText implements JobSpec {
  readonly resreq: string | null;
  readonly tasks: number | null;
  readonly env: readonly EnvVar[];
  readonly limits: Limits;
  readonly preExec: string | null;
  readonly postExec: string | null;

  /** `s`: the struct `ptrPos` points at (the caller found it). */
  constructor(r: Reader, ptrPos: number, s: StructRef) {
    super(r, ptrPos);
    this.resreq = S.resreq(r, s);
    this.tasks = S.tasks(r, s);
    this.env = S.env(r, s);
    this.limits = S.limits(r, s);
    this.preExec = S.preExec(r, s);
    this.postExec = S.postExec(r, s);
  }
}

const D = DISPATCH_RECORD_FIELDS;

/** A finished job's DispatchRecord, read field by field from its bytes. */
export class LazyDispatchRecord extends LazyPart<DispatchRecord> implements DispatchRecord {
  get profile(): string | null {
    return D.profile(this.r, this.struct());
  }
  get profileHash(): string | null {
    return D.profileHash(this.r, this.struct());
  }
  get mode(): ExecMode {
    return D.mode(this.r, this.struct());
  }
  get launchType(): LaunchType {
    return D.launchType(this.r, this.struct());
  }
  get resreq(): EffectiveResReq {
    return D.resreq(this.r, this.struct());
  }
  get tasks(): number {
    return D.tasks(this.r, this.struct());
  }
  get hosts(): readonly HostTasks[] {
    return D.hosts(this.r, this.struct());
  }
  get env(): readonly WithOrigin<EnvVar>[] {
    return D.env(this.r, this.struct());
  }
  get limits(): EffectiveLimits {
    return D.limits(this.r, this.struct());
  }
  get profilePreExec(): string | null {
    return D.profilePreExec(this.r, this.struct());
  }
  get profilePostExec(): string | null {
    return D.profilePostExec(this.r, this.struct());
  }
  get jobPreExec(): string | null {
    return D.jobPreExec(this.r, this.struct());
  }
  get jobPostExec(): string | null {
    return D.jobPostExec(this.r, this.struct());
  }
  decode(): DispatchRecord {
    this.r.resetBudget();
    return readDispatchRecord(this.r, this.at)!;
  }
}

/** The spec as a plain object (decoded in full when it is held lazily). */
export function decodedSpec(spec: JobSpec): JobSpec {
  return spec instanceof LazySpecText ? spec.decode() : spec;
}

/** The record as a plain object (decoded in full when it is held lazily). */
export function decodedRecord(record: DispatchRecord | null): DispatchRecord | null {
  return record instanceof LazyDispatchRecord ? record.decode() : record;
}
