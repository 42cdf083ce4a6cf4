// The daemon's LogStore: the WAL under `<dataDir>/wal` (wal/wal.ts). Recovery's gap check is the
// WAL's own `entriesAfterSnapshot`, so a lost segment is refused with WalGapError naming the data
// directory and the remedy, not discovered later as a hole in Raft's log.

import { join } from 'node:path';
import type { Entry, HardState } from '../../raft/types.js';
import { Wal, entriesAfterSnapshot, type RecoveredLog, type WalLogger } from '../../wal/wal.js';
import { WalFailedError } from '../../wal/errors.js';
import { WAL_PREALLOCATE_BYTES_DAEMON } from '../../wal/limits.js';
import type { LogStore, RecoveredLogImage } from './ports.js';

export interface WalLogStoreOptions {
  readonly dataDir: string;
  readonly logger: WalLogger;
  readonly segmentBytes?: number;
  /** Zero-filled space kept past the last record (WalOptions.preallocateBytes; default WAL_PREALLOCATE_BYTES_DAEMON). */
  readonly preallocateBytes?: number;
  /**
   * Fault injection (tests, `xcectld --fault-wal-fail-after`): asked before each save; true makes
   * that save fail as a failed fdatasync does, and the store refuses everything after (the WAL's
   * own fail-stop, wal/errors.ts WalFailedError).
   */
  readonly failSave?: () => boolean;
}

export class WalLogStore implements LogStore {
  readonly recovered: RecoveredLogImage;
  private injected: WalFailedError | null = null;

  private constructor(
    readonly wal: Wal,
    private readonly walRecovered: RecoveredLog,
    private readonly o: WalLogStoreOptions,
  ) {
    this.recovered = walRecovered;
  }

  static async open(o: WalLogStoreOptions): Promise<WalLogStore> {
    const { wal, recovered } = await Wal.open(join(o.dataDir, 'wal'), {
      logger: o.logger,
      dataDir: o.dataDir,
      preallocateBytes: o.preallocateBytes ?? WAL_PREALLOCATE_BYTES_DAEMON,
      ...(o.segmentBytes !== undefined ? { segmentBytes: o.segmentBytes } : {}),
    });
    return new WalLogStore(wal, recovered, o);
  }

  entriesAfter(snapshotIndex: number): Entry[] {
    return entriesAfterSnapshot(this.wal.dir, this.walRecovered, snapshotIndex, this.o.dataDir);
  }

  save(hardState: HardState | undefined, entries: readonly Entry[], startNow = false): Promise<void> {
    if (this.injected === null && this.o.failSave?.() === true) {
      const active = this.wal.segmentFiles().at(-1) ?? this.wal.dir;
      this.injected = new WalFailedError(
        active,
        new Error('EIO: input/output error (injected fault: fdatasync failed)'),
      );
      this.o.logger.warn(this.injected.message);
    }
    if (this.injected !== null) return Promise.reject(this.injected);
    return this.wal.save(hardState, entries, startNow);
  }

  saveSnapshot(mark: { readonly index: number; readonly term: number }): Promise<void> {
    if (this.injected !== null) return Promise.reject(this.injected);
    return this.wal.saveSnapshot(mark);
  }

  compact(snapshotIndex: number): Promise<number> {
    if (this.injected !== null) return Promise.reject(this.injected);
    return this.wal.compact(snapshotIndex);
  }

  close(): Promise<void> {
    return this.wal.close();
  }
}
