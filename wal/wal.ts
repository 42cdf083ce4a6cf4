// The write-ahead log: open/recover, save with group commit, snapshot marks, compaction.
//
// Durability rule: `save()` resolves only after the record carrying its entries and hard state is
// written and fdatasync'ed. Saves made while a write+fdatasync is in flight are queued and go out
// together in the next record (group commit): one fdatasync covers every appender that joined.
// Exactly one record is written per fdatasync, so a crash can tear only the last record of the
// last segment; recovery cuts such a torn tail (and says so through the logger) and refuses any
// other damage with WalCorruptionError.

import { promises as fsp } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Entry, HardState } from '../raft/types.js';
import {
  WalClosedError,
  WalCorruptionError,
  WalFailedError,
  WalGapError,
  WalInvalidSaveError,
  WalLimitError,
  WalMissingSegmentError,
  WalOverloadedError,
  WalVersionError,
} from './errors.js';
import { fsyncDir } from './fsync.js';
import {
  ENTRY_DATA_BYTES_MAX,
  INDEX_MAX,
  PENDING_BYTES_MAX,
  RECORD_PAYLOAD_BYTES_MAX,
  SAVE_ENTRIES_MAX,
  SEGMENT_BYTES_DEFAULT,
  SEGMENT_BYTES_MAX,
  SEGMENT_BYTES_MIN,
} from './limits.js';
import { DataDirLock } from './lock.js';
import { LogImage } from './log-image.js';
import {
  type Op,
  type SnapshotBase,
  BATCH_OVERHEAD_BYTES,
  ENTRIES_OP_OVERHEAD_BYTES,
  ENTRY_OVERHEAD_BYTES,
  HARD_STATE_OP_BYTES,
  OpKind,
  SEGMENT_HEADER_RECORD_BYTES,
  SNAPSHOT_MARK_OP_BYTES,
  encodeBatch,
} from './record.js';
import { type SegmentFileName, SegmentWriter, listSegments, scanSegment, segmentName } from './segment.js';

/** Where the WAL reports what an operator should know (a torn tail cut, a stale lock broken). */
export interface WalLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

const stderrLogger: WalLogger = {
  info: (msg, fields) => process.stderr.write(`wal: ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`),
  warn: (msg, fields) => process.stderr.write(`wal: WARNING ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`),
};

export interface WalOptions {
  /** Roll over to a new segment once the next record would pass this size (default 64 MiB). */
  readonly segmentBytes?: number;
  readonly logger?: WalLogger;
  /** Take the directory's exclusive lock (default true; false only for tests that inspect files). */
  readonly lock?: boolean;
  /** The node's data directory, named in recovery advice (default: the WAL directory's parent). */
  readonly dataDir?: string;
  /**
   * Run each record's fdatasync on the event loop instead of the thread pool (default false). It
   * saves two thread hand-offs per record, which is about 20% of a lone appender's rate on a disk
   * that flushes in ~140 µs (benchmarks/README.md), but stalls the whole process (timers, sockets)
   * for every flush: choose it only for a disk whose flush latency is far below the heartbeat.
   */
  readonly syncOnEventLoop?: boolean;
}

/** What start-up read back. Entries are contiguous: entries[k].index === firstIndex + k. */
export interface RecoveredLog {
  readonly hardState: HardState;
  /** The latest snapshot mark (index 0, term 0 when none): entries ≤ its index are not in the log. */
  readonly snapshot: SnapshotBase;
  readonly entries: Entry[];
  /** Index of entries[0]; lastIndex + 1 when there is no entry. */
  readonly firstIndex: number;
  readonly lastIndex: number;
  /** Present when a torn tail was cut at start-up. */
  readonly tornTail?: { readonly file: string; readonly offset: number; readonly bytesCut: number };
}

/** One segment as the WAL tracks it. */
interface SegmentMeta {
  readonly seq: number;
  readonly firstIndex: number;
  readonly path: string;
  /** The highest entry index ever written to this segment (firstIndex - 1 when none). */
  maxIndex: number;
}

interface Waiter {
  resolve(): void;
  reject(e: unknown): void;
}

/** One op waiting for the disk; the last op of a save carries the save's waiter. */
interface QueuedOp {
  readonly op: Op;
  readonly bytes: number;
  /** The log's last index once this op is applied. */
  readonly lastIndexAfter: number;
  readonly waiter: Waiter | undefined;
}

