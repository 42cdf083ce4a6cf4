import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Level } from 'level';
import type { SnapshotMeta } from '../raft/types.js';
import { SnapshotCorruptionError, SnapshotError, SnapshotWriteError } from './errors.js';
import { SNAPSHOT_CHUNK_BYTES_DEFAULT, SNAPSHOT_CHUNK_BYTES_MAX } from './limits.js';
import { SnapshotStore } from './snapshot-store.js';
import { tempDirsPerTest } from '../testing/temp-dirs.js';

const tempDir = tempDirsPerTest('xce-snap-', 'snap');

const meta = (index: number, term = 2): SnapshotMeta => ({ index, term, conf: { voters: [1, 2, 3], learners: [4] } });
function bytes(n: number, salt: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let k = 0; k < n; k++) b[k] = (k * 31 + salt + (k >> 10)) & 0xff;
  return b;
}
async function collect(store: SnapshotStore): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let offset = 0;
  for await (const c of store.read()) {
    assert.equal(c.offset, offset);
    offset += c.data.length;
    parts.push(Buffer.from(c.data));
  }
  return Buffer.concat(parts);
}
/** Opens the store's LevelDB directly, as a bit rot or an operator's mistake would touch it. */
async function raw(location: string): Promise<Level<string, Uint8Array>> {
  const db = new Level<string, Uint8Array>(location, { keyEncoding: 'utf8', valueEncoding: 'view' });
  await db.open();
  return db;
}
async function chunkKeys(db: Level<string, Uint8Array>): Promise<string[]> {
  return db.keys({ gte: 'c/', lt: 'c0' }).all();
}
/** How many chunks the closed store at `loc` holds. */
async function chunkCount(loc: string): Promise<number> {
  const db = await raw(loc);
  const n = (await chunkKeys(db)).length;
  await db.close();
  return n;
}
/** A store holding snapshot 30 of `chunks` full chunks, reopened after `damage` changed its database underneath. */
async function damagedStore(
  chunks: number,
  salt: number,
  damage: (db: Level<string, Uint8Array>, chunkKeys: string[]) => Promise<void>,
): Promise<SnapshotStore> {
  const loc = tempDir();
  const store = await SnapshotStore.open(loc);
  await store.save(meta(30), bytes(chunks * SNAPSHOT_CHUNK_BYTES_DEFAULT, salt));
  await store.close();
  const db = await raw(loc);
  await damage(db, await chunkKeys(db));
  await db.close();
  return SnapshotStore.open(loc);
}

test('an empty store has no snapshot, and reading it says so', async () => {
  const store = await SnapshotStore.open(tempDir());
  assert.equal(store.latest(), undefined);
  await assert.rejects(collect(store), (e) => e instanceof SnapshotError && /holds no snapshot/.test(e.message));
  await store.close();
});

test('a snapshot saved whole is read back in chunks, with its metadata, after reopening', async () => {
  const loc = tempDir();
  const data = bytes(3 * SNAPSHOT_CHUNK_BYTES_DEFAULT + 12345, 1);
  const store = await SnapshotStore.open(loc);
  const stored = await store.save(meta(100), data);
  assert.equal(stored.chunks, 4);
  assert.equal(stored.bytes, data.length);
  await store.close();
  const again = await SnapshotStore.open(loc);
  assert.deepEqual(again.latest(), { meta: meta(100), bytes: data.length, chunks: 4 });
  const chunks: number[] = [];
  for await (const c of again.read()) chunks.push(c.data.length);
  assert.deepEqual(chunks, [
    SNAPSHOT_CHUNK_BYTES_DEFAULT,
    SNAPSHOT_CHUNK_BYTES_DEFAULT,
    SNAPSHOT_CHUNK_BYTES_DEFAULT,
    12345,
  ]);
  assert.ok(Buffer.from(await collect(again)).equals(data));
  const all = await again.readAll();
  assert.deepEqual(all.meta, meta(100));
  assert.ok(all.data.equals(data));
  await again.close();
});

test('an empty snapshot (zero bytes) is stored and read back', async () => {
  const store = await SnapshotStore.open(tempDir());
  await store.save(meta(1), new Uint8Array(0));
  assert.deepEqual(store.latest(), { meta: meta(1), bytes: 0, chunks: 0 });
  assert.equal((await collect(store)).length, 0);
  await store.close();
});

test('a snapshot streamed in from a leader with offsets is written in order; a chunk out of order is refused', async () => {
  const store = await SnapshotStore.open(tempDir());
  const data = bytes(100_000, 2);
  const w = await store.beginWrite(meta(50, 3));
  await w.write(data.subarray(0, 40_000), 0);
  await assert.rejects(
    w.write(data.subarray(60_000), 60_000),
    (e) => e instanceof SnapshotWriteError && /expected offset 40000/.test(e.message),
  );
  await w.write(data.subarray(40_000, 70_000), 40_000);
  await w.write(data.subarray(70_000), 70_000);
  await assert.rejects(store.beginWrite(meta(60)), SnapshotWriteError);
  await w.commit();
  assert.ok((await collect(store)).equals(data));
  await assert.rejects(w.write(data, 100_000), SnapshotWriteError);
  await store.close();
});

