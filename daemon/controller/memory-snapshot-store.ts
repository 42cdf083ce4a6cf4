// MemorySnapshotStore: the snapshot store's contract (wal/snapshot-store.ts) in memory, on a
// MemoryDisk (memory-disk.ts): one current snapshot, switched atomically when the disk is flushed.

import type { SnapshotMeta } from '../../raft/types.js';
import { SnapshotError, SnapshotWriteError } from '../../wal/errors.js';
import { checkOpenable, never, type MemoryDisk } from './memory-disk.js';
import type { SnapshotStorePort } from './ports.js';

/** The snapshot store's contract in memory (wal/snapshot-store.ts): one current snapshot, switched atomically. */
export class MemorySnapshotStore implements SnapshotStorePort {
  private readonly generation: number;
  private closed = false;

  private constructor(private readonly disk: MemoryDisk) {
    this.generation = disk.generation;
  }

  static open(disk: MemoryDisk): MemorySnapshotStore {
    checkOpenable(disk);
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
