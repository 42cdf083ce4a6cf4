// The write-ahead log: open/recover, save with group commit, snapshot marks, compaction.
//
// Durability rule: `save()` resolves only after the record carrying its entries and hard state is
// written and fdatasync'ed. Saves made while a write+fdatasync is in flight are queued and go out
// together in the next record (group commit): one fdatasync covers every appender that joined.
// Exactly one record is written per fdatasync, so a crash can tear only the last record of the
// last segment; recovery cuts such a torn tail (and says so through the logger) and refuses any
// other damage with WalCorruptionError.
//
// This file: the `Wal` handle and its calls. The parts: recover.ts (start-up reading and checks),
// save-rules.ts (what a save must respect), group-commit.ts (the queue, records, fdatasync,
// segment roll-over), options.ts (WalOptions, WalLogger).

import { promises as fsp } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Entry, HardState } from '../raft/types.js';
import { WalClosedError, WalInvalidSaveError, WalLimitError } from './errors.js';
import { fsyncDir } from './fsync.js';
import { GroupCommit, opsForSave, type WriteOptions } from './group-commit.js';
import { SAVE_ENTRIES_MAX, SEGMENT_BYTES_DEFAULT, SEGMENT_BYTES_MAX, SEGMENT_BYTES_MIN } from './limits.js';
import { DataDirLock } from './lock.js';
import { LogImage } from './log-image.js';
import type { WalLogger, WalOptions } from './options.js';
import { stderrLogger } from './options.js';
import { type Op, type SnapshotBase, OpKind } from './record.js';
import type { RecoveredFiles, RecoveredLog } from './recover.js';
import { recover } from './recover.js';
import { acceptSave, isIndex } from './save-rules.js';
import type { SegmentWriter } from './segment.js';

export type { WalLogger, WalOptions } from './options.js';
export type { RecoveredLog } from './recover.js';
export { entriesAfterSnapshot } from './recover.js';

export class Wal {
  private closed = false;
  /** The log as accepted by save() (validation), ahead of the disk. */
  private readonly accepted: LogImage;
  private readonly writer: GroupCommit;

  private constructor(
    readonly dir: string,
    private readonly logger: WalLogger,
    private readonly lock: DataDirLock | undefined,
    files: RecoveredFiles,
    segmentBytes: number,
    writing: WriteOptions,
  ) {
    const image = files.image;
    this.accepted = new LogImage({ firstIndex: image.firstIndex, hardState: image.hardState, base: image.base }, false);
    for (const t of image.terms) this.accepted.terms.push(t); // no spread: the log may hold millions
    // The state as written, in write order: what a new segment's header must carry.
    const written = { lastIndex: image.lastIndex, hardState: image.hardState, base: image.base };
    this.writer = new GroupCommit(
      dir,
      segmentBytes,
      logger,
      files.segments,
      files.active,
      this.accepted,
      written,
      writing,
    );
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
    const preallocateBytes = opts.preallocateBytes ?? 0;
    if (!Number.isInteger(preallocateBytes) || preallocateBytes < 0 || preallocateBytes > SEGMENT_BYTES_MAX) {
      throw new WalLimitError(`preallocateBytes ${preallocateBytes} outside [0, ${SEGMENT_BYTES_MAX}] bytes`);
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
      const files = await recover(dir, logger, dataDir);
      const writing = { syncOnEventLoop: opts.syncOnEventLoop ?? false, preallocateBytes };
      const wal = new Wal(dir, logger, lock, files, segmentBytes, writing);
      return { wal, recovered: files.recovered };
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
    return this.writer.segments.map((s) => s.path);
  }

  /** The segment being written. */
  private get active(): SegmentWriter {
    return this.writer.active;
  }

  /**
   * Appends entries and/or a hard state, durably. When entries[0].index ≤ lastIndex the conflicting
   * suffix from entries[0].index on is replaced (a follower overwritten by its leader); the
   * replacement is in the same record as the new entries, so it is durable before they are
   * acknowledged. Resolves once on disk; rejects (and the WAL stops) if the disk fails.
   * `startNow`: when no flush runs, the record is written and its fdatasync started within this
   * call, instead of after the current microtasks (which lets a burst of appenders share it); for
   * a lone appender with other work to do before it awaits.
   */
  save(hardState: HardState | undefined, entries: readonly Entry[], startNow = false): Promise<void> {
    const problem = this.checkUsable();
    if (problem) return Promise.reject(problem);
    if (entries.length > SAVE_ENTRIES_MAX)
      return Promise.reject(
        new WalLimitError(`a save of ${entries.length} entries exceeds SAVE_ENTRIES_MAX (${SAVE_ENTRIES_MAX})`),
      );
    const ops = opsForSave(hardState, entries);
    if (ops.length === 0) return Promise.resolve();
    return this.writer.enqueue(ops, () => acceptSave(this.accepted, hardState, entries), startNow);
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
    return this.writer.enqueue([op], () => {
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
    const segments = this.writer.segments;
    let n = 0;
    while (n < segments.length - 1 && segments[n]!.maxIndex <= snapshotIndex) n++;
    if (n === 0) return 0;
    const gone = segments.splice(0, n);
    // The accepted image needs no term at or below the snapshot: keep its memory bounded by the log.
    this.accepted.forgetThrough(Math.min(snapshotIndex, segments[0]!.firstIndex - 1));
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
    while (this.writer.running) await this.writer.idle;
    await this.active.close().catch(() => undefined);
    await this.lock?.release();
  }

  private checkUsable(): Error | undefined {
    if (this.closed) return new WalClosedError();
    return this.writer.failed;
  }
}
