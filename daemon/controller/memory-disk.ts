// MemoryDisk: one simulated controller's data directory (the durable log image and snapshot, and
// the writes waiting for the next flush) that outlives a simulated crash; the in-memory stores
// (memory-log-store.ts, memory-snapshot-store.ts) write on it. Also the dead-store helpers they share.

import type { SnapshotMeta } from '../../raft/types.js';
import type { RandomSource } from '../../raft/prng.js';
import { LogImage } from '../../wal/log-image.js';
import type { Op } from '../../wal/record.js';

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
 *
 * Durability is the simulation's to decide. A write is queued on the disk and its promise resolves
 * only when the disk is flushed (`flush()`, which the simulator calls at a scheduled "fsync" event;
 * `onPending` tells it a write waits). A crash (`crash()`) keeps what was flushed and, like a real
 * disk, possibly a prefix of what was written but not yet flushed (never acknowledged); the rest is
 * lost and its promises never settle. Stores opened before a crash are dead afterwards: whatever
 * they are asked does nothing and never settles.
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
export function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** Refuses to open a store on a disk that still holds writes of the previous incarnation. */
export function checkOpenable(disk: MemoryDisk): void {
  if (disk.pendingWrites > 0)
    throw new MemoryDiskError(
      `${disk.name}: opened while ${disk.pendingWrites} write(s) of the previous incarnation wait; crash() or flush() it first`,
    );
}
