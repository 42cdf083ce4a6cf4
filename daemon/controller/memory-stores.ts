// In-memory log and snapshot stores over a `MemoryDisk` that outlives a simulated crash: the
// deterministic simulator's stand-ins for the WAL and the LevelDB snapshot store (ports.ts).
//
// Durability is the simulation's to decide. A write is queued on the disk and its promise resolves
// only when the disk is flushed (`MemoryDisk.flush()`, which the simulator calls at a scheduled
// "fsync" event; `onPending` tells it a write waits). A crash (`MemoryDisk.crash()`) keeps what
// was flushed and, like a real disk, possibly a prefix of what was written but not yet flushed
// (never acknowledged); the rest is lost and its promises never settle. Stores opened before a
// crash are dead afterwards: whatever they are asked does nothing and never settles.
//
// The log follows the WAL's rules exactly, by replaying the WAL's own `LogImage` (wal/log-image.ts):
// a run of entries truncates a conflicting suffix, a snapshot mark drops the entries it covers (or
// the whole log when it does not match), a gap or a term going back is refused with the WAL's typed
// errors, as is an entry or a save over the WAL's limits (WalLimitError), and `entriesAfter` throws
// WalGapError. A snapshot mark drops the covered entries at once, so `compact` has nothing left to
// delete (it resolves with 0 pieces, as a WAL whose only segment is the active one does).

import type { Entry, HardState, SnapshotMeta } from '../../raft/types.js';
import type { RandomSource } from '../../raft/prng.js';
import {
  SnapshotError,
  SnapshotWriteError,
  WalClosedError,
  WalGapError,
  WalInvalidSaveError,
  WalLimitError,
} from '../../wal/errors.js';
import { ENTRY_DATA_BYTES_MAX, SAVE_ENTRIES_MAX } from '../../wal/limits.js';
import { LogImage } from '../../wal/log-image.js';
import { OpKind, type Op, type SnapshotBase } from '../../wal/record.js';
import type { LogStore, RecoveredLogImage, SnapshotStorePort } from './ports.js';

/** A disk's durable contents were found broken: a bug in these stores or in their caller. */
export class MemoryDiskError extends Error {
  override readonly name = 'MemoryDiskError';
}

interface Waiter {
  resolve(): void;
  reject(e: Error): void;
}

/** One WAL record: its ops are durable together or not at all. */
interface PendingLogRecord {
  readonly ops: readonly Op[];
  readonly waiter: Waiter;
}

interface PendingSnapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
  readonly waiter: Waiter;
}

export interface MemoryDiskOptions {
  /** A label for errors (`node 2`). */
  readonly name?: string;
  /**
   * Called when a write is queued on a disk that had nothing waiting: the simulator schedules the
   * flush (its "fsync") then. Called again for the first write after each flush.
   */
  readonly onPending?: (disk: MemoryDisk) => void;
}

/** Counters a test or the simulator reads. */
export interface MemoryDiskStats {
  flushes: number;
  crashes: number;
  /** Writes (log ops and snapshots) a crash kept although they were never acknowledged. */
  unackedKept: number;
  /** Writes a crash lost. */
  lost: number;
}

/**
 * One controller's data directory: the durable log image and the durable snapshot, plus the writes
 * waiting for the next flush. Survives `crash()`; the stores opened on it do not.
 */
export class MemoryDisk {
  readonly name: string;
  /** Bumped by every crash: stores of an older generation are dead. */
  generation = 0;
  /** What a restart reads back (durable). Entries are kept (keepEntries). */
  private log: LogImage = LogImage.empty(true);
  private snap: { readonly meta: SnapshotMeta; readonly data: Uint8Array } | undefined = undefined;
  private pendingLog: PendingLogRecord[] = [];
  private pendingSnaps: PendingSnapshot[] = [];
  private closeWaiters: Array<() => void> = [];
  readonly stats: MemoryDiskStats = { flushes: 0, crashes: 0, unackedKept: 0, lost: 0 };

  constructor(private readonly opts: MemoryDiskOptions = {}) {
    this.name = opts.name ?? 'memory disk';
  }

  /** Writes queued and not yet durable. */
  get pendingWrites(): number {
    return this.pendingLog.length + this.pendingSnaps.length;
  }

  /** The durable log's last index and snapshot mark (for traces and tests). */
  describe(): string {
    const l = this.log;
    return `log ${l.firstIndex}..${l.lastIndex} mark ${l.base.index}/t${l.base.term} hs t${l.hardState.term}/v${l.hardState.vote}/c${l.hardState.commit} snap ${this.snap?.meta.index ?? '-'}`;
  }

  /** The durable snapshot's metadata (what a restart would read). */
  durableSnapshotMeta(): SnapshotMeta | undefined {
    return this.snap?.meta;
  }

  /** Makes every queued write durable, in order, and settles their promises (as microtasks). */
  flush(): void {
    if (this.pendingWrites === 0) return;
    this.stats.flushes++;
    const log = this.pendingLog;
    const snaps = this.pendingSnaps;
    this.pendingLog = [];
    this.pendingSnaps = [];
    for (const p of log) this.applyDurable(p.ops);
    for (const s of snaps) this.snap = { meta: s.meta, data: s.data };
    for (const p of log) p.waiter.resolve();
    for (const s of snaps) s.waiter.resolve();
    const closers = this.closeWaiters;
    this.closeWaiters = [];
    for (const c of closers) c();
  }

