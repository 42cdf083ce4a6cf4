// MemoryLogStore: the WAL's contract (wal/wal.ts) in memory, on a MemoryDisk (memory-disk.ts): save,
// snapshot marks, compaction and recovery, refused and accepted exactly as the WAL does.

import type { Entry, HardState } from '../../raft/types.js';
import { WalClosedError, WalGapError, WalInvalidSaveError, WalLimitError } from '../../wal/errors.js';
import { ENTRY_DATA_BYTES_MAX, SAVE_ENTRIES_MAX } from '../../wal/limits.js';
import { LogImage } from '../../wal/log-image.js';
import { OpKind, type Op, type SnapshotBase } from '../../wal/record.js';
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
    const es = this.recovered.entries;
    if (es.length > 0 && this.recoveredFirstIndex > snapshotIndex + 1) {
      throw new WalGapError(
        `memory:${this.disk.name}/wal`,
        this.recoveredFirstIndex,
        snapshotIndex,
        `memory:${this.disk.name}`,
      );
    }
    return es.slice(Math.max(0, snapshotIndex + 1 - this.recoveredFirstIndex));
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

  /** The WAL's checks (Wal.accept / checkEntries), on the accepted image. */
  private accept(hardState: HardState | undefined, entries: readonly Entry[]): Error | undefined {
    if (hardState !== undefined) {
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
      if (rule !== undefined) return new WalInvalidSaveError(`save refused: expected ${rule}`);
    }
    if (hardState !== undefined) this.accepted.apply({ kind: OpKind.HardState, hardState });
    return undefined;
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

function isIndex(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= Number.MAX_SAFE_INTEGER;
}