export class Wal {
  private readonly queue: QueuedOp[] = [];
  private queueHead = 0;
  private pendingBytes = 0;
  /** True while flushLoop runs; `idle` settles when it stops. */
  private running = false;
  private idle: Promise<void> = Promise.resolve();
  private failed: WalFailedError | undefined;
  private closed = false;
  /** The log as accepted by save() (validation), ahead of the disk. */
  private readonly accepted: LogImage;
  /** The state as written, in write order: what a new segment's header must carry. */
  private written: { lastIndex: number; hardState: HardState; base: SnapshotBase };

  private syncOnEventLoop = false;

  private constructor(
    readonly dir: string,
    private readonly segmentBytes: number,
    private readonly logger: WalLogger,
    private readonly lock: DataDirLock | undefined,
    private readonly segments: SegmentMeta[],
    private active: SegmentWriter,
    image: LogImage,
  ) {
    this.accepted = new LogImage({ firstIndex: image.firstIndex, hardState: image.hardState, base: image.base }, false);
    for (const t of image.terms) this.accepted.terms.push(t); // no spread: the log may hold millions
    this.written = { lastIndex: image.lastIndex, hardState: image.hardState, base: image.base };
  }

  /**
   * Opens (creating if needed) the WAL in `dir`: takes the lock, reads and checks every segment,
   * cuts a torn tail, and returns the WAL with what it read back.
   */
  static async open(dir: string, opts: WalOptions = {}): Promise<{ wal: Wal; recovered: RecoveredLog }> {
    dir = resolve(dir);
    const segmentBytes = opts.segmentBytes ?? SEGMENT_BYTES_DEFAULT;
    if (!Number.isInteger(segmentBytes) || segmentBytes < SEGMENT_BYTES_MIN || segmentBytes > SEGMENT_BYTES_MAX) {
      throw new WalLimitError(
        `segmentBytes ${segmentBytes} outside [${SEGMENT_BYTES_MIN}, ${SEGMENT_BYTES_MAX}] bytes`,
      );
    }
    const logger = opts.logger ?? stderrLogger;
    const dataDir = opts.dataDir ?? resolve(dir, '..');
    // Owner only: the log holds password hashes (config facts) and job environments.
    const made = await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    if (made !== undefined) await fsyncDir(dirname(made)); // the new directory's name, durably
    const lock =
      opts.lock === false
        ? undefined
        : await DataDirLock.acquire(dir, (why) => logger.warn(`broke a stale lock on ${dir}: ${why}`));
    try {
      const opened = await recover(dir, segmentBytes, logger, lock, dataDir);
      opened.wal.syncOnEventLoop = opts.syncOnEventLoop ?? false;
      return opened;
    } catch (e) {
      await lock?.release();
      throw e;
    }
  }

  /** Last index accepted by save() (durable once every save so far has resolved). */
  get lastIndex(): number {
    return this.accepted.lastIndex;
  }

  /** Segment files currently held, oldest first (for tests and `xceadmin` status). */
  segmentFiles(): string[] {
    return this.segments.map((s) => s.path);
  }

  /**
   * Appends entries and/or a hard state, durably. When entries[0].index ≤ lastIndex the conflicting
   * suffix from entries[0].index on is replaced (a follower overwritten by its leader); the
   * replacement is in the same record as the new entries, so it is durable before they are
   * acknowledged. Resolves once on disk; rejects (and the WAL stops) if the disk fails.
   */
  save(hardState: HardState | undefined, entries: readonly Entry[]): Promise<void> {
    const problem = this.checkUsable();
    if (problem) return Promise.reject(problem);
    if (entries.length > SAVE_ENTRIES_MAX)
      return Promise.reject(
        new WalLimitError(`a save of ${entries.length} entries exceeds SAVE_ENTRIES_MAX (${SAVE_ENTRIES_MAX})`),
      );
    const ops: Op[] = [];
    if (entries.length > 0) {
      // Split into runs that each fit one record with room for a hard state op beside them.
      const budget = RECORD_PAYLOAD_BYTES_MAX - BATCH_OVERHEAD_BYTES - HARD_STATE_OP_BYTES - ENTRIES_OP_OVERHEAD_BYTES;
      let start = 0;
      let bytes = 0;
      for (let k = 0; k < entries.length; k++) {
        const b = ENTRY_OVERHEAD_BYTES + entries[k]!.data.length;
        if (bytes + b > budget && k > start) {
          ops.push({ kind: OpKind.Entries, entries: entries.slice(start, k) });
          start = k;
          bytes = 0;
        }
        bytes += b;
      }
      ops.push({ kind: OpKind.Entries, entries: start === 0 ? entries : entries.slice(start) });
    }
    if (hardState) ops.push({ kind: OpKind.HardState, hardState });
    if (ops.length === 0) return Promise.resolve();
    return this.enqueue(ops, () => this.accept(hardState, entries));
  }