  /**
   * Power loss. Every store opened on this disk dies. Of the writes not yet flushed, a prefix of the
   * log's and (independently) of the snapshot store's may have reached the platter, as the WAL
   * writes its records in order: `rng` draws how many (none without it). Their promises never
   * settle, nor do the lost ones'.
   */
  crash(rng?: RandomSource): void {
    this.stats.crashes++;
    this.generation++;
    const keepLog = rng === undefined || this.pendingLog.length === 0 ? 0 : rng.intBelow(this.pendingLog.length + 1);
    const keepSnaps =
      rng === undefined || this.pendingSnaps.length === 0 ? 0 : rng.intBelow(this.pendingSnaps.length + 1);
    for (let k = 0; k < keepLog; k++) this.applyDurable(this.pendingLog[k]!.ops);
    for (let k = 0; k < keepSnaps; k++)
      this.snap = { meta: this.pendingSnaps[k]!.meta, data: this.pendingSnaps[k]!.data };
    this.stats.unackedKept += keepLog + keepSnaps;
    this.stats.lost += this.pendingLog.length - keepLog + this.pendingSnaps.length - keepSnaps;
    this.pendingLog = [];
    this.pendingSnaps = [];
    this.closeWaiters = [];
  }

  private applyDurable(ops: readonly Op[]): void {
    for (const op of ops) {
      const broken = this.log.apply(op);
      // The store validated the op against its accepted image when it was queued.
      if (broken !== undefined)
        throw new MemoryDiskError(
          `${this.name}: a queued log write broke the log's rules when made durable: expected ${broken}`,
        );
    }
  }

  // ---- used by the stores ----

  /** @internal */
  durableLog(): LogImage {
    return this.log;
  }

  /** @internal */
  durableSnapshot(): { readonly meta: SnapshotMeta; readonly data: Uint8Array } | undefined {
    return this.snap;
  }

  /** @internal */
  queueLog(ops: readonly Op[], waiter: Waiter): void {
    this.notePending();
    this.pendingLog.push({ ops, waiter });
  }

  /** @internal */
  queueSnapshot(p: PendingSnapshot): void {
    this.notePending();
    this.pendingSnaps.push(p);
  }

  /** @internal Resolves once nothing waits for a flush. */
  whenFlushed(): Promise<void> {
    if (this.pendingWrites === 0) return Promise.resolve();
    return new Promise<void>((r) => this.closeWaiters.push(r));
  }

  /** @internal */
  hasPendingSnapshot(): boolean {
    return this.pendingSnaps.length > 0;
  }

  private notePending(): void {
    if (this.pendingWrites === 0) this.opts.onPending?.(this);
  }
}

/** A promise that never settles: what a dead store (one opened before a crash) answers. */
function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

function cloneImage(src: LogImage, keepEntries: boolean): LogImage {
  const img = new LogImage({ firstIndex: src.firstIndex, hardState: src.hardState, base: src.base }, keepEntries);
  for (const t of src.terms) img.terms.push(t);
  if (keepEntries && img.entries !== undefined && src.entries !== undefined)
    for (const e of src.entries) img.entries.push(e);
  return img;
}

/** The WAL's contract in memory (wal/wal.ts): save, snapshot marks, compaction, recovery. */
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
    if (disk.pendingWrites > 0)
      throw new MemoryDiskError(
        `${disk.name}: opened while ${disk.pendingWrites} write(s) of the previous incarnation wait; crash() or flush() it first`,
      );
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

/** The snapshot store's contract in memory (wal/snapshot-store.ts): one current snapshot, switched atomically. */
export class MemorySnapshotStore implements SnapshotStorePort {
  private readonly generation: number;
  private closed = false;

  private constructor(private readonly disk: MemoryDisk) {
    this.generation = disk.generation;
  }

  static open(disk: MemoryDisk): MemorySnapshotStore {
    if (disk.pendingWrites > 0)
      throw new MemoryDiskError(
        `${disk.name}: opened while ${disk.pendingWrites} write(s) of the previous incarnation wait; crash() or flush() it first`,
      );
    return new MemorySnapshotStore(disk);
  }

  private get dead(): boolean {
    return this.disk.generation !== this.generation;
  }

  latestMeta(): SnapshotMeta | undefined {
    return this.disk.durableSnapshot()?.meta;
  }

  readAll(): Promise<{ readonly meta: SnapshotMeta; readonly data: Uint8Array }> {
    if (this.dead) return never();
    if (this.closed) return Promise.reject(new SnapshotError(`memory:${this.disk.name}/snap is closed`));
    const s = this.disk.durableSnapshot();
    if (s === undefined) return Promise.reject(new SnapshotError(`memory:${this.disk.name}/snap holds no snapshot`));
    // A copy, as reading a store gives fresh bytes: nothing the caller does reaches the disk.
    return Promise.resolve({ meta: s.meta, data: s.data.slice() });
  }

  save(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    if (this.dead) return never();
    if (this.closed) return Promise.reject(new SnapshotError(`memory:${this.disk.name}/snap is closed`));
    if (this.disk.hasPendingSnapshot()) {
      return Promise.reject(
        new SnapshotWriteError(
          `a snapshot is already being written to memory:${this.disk.name}/snap; wait for it first`,
        ),
      );
    }
    const copy = data.slice();
    const frozenMeta: SnapshotMeta = {
      index: meta.index,
      term: meta.term,
      conf: { voters: [...meta.conf.voters], learners: [...meta.conf.learners] },
    };
    return new Promise<void>((resolve, reject) =>
      this.disk.queueSnapshot({ meta: frozenMeta, data: copy, waiter: { resolve, reject } }),
    );
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