test('a chunk over SNAPSHOT_CHUNK_BYTES_MAX is refused with the limit named', async () => {
  const store = await SnapshotStore.open(tempDir());
  const w = await store.beginWrite(meta(5));
  await assert.rejects(
    w.write(new Uint8Array(SNAPSHOT_CHUNK_BYTES_MAX + 1)),
    (e) => e instanceof SnapshotWriteError && /SNAPSHOT_CHUNK_BYTES_MAX/.test(e.message),
  );
  await w.abort();
  await store.close();
});

test('a new snapshot replaces the previous one, whose chunks are freed', async () => {
  const loc = tempDir();
  const store = await SnapshotStore.open(loc);
  await store.save(meta(10), bytes(2 * SNAPSHOT_CHUNK_BYTES_DEFAULT, 3));
  const second = bytes(SNAPSHOT_CHUNK_BYTES_DEFAULT + 5, 4);
  await store.save(meta(20), second);
  assert.equal(store.latest()?.meta.index, 20);
  assert.ok((await collect(store)).equals(second));
  await store.close();
  assert.equal(await chunkCount(loc), 2);
});

test('two saves started in the same turn: the second is refused, the first is stored whole', async () => {
  const store = await SnapshotStore.open(tempDir());
  const first = bytes(SNAPSHOT_CHUNK_BYTES_DEFAULT + 7, 5);
  const a = store.save(meta(30), first);
  const b = store.save(meta(31), bytes(11, 6));
  await assert.rejects(b, (e) => e instanceof SnapshotWriteError && /already being written/.test(e.message));
  await a;
  assert.equal(store.latest()?.meta.index, 30);
  assert.ok((await collect(store)).equals(first));
  await store.close();
});

test('a crash while a new snapshot is written leaves the previous one whole and current', async () => {
  const loc = tempDir();
  const first = bytes(2 * SNAPSHOT_CHUNK_BYTES_DEFAULT + 7, 5);
  const store = await SnapshotStore.open(loc);
  await store.save(meta(10), first);
  const w = await store.beginWrite(meta(20));
  await w.write(bytes(SNAPSHOT_CHUNK_BYTES_DEFAULT, 6));
  await w.write(bytes(SNAPSHOT_CHUNK_BYTES_DEFAULT, 7));
  // The process dies here: no commit, no abort. Close the database under the store's feet.
  await (store as unknown as { db: Level<string, Uint8Array> }).db.close();
  const again = await SnapshotStore.open(loc);
  assert.equal(again.latest()?.meta.index, 10);
  assert.ok((await collect(again)).equals(first));
  await again.close();
  // The half-written snapshot's chunks were collected at open.
  assert.equal(await chunkCount(loc), 3);
});

test('an aborted write leaves the current snapshot as it was and stores nothing', async () => {
  const loc = tempDir();
  const store = await SnapshotStore.open(loc);
  await store.save(meta(10), bytes(1000, 8));
  const w = await store.beginWrite(meta(20));
  await w.write(bytes(5000, 9));
  await w.abort();
  assert.equal(store.latest()?.meta.index, 10);
  await store.close();
  assert.equal(await chunkCount(loc), 1);
});

test('a snapshot whose chunk is missing is refused, naming the chunk', async () => {
  const again = await damagedStore(3, 10, (db, keys) => db.del(keys[1]!));
  await assert.rejects(collect(again), (e) => {
    assert.ok(e instanceof SnapshotCorruptionError);
    assert.match(e.message, /missing chunk 1 of 3/);
    assert.match(e.message, /index 30/);
    assert.match(e.message, /catches it up by snapshot/);
    return true;
  });
  await again.close();
});

test('a snapshot whose last chunks are missing is refused', async () => {
  const again = await damagedStore(3, 11, (db, keys) => db.del(keys[2]!));
  await assert.rejects(
    again.readAll(),
    (e) => e instanceof SnapshotCorruptionError && /missing chunk 2 of 3/.test(e.message),
  );
  await again.close();
});

test('a damaged chunk is refused by its SHA-256, naming the chunk and offset', async () => {
  const again = await damagedStore(2, 12, async (db, keys) => {
    const k = keys[1]!;
    const v = Buffer.from((await db.get(k))!);
    v[100]! ^= 0x40;
    await db.put(k, v);
  });
  await assert.rejects(
    collect(again),
    (e) =>
      e instanceof SnapshotCorruptionError &&
      new RegExp(`chunk 1 \\(offset ${SNAPSHOT_CHUNK_BYTES_DEFAULT}\\) has SHA-256`).test(e.message),
  );
  await again.close();
});

test('a reader streaming the old snapshot finishes it even when a new one is committed meanwhile', async () => {
  const store = await SnapshotStore.open(tempDir());
  const old = bytes(3 * SNAPSHOT_CHUNK_BYTES_DEFAULT, 13);
  await store.save(meta(10), old);
  const parts: Buffer[] = [];
  const it = store.read();
  const first = await it.next();
  assert.ok(!first.done);
  parts.push(Buffer.from(first.value.data));
  await store.save(meta(20), bytes(1000, 14));
  for (let r = await it.next(); !r.done; r = await it.next()) parts.push(Buffer.from(r.value.data));
  assert.ok(Buffer.concat(parts).equals(old));
  await store.close();
});