  /** Checks a save against the accepted log and applies it there; returns the refusal, if any. */
  private accept(hardState: HardState | undefined, entries: readonly Entry[]): Error | undefined {
    if (hardState) {
      const prev = this.accepted.hardState;
      if (!isIndex(hardState.term) || !isIndex(hardState.vote) || !isIndex(hardState.commit)) {
        return new WalInvalidSaveError(
          `hard state fields must be integers in [0, 2^53-1], found ${JSON.stringify(hardState)}`,
        );
      }
      if (hardState.term < prev.term)
        return new WalInvalidSaveError(
          `hard state term ${hardState.term} is below the saved term ${prev.term}; a term never goes back`,
        );
      if (hardState.term === prev.term && prev.vote !== 0 && hardState.vote !== prev.vote) {
        return new WalInvalidSaveError(
          `hard state changes the vote of term ${prev.term} from ${prev.vote} to ${hardState.vote}; one vote per term (Raft §5.2)`,
        );
      }
      if (hardState.commit < prev.commit)
        return new WalInvalidSaveError(
          `hard state commit ${hardState.commit} is below the saved commit ${prev.commit}; commit never goes back`,
        );
    }
    if (entries.length > 0) {
      const err = this.checkEntries(entries);
      if (err) return err;
    }
    if (hardState) this.accepted.apply({ kind: OpKind.HardState, hardState });
    return undefined;
  }

  /**
   * Records durably that a snapshot at (index, term) is now the log's base: entries ≤ index are
   * dropped from the log read back at start-up, and when the snapshot is past the log or does not
   * match its term at `index`, the whole log is replaced (a follower installing a leader's snapshot),
   * so the next save may start at index + 1. Call after the snapshot itself is durable in the store.
   */
  saveSnapshot(snapshot: SnapshotBase): Promise<void> {
    const problem = this.checkUsable();
    if (problem) return Promise.reject(problem);
    if (!isIndex(snapshot.index) || !isIndex(snapshot.term))
      return Promise.reject(new WalInvalidSaveError(`snapshot index and term must be integers in [0, 2^53-1]`));
    const op: Op = { kind: OpKind.SnapshotMark, base: { index: snapshot.index, term: snapshot.term } };
    return this.enqueue([op], () => {
      const rule = this.accepted.apply(op);
      return rule ? new WalInvalidSaveError(`saveSnapshot refused: expected ${rule}`) : undefined;
    });
  }

  /**
   * Deletes the segments that hold only entries ≤ snapshotIndex (never the segment being written),
   * then fsyncs the directory. Call only once a snapshot covering snapshotIndex is durable.
   * Returns the number of segment files removed.
   */
  async compact(snapshotIndex: number): Promise<number> {
    const problem = this.checkUsable();
    if (problem) throw problem;
    let n = 0;
    while (n < this.segments.length - 1 && this.segments[n]!.maxIndex <= snapshotIndex) n++;
    if (n === 0) return 0;
    const gone = this.segments.splice(0, n);
    // The accepted image needs no term at or below the snapshot: keep its memory bounded by the log.
    this.accepted.forgetThrough(Math.min(snapshotIndex, this.segments[0]!.firstIndex - 1));
    for (const s of gone) await fsp.unlink(s.path);
    await fsyncDir(this.dir);
    this.logger.info(`compacted ${n} segment(s) wholly at or below index ${snapshotIndex}`, {
      removed: gone.map((s) => s.path),
    });
    return n;
  }

