// The daemon's SnapshotStorePort: the LevelDB snapshot store under `<dataDir>/snap`
// (wal/snapshot-store.ts), whose current snapshot switches atomically on commit.

import { join } from 'node:path';
import type { SnapshotMeta } from '../../raft/types.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import type { SnapshotStorePort } from './ports.js';

export class LevelSnapshotStore implements SnapshotStorePort {
  private constructor(readonly store: SnapshotStore) {}

  static async open(dataDir: string): Promise<LevelSnapshotStore> {
    return new LevelSnapshotStore(await SnapshotStore.open(join(dataDir, 'snap'), dataDir));
  }

  latestMeta(): SnapshotMeta | undefined {
    return this.store.latest()?.meta;
  }

  async readAll(): Promise<{ readonly meta: SnapshotMeta; readonly data: Uint8Array }> {
    const { meta, data } = await this.store.readAll();
    return { meta, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }

  async save(meta: SnapshotMeta, data: Uint8Array, pace?: () => Promise<void>): Promise<void> {
    await this.store.save(meta, data, pace);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
