// The log and snapshot store contracts, run against the daemon's stores (the WAL and LevelDB, in a
// fresh directory under the OS temp dir) and against the simulator's in-memory ones. Then what only
// the memory stores model: a crash before a flush.

import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RandomSource } from '../../raft/prng.js';
import { SEGMENT_BYTES_MIN, SNAPSHOT_CHUNK_BYTES_DEFAULT, WAL_PREALLOCATE_BYTES_DAEMON } from '../../wal/limits.js';
import type { WalLogger } from '../../wal/wal.js';
import { LevelSnapshotStore } from './level-snapshot-store.js';
import { ent, hs, logStoreContract, range, strip } from './log-store.contract.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import type { LogStore, SnapshotStorePort } from './ports.js';
import { bytes, meta, snapshotStoreContract } from './snapshot-store.contract.js';
import { WalLogStore } from './wal-log-store.js';

const quiet: WalLogger = { info: () => undefined, warn: () => undefined };

/** A store over storage that `openStore` reopens; the last one opened is closed by reopen and cleanup. */
async function subject<S extends { close(): Promise<void> }>(
  openStore: () => Promise<S>,
  removeStorage: () => Promise<void>,
) {
  let current = await openStore();
  return {
    store: current,
    async reopen(): Promise<S> {
      await current.close();
      current = await openStore();
      return current;
    },
    async cleanup(): Promise<void> {
      await current.close();
      await removeStorage();
    },
  };
}

async function tempDataDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'xce-stores-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A disk whose writes become durable right after they are queued (an fsync every turn). */
function flushingDisk(name: string): MemoryDisk {
  return new MemoryDisk({ name, onPending: (d) => queueMicrotask(() => d.flush()) });
}

/** A store on a flushing memory disk; a reopen first flushes what the last one queued. */
function memorySubject<S extends { close(): Promise<void> }>(name: string, openStore: (disk: MemoryDisk) => S) {
  const disk = flushingDisk(name);
  return subject<S>(
    async () => {
      disk.flush();
      return openStore(disk);
    },
    async () => undefined,
  );
}

// Tiny segments, so that compaction has whole segments to remove.
logStoreContract(
  'WalLogStore',
  async () => {
    const { dir, remove } = await tempDataDir();
    return subject<LogStore>(
      () => WalLogStore.open({ dataDir: dir, logger: quiet, segmentBytes: SEGMENT_BYTES_MIN }),
      remove,
    );
  },
  { compactRemovesPieces: true },
);

logStoreContract('MemoryLogStore', () => memorySubject('log contract', (d) => MemoryLogStore.open(d)));

snapshotStoreContract('LevelSnapshotStore', async () => {
  const { dir, remove } = await tempDataDir();
  return subject<SnapshotStorePort>(() => LevelSnapshotStore.open(dir), remove);
});

snapshotStoreContract('MemorySnapshotStore', () =>
  memorySubject('snapshot contract', (d) => MemorySnapshotStore.open(d)),
);

/** Keeps the first `n` of the writes a crash finds unflushed. */
const keep = (n: number): RandomSource => ({ intBelow: (bound) => Math.min(n, bound - 1) });

test('MemoryLogStore: a crash before a flush loses only the unflushed writes', async () => {
  const disk = new MemoryDisk({ name: 'crash' });
  const log = MemoryLogStore.open(disk);
  const first = log.save(hs(1, 1, 0), range(1, 3, 1));
  assert.equal(disk.pendingWrites, 1);
  disk.flush();
  await first;
  void log.save(hs(1, 1, 2), range(4, 5, 1));
  void log.saveSnapshot({ index: 3, term: 1 });
  disk.crash();
  assert.equal(disk.stats.lost, 2);
  const after = MemoryLogStore.open(disk);
  assert.deepEqual(after.recovered.hardState, hs(1, 1, 0));
  assert.deepEqual(after.recovered.snapshot, { index: 0, term: 0 });
  assert.deepEqual(strip(after.entriesAfter(0)), strip(range(1, 3, 1)));
});