  /** Waits for every accepted save to be durable, then closes the segment and releases the lock. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.running) await this.idle;
    await this.active.close().catch(() => undefined);
    await this.lock?.release();
  }

  private checkUsable(): Error | undefined {
    if (this.closed) return new WalClosedError();
    return this.failed;
  }

  private checkEntries(entries: readonly Entry[]): WalError | undefined {
    const first = entries[0]!.index;
    for (const e of entries) {
      if (!isIndex(e.index) || !isIndex(e.term) || e.index < 1)
        return new WalInvalidSaveError(
          `entry index and term must be integers in [1, 2^53-1], found index ${e.index} term ${e.term}`,
        );
      if (e.data.length > ENTRY_DATA_BYTES_MAX)
        return new WalLimitError(
          `entry ${e.index} holds ${e.data.length} B of data, over ENTRY_DATA_BYTES_MAX (${ENTRY_DATA_BYTES_MAX} B)`,
        );
    }
    // Raft never rewrites a committed entry: refuse a save that would (a caller bug, not a disk fault).
    const committed = Math.min(this.accepted.hardState.commit, this.accepted.lastIndex);
    for (let i = first; i <= committed && i - first < entries.length; i++) {
      const had = this.accepted.termAt(i);
      const term = entries[i - first]!.term;
      if (had !== undefined && had !== term) {
        return new WalInvalidSaveError(
          `save would replace committed entry ${i} (term ${had}) with term ${term}; committed entries are never truncated`,
        );
      }
    }
    const rule = this.accepted.apply({ kind: OpKind.Entries, entries });
    if (rule) return new WalInvalidSaveError(`save refused: expected ${rule}`);
    return undefined;
  }

  /**
   * Queues ops for the flusher once `accept` (validation + the accepted image's update) passes;
   * each queued op remembers the last index right after it, which a new segment header needs.
   */
  private enqueue(ops: Op[], accept: () => Error | undefined): Promise<void> {
    let bytes = 0;
    const sized = ops.map((op) => {
      const b =
        op.kind === OpKind.Entries
          ? entriesOpBytes(op.entries)
          : op.kind === OpKind.HardState
            ? HARD_STATE_OP_BYTES
            : SNAPSHOT_MARK_OP_BYTES;
      bytes += b;
      return b;
    });
    if (this.pendingBytes + bytes > PENDING_BYTES_MAX) {
      return Promise.reject(
        new WalOverloadedError(
          `${this.pendingBytes} B already wait for the disk; PENDING_BYTES_MAX is ${PENDING_BYTES_MAX} B. Retry once earlier saves resolve.`,
        ),
      );
    }
    const refused = accept();
    if (refused) return Promise.reject(refused);
    const lastIndexAfter = this.accepted.lastIndex;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      for (let k = 0; k < ops.length; k++) {
        const op = ops[k]!;
        // Split runs of one save: only the last one ends at the save's last index.
        const after = op.kind === OpKind.Entries ? op.entries[op.entries.length - 1]!.index : lastIndexAfter;
        this.queue.push({
          op,
          bytes: sized[k]!,
          lastIndexAfter: after,
          waiter: k === ops.length - 1 ? waiter : undefined,
        });
      }
      this.pendingBytes += bytes;
      this.kick();
    });
  }

  /**
   * Starts the flusher unless it runs. It starts after the current microtasks, so saves issued
   * together (a burst of appenders woken by one resolution) share its first record. The flusher
   * re-checks the queue after every fdatasync and clears `running` in the same synchronous step as
   * its last check, so a save queued at any moment is either seen by the running loop or starts a
   * new one.
   */
  private kick(): void {
    if (this.running) return;
    this.running = true;
    queueMicrotask(() => {
      this.idle = this.flushQueued();
    });
  }

  /** Writes queued ops, one record (≤ RECORD_PAYLOAD_BYTES_MAX) per write+fdatasync, until none is left. */
  private async flushQueued(): Promise<void> {
    // No await may separate the loop's last check from `running = false` (see kick()).
    for (;;) {
      if (this.queueHead >= this.queue.length || this.failed) {
        this.running = false;
        return;
      }
      // Take whole ops from the head while they fit (always at least one: each fits alone).
      let payload = BATCH_OVERHEAD_BYTES;
      const start = this.queueHead;
      let end = start;
      while (
        end < this.queue.length &&
        (end === start || payload + this.queue[end]!.bytes <= RECORD_PAYLOAD_BYTES_MAX)
      ) {
        payload += this.queue[end]!.bytes;
        end++;
      }
      const taken = this.queue.slice(start, end);
      this.queueHead = end;
      if (this.queueHead > 4096 && this.queueHead * 2 > this.queue.length) {
        this.queue.splice(0, this.queueHead);
        this.queueHead = 0;
      }
      try {
        const rec = encodeBatch(
          taken.map((q) => q.op),
          payload,
        );
        if (this.active.bytes + rec.length > this.segmentBytes && this.active.bytes > SEGMENT_HEADER_RECORD_BYTES)
          await this.roll();
        await this.active.append(rec, this.syncOnEventLoop);
      } catch (e) {
        this.fail(new WalFailedError(this.active.path, e), taken);
        this.running = false;
        return;
      }
      this.pendingBytes -= payload - BATCH_OVERHEAD_BYTES;
      const seg = this.segments[this.segments.length - 1]!;
      for (const q of taken) {
        const op = q.op;
        this.written.lastIndex = q.lastIndexAfter;
        if (op.kind === OpKind.Entries) {
          if (q.lastIndexAfter > seg.maxIndex) seg.maxIndex = q.lastIndexAfter;
        } else if (op.kind === OpKind.HardState) {
          this.written.hardState = op.hardState;
        } else {
          this.written.base = op.base;
        }
      }
      for (const q of taken) q.waiter?.resolve();
      // Saves queued during that fdatasync are waiting. Before writing them, let the appenders just
      // woken queue their next saves too (whatever their depth of awaits), so that they join this
      // record instead of each paying for an fdatasync of its own. When nothing waits, stop: the
      // next save kicks a new flush at once (no event-loop turn on a lone appender's path).
      if (this.queueHead < this.queue.length) await new Promise<void>((r) => setImmediate(r));
    }
  }

  /** Starts the next segment: create + header + fdatasync, then fsync the directory for its name. */
  private async roll(): Promise<void> {
    const prev = this.active;
    const next = await SegmentWriter.create(this.dir, {
      seq: prev.seq + 1,
      firstIndex: this.written.lastIndex + 1,
      hardState: this.written.hardState,
      base: this.written.base,
    });
    this.active = next;
    this.segments.push({ seq: next.seq, firstIndex: next.firstIndex, path: next.path, maxIndex: next.firstIndex - 1 });
    await fsyncDir(this.dir);
    await prev.close();
  }

  /** Fail-stop: reject what was taken and everything queued; refuse every later call. */
  private fail(err: WalFailedError, taken: QueuedOp[]): void {
    this.failed = err;
    for (const q of taken) q.waiter?.reject(err);
    for (let k = this.queueHead; k < this.queue.length; k++) this.queue[k]!.waiter?.reject(err);
    this.queue.length = 0;
    this.queueHead = 0;
    this.logger.warn(err.message);
  }
}

