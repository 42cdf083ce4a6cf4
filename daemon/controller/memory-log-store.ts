// MemoryLogStore: the WAL's contract (wal/wal.ts) in memory, on a MemoryDisk (memory-disk.ts): save,
// snapshot marks, compaction and recovery, refused and accepted exactly as the WAL does.

import type { Entry, HardState } from '../../raft/types.js';
import { WalClosedError, WalInvalidSaveError, WalLimitError } from '../../wal/errors.js';
import { SAVE_ENTRIES_MAX } from '../../wal/limits.js';
import { LogImage } from '../../wal/log-image.js';
import { OpKind, type Op, type SnapshotBase } from '../../wal/record.js';
import { logAfterSnapshot } from '../../wal/recover.js';
import { acceptSave, isIndex } from '../../wal/save-rules.js';
import { checkOpenable, never, type MemoryDisk } from './memory-disk.js';
import type { LogStore, RecoveredLogImage } from './ports.js';

function cloneImage(src: LogImage, keepEntries: boolean): LogImage {
  const img = new LogImage({ firstIndex: src.firstIndex, hardState: src.hardState, base: src.base }, keepEntries);
  for (const t of src.terms) img.terms.push(t);
  if (keepEntries && img.entries !== undefined && src.entries !== undefined)
    for (const e of src.entries) img.entries.push(e);
  return img;
}

/**
 * The WAL's contract in memory (wal/wal.ts): save, snapshot marks, compaction, recovery.
 *
 * The log follows the WAL's rules exactly, by replaying the WAL's own `LogImage` (wal/log-image.ts):
 * a run of entries truncates a conflicting suffix, a snapshot mark drops the entries it covers (or
 * the whole log when it does not match), a gap or a term going back is refused with the WAL's typed
 * errors, as is an entry or a save over the WAL's limits (WalLimitError), and `entriesAfter` throws
 * WalGapError. A snapshot mark drops the covered entries at once, so `compact` has nothing left to
 * delete (it resolves with 0 pieces, as a WAL whose only segment is the active one does).
 */
export class MemoryLogStore implements LogStore {
  readonly recovered: RecoveredLogImage;
  /** The log as accepted by save(), ahead of the disk (validation, as the WAL's `accepted`). */
  private readonly accepted: LogImage;
  private readonly generation: number;
  private readonly recoveredFirstIndex: number;
  private closed = false;

  private constructor(private readonly disk: MemoryDisk) {
    const durable = disk.durableLog();
    this.generation = disk.generation;
    this.accepted = cloneImage(durable, false);
    this.recoveredFirstIndex = durable.firstIndex;
    this.recovered = {
      hardState: durable.hardState,
      snapshot: { index: durable.base.index, term: durable.base.term },
      entries: [...(durable.entries ?? [])],
    };
  }

  /** Opens the log on `disk` as a restart would: what was durable is what it reads back. */
  static open(disk: MemoryDisk): MemoryLogStore {
    checkOpenable(disk);
    return new MemoryLogStore(disk);
  }

  private get dead(): boolean {
    return this.disk.generation !== this.generation;
  }

  entriesAfter(snapshotIndex: number): Entry[] {
    const dir = `memory:${this.disk.name}`;
    return logAfterSnapshot(this.recovered.entries, this.recoveredFirstIndex, snapshotIndex, `${dir}/wal`, dir);
  }

  save(hardState: HardState | undefined, entries: readonly Entry[]): Promise<void> {
    if (this.dead) return never();
    if (this.closed) return Promise.reject(new WalClosedError());
    if (entries.length > SAVE_ENTRIES_MAX)
      return Promise.reject(
        new WalLimitError(`a save of ${entries.length} entries exceeds SAVE_ENTRIES_MAX (${SAVE_ENTRIES_MAX})`),
      );
    if (hardState === undefined && entries.length === 0) return Promise.resolve();
    const refused = this.accept(hardState, entries);
    if (refused !== undefined) return Promise.reject(refused);
    // Entries and hard state go in one record, as the WAL writes them: durable together.
    const ops: Op[] = [];
    if (entries.length > 0) ops.push({ kind: OpKind.Entries, entries: [...entries] });
    if (hardState !== undefined) ops.push({ kind: OpKind.HardState, hardState });
    return new Promise<void>((resolve, reject) => this.disk.queueLog(ops, { resolve, reject }));
  }

  /** The WAL's own checks (wal/save-rules.ts), on the accepted image: refused exactly as the WAL refuses. */
  private accept(hardState: HardState | undefined, entries: readonly Entry[]): Error | undefined {
    return acceptSave(this.accepted, hardState, entries);
  }

  saveSnapshot(mark: { readonly index: number; readonly term: number }): Promise<void> {
    if (this.dead) return never();
    if (this.closed) return Promise.reject(new WalClosedError());
    if (!isIndex(mark.index) || !isIndex(mark.term))
      return Promise.reject(new WalInvalidSaveError('snapshot index and term must be integers in [0, 2^53-1]'));
    const base: SnapshotBase = { index: mark.index, term: mark.term };
    const rule = this.accepted.apply({ kind: OpKind.SnapshotMark, base });
    if (rule !== undefined) return Promise.reject(new WalInvalidSaveError(`saveSnapshot refused: expected ${rule}`));
    return new Promise<void>((resolve, reject) =>
      this.disk.queueLog([{ kind: OpKind.SnapshotMark, base }], { resolve, reject }),
    );
  }

  compact(snapshotIndex: number): Promise<number> {
    if (this.dead) return never();
    if (this.closed) return Promise.reject(new WalClosedError());
    if (!isIndex(snapshotIndex))
      return Promise.reject(
        new WalInvalidSaveError(`compact index must be an integer in [0, 2^53-1], found ${snapshotIndex}`),
      );
    // The mark already dropped what it covers, on disk and in the accepted image.
    this.accepted.forgetThrough(Math.min(snapshotIndex, this.accepted.base.index));
    return Promise.resolve(0);
  }

  close(): Promise<void> {
    if (this.dead) return never();
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.disk.whenFlushed();
  }
}