test('MemoryLogStore: a crash may keep a prefix of the unflushed writes, in order, never a later one alone', async () => {
  const disk = new MemoryDisk({ name: 'crash prefix' });
  const log = MemoryLogStore.open(disk);
  void log.save(hs(1, 1, 0), [ent(1, 1)]);
  void log.save(hs(1, 1, 1), [ent(2, 1)]);
  void log.save(hs(1, 1, 2), [ent(3, 1)]);
  disk.crash(keep(2));
  assert.equal(disk.stats.unackedKept, 2);
  assert.equal(disk.stats.lost, 1);
  const after = MemoryLogStore.open(disk);
  assert.deepEqual(after.recovered.hardState, hs(1, 1, 1));
  assert.deepEqual(strip(after.entriesAfter(0)), strip(range(1, 2, 1)));
  // The store opened before the crash is dead: what it is asked never reaches the disk.
  void log.save(undefined, [ent(3, 1)]);
  assert.equal(disk.pendingWrites, 0);
});

test('MemorySnapshotStore: a crash before a flush keeps the previous snapshot whole and current', async () => {
  const disk = new MemoryDisk({ name: 'crash snap' });
  const snaps = MemorySnapshotStore.open(disk);
  const a = bytes(3000, 1);
  const saved = snaps.save(meta(10, 2), a);
  disk.flush();
  await saved;
  void snaps.save(meta(20, 3), bytes(100, 2));
  // Until flushed, the new snapshot is not current.
  assert.deepEqual(snaps.latestMeta(), meta(10, 2));
  disk.crash();
  assert.equal(disk.stats.lost, 1);
  const after = MemorySnapshotStore.open(disk);
  assert.deepEqual(after.latestMeta(), meta(10, 2));
  const got = await after.readAll();
  assert.deepEqual(got.meta, meta(10, 2));
  assert.ok(Buffer.from(got.data).equals(Buffer.from(a)));
});

test("the controller's WAL writes zeros ahead of its records (WAL_PREALLOCATE_BYTES_DAEMON) and reads them as the end", async () => {
  const { dir, remove } = await tempDataDir();
  try {
    const first = await WalLogStore.open({ dataDir: dir, logger: quiet });
    for (let i = 1; i <= 10; i++) await first.save(hs(1, 1, i - 1), range(i, i, 1));
    await first.close();
    const segments = (await readdir(join(dir, 'wal'))).filter((n) => n.endsWith('.wal'));
    assert.equal(segments.length, 1);
    const size = (await stat(join(dir, 'wal', segments[0]!))).size;
    assert.ok(size >= WAL_PREALLOCATE_BYTES_DAEMON, `segment of ${size} B`);
    const again = await WalLogStore.open({ dataDir: dir, logger: quiet });
    assert.deepEqual(strip(again.entriesAfter(0)), strip(range(1, 10, 1)));
    assert.equal(again.recovered.tornTail, undefined);
    assert.equal(again.recovered.hardState.commit, 9);
    await again.close();
  } finally {
    await remove();
  }
});

test('LevelSnapshotStore: a paced save awaits the pace between its chunks, and stores the same bytes', async () => {
  const { dir, remove } = await tempDataDir();
  const store = await LevelSnapshotStore.open(dir);
  try {
    const data = bytes(2 * SNAPSHOT_CHUNK_BYTES_DEFAULT + 12_345, 7);
    let paces = 0;
    await store.save(meta(40), data, async () => {
      paces++;
      await new Promise((r) => setTimeout(r, 1));
    });
    assert.equal(paces, 2, 'three chunks, a pace between each two');
    const back = await store.readAll();
    assert.deepEqual(back.meta, meta(40));
    assert.ok(Buffer.from(back.data).equals(Buffer.from(data)), 'the bytes read back are those saved');
  } finally {
    await store.close();
    await remove();
  }
});