type WalError = WalInvalidSaveError | WalLimitError;

function isIndex(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= INDEX_MAX;
}

function entriesOpBytes(es: readonly Entry[]): number {
  let n = ENTRIES_OP_OVERHEAD_BYTES;
  for (const e of es) n += ENTRY_OVERHEAD_BYTES + e.data.length;
  return n;
}

/**
 * The start-up check the daemon makes once it knows its latest durable snapshot: the log must
 * continue it, so every entry after the snapshot is either in the log or was never written. Returns
 * the entries after the snapshot (those at or below it are covered by it).
 */
export function entriesAfterSnapshot(
  dir: string,
  recovered: RecoveredLog,
  snapshotIndex: number,
  dataDir = resolve(dir, '..'),
): Entry[] {
  if (recovered.entries.length > 0 && recovered.firstIndex > snapshotIndex + 1) {
    throw new WalGapError(resolve(dir), recovered.firstIndex, snapshotIndex, dataDir);
  }
  return recovered.entries.slice(Math.max(0, snapshotIndex + 1 - recovered.firstIndex));
}

async function recover(
  dir: string,
  segmentBytes: number,
  logger: WalLogger,
  lock: DataDirLock | undefined,
  dataDir: string,
): Promise<{ wal: Wal; recovered: RecoveredLog }> {
  const files = await listSegments(dir);
  for (let k = 1; k < files.length; k++) {
    if (files[k]!.seq !== files[k - 1]!.seq + 1) {
      throw new WalMissingSegmentError(
        dir,
        `a segment with sequence number ${files[k - 1]!.seq + 1} (${segmentName(files[k - 1]!.seq + 1, 0).slice(0, 16)}-*.wal)`,
        files[k]!.name,
        dataDir,
      );
    }
  }
  let image: LogImage | undefined;
  const segments: SegmentMeta[] = [];
  let tail: { file: SegmentFileName; validBytes: number; fileBytes: number } | undefined;
  let tornTail: RecoveredLog['tornTail'];
  for (let k = 0; k < files.length; k++) {
    const f = files[k]!;
    const path = join(dir, f.name);
    const isLast = k === files.length - 1;
    const buf = await fsp.readFile(path);
    const scan = scanSegment(buf);
    if (scan.problem) {
      const p = scan.problem;
      if (p.framed && /^WAL format version/.test(p.expected)) {
        throw new WalVersionError(path, p.expected, p.found);
      }
      if (!isLast || p.validRecordAfter !== undefined || p.framed) {
        const after = p.framed
          ? '; the record is whole (its CRC matches), so this is not a torn tail'
          : p.validRecordAfter !== undefined
            ? `; a valid record follows at offset ${p.validRecordAfter}, so this is not a torn tail`
            : '; this is not the last segment, so this is not a torn tail';
        throw new WalCorruptionError(path, p.offset, p.expected, p.found + after, dataDir);
      }
      tornTail = { file: path, offset: p.offset, bytesCut: scan.fileBytes - scan.validBytes };
      logger.warn(
        `cut a torn tail (a write the crash left unfinished, never acknowledged) from ${path} at offset ${p.offset}: ${scan.fileBytes - scan.validBytes} byte(s); expected ${p.expected}, found ${p.found}`,
        tornTail,
      );
    }
    const h = scan.header;
    if (!h) {
      // The last segment's own header was torn: it was created but never held an acknowledged record.
      await fsp.unlink(path);
      await fsyncDir(dir);
      logger.warn(`removed ${path}: its header was never completely written`);
      continue;
    }
    if (h.seq !== f.seq || h.firstIndex !== f.firstIndex) {
      throw new WalCorruptionError(
        path,
        0,
        `a header for sequence ${f.seq}, first index ${f.firstIndex} (the file name)`,
        `sequence ${h.seq}, first index ${h.firstIndex}`,
        dataDir,
      );
    }
    if (!image) {
      image = new LogImage(h, true);
    } else {
      const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
      if (h.firstIndex !== image.lastIndex + 1 || !same(h.hardState, image.hardState) || !same(h.base, image.base)) {
        throw new WalCorruptionError(
          path,
          0,
          `a header continuing the previous segment (first index ${image.lastIndex + 1}, hard state ${JSON.stringify(image.hardState)}, snapshot ${JSON.stringify(image.base)})`,
          `first index ${h.firstIndex}, hard state ${JSON.stringify(h.hardState)}, snapshot ${JSON.stringify(h.base)}`,
          dataDir,
        );
      }
    }
    const meta: SegmentMeta = { seq: f.seq, firstIndex: f.firstIndex, path, maxIndex: f.firstIndex - 1 };
    for (const b of scan.batches) {
      for (const op of b.ops) {
        const rule = image.apply(op);
        if (rule)
          throw new WalCorruptionError(
            path,
            b.offset,
            rule,
            'a record that breaks it (its CRC is valid: written so by a bug, or damaged before it was checksummed)',
            dataDir,
          );
        if (op.kind === OpKind.Entries)
          meta.maxIndex = Math.max(meta.maxIndex, op.entries[op.entries.length - 1]!.index);
      }
    }
    segments.push(meta);
    tail = { file: f, validBytes: scan.validBytes, fileBytes: scan.fileBytes };
  }
  let active: SegmentWriter;
  if (!image || !tail) {
    const seq = files.length > 0 ? files[files.length - 1]!.seq : 0;
    image = LogImage.empty(true);
    active = await SegmentWriter.create(dir, { seq, firstIndex: 1, hardState: image.hardState, base: image.base });
    await fsyncDir(dir);
    segments.push({ seq, firstIndex: 1, path: active.path, maxIndex: 0 });
  } else {
    active = await SegmentWriter.reopen(
      join(dir, tail.file.name),
      tail.file.seq,
      tail.file.firstIndex,
      tail.validBytes,
      tail.fileBytes,
    );
  }
  const wal = new (Wal as unknown as WalCtor)(dir, segmentBytes, logger, lock, segments, active, image);
  const recovered: RecoveredLog = {
    hardState: image.hardState,
    snapshot: image.base,
    entries: image.entries!,
    firstIndex: image.firstIndex,
    lastIndex: image.lastIndex,
    ...(tornTail ? { tornTail } : {}),
  };
  return { wal, recovered };
}

/** The private constructor, for recover() in this module only. */
type WalCtor = new (
  dir: string,
  segmentBytes: number,
  logger: WalLogger,
  lock: DataDirLock | undefined,
  segments: SegmentMeta[],
  active: SegmentWriter,
  image: LogImage,
) => Wal;
