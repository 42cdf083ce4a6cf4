// The snapshot store: one LevelDB per data directory (`snap/`) holding the latest snapshot in chunks
// plus its metadata (index, term, membership, per-chunk SHA-256).
//
// Keys: `m/current` (JSON metadata of the current snapshot), `m/pending` (id of a snapshot being
// written), `m/garbage` (id of a replaced snapshot whose chunks are still being removed) and
// `c/<id:16 hex>/<chunk:10 digits>` (chunk bytes). A new snapshot's chunks go under a fresh id, so
// the current one is never touched; `commit()` switches `m/current` in one synced batch. A crash
// before that batch leaves the previous snapshot whole and current (its chunks are collected at the
// next open); a crash after it leaves the new one current. LevelDB's synced write makes every earlier
// write of its log durable too, so the chunks are on disk once the switch is.

import { createHash } from 'node:crypto';
import { Level } from 'level';
import type { SnapshotMeta } from '../raft/types.js';
import { SnapshotCorruptionError, SnapshotError, SnapshotWriteError } from './errors.js';
import { SNAPSHOT_BYTES_MAX, SNAPSHOT_CHUNK_BYTES_DEFAULT, SNAPSHOT_CHUNK_BYTES_MAX } from './limits.js';

/** What the store knows about its current snapshot. */
export interface StoredSnapshot {
  readonly meta: SnapshotMeta;
  readonly bytes: number;
  readonly chunks: number;
}

interface StoredMeta extends StoredSnapshot {
  readonly id: string;
  /** Byte length and SHA-256 (base64) of each chunk, in order. */
  readonly chunkSizes: number[];
  readonly chunkDigests: string[];
}

/** One chunk of a snapshot being read: its offset in the snapshot and whether it is the last. */
export interface SnapshotChunk {
  readonly offset: number;
  readonly data: Uint8Array;
  readonly last: boolean;
}

const KEY_CURRENT = 'm/current';
const KEY_PENDING = 'm/pending';
const KEY_GARBAGE = 'm/garbage';
const KEY_NEXT_ID = 'm/next-id';

function chunkPrefix(id: string): string {
  return `c/${id}/`;
}
function chunkKey(id: string, n: number): string {
  return `${chunkPrefix(id)}${n.toString().padStart(10, '0')}`;
}
/** The first key after every chunk key of `id` ('0' sorts right after '/'). */
function chunkRangeEnd(id: string): string {
  return `c/${id}0`;
}

type Db = Level<string, Uint8Array>;

export class SnapshotStore {
  private writing: SnapshotWriter | undefined;
  private current: StoredMeta | undefined;

  private constructor(
    private readonly db: Db,
    readonly location: string,
    private readonly dataDir: string,
    private nextId: number,
  ) {}

  /**
   * Opens (creating if needed) the store at `location`, finishing any interrupted clean-up.
   * `dataDir` is the node's data directory, named in recovery advice.
   */
  static async open(location: string, dataDir = location): Promise<SnapshotStore> {
    const db: Db = new Level<string, Uint8Array>(location, {
      keyEncoding: 'utf8',
      valueEncoding: 'view',
      // Chunks are large and usually already dense; a big memtable keeps a 200 MiB snapshot from
      // being rewritten several times by level-0 compactions while it is streamed in.
      writeBufferSize: 64 * 1024 * 1024,
      compression: false,
    });
    await db.open();
    try {
      const next = await db.get(KEY_NEXT_ID);
      const store = new SnapshotStore(db, location, dataDir, next ? Number(new TextDecoder().decode(next)) : 1);
      store.current = await store.loadCurrent();
      for (const key of [KEY_PENDING, KEY_GARBAGE]) {
        const v = await db.get(key);
        if (!v) continue;
        const id = new TextDecoder().decode(v);
        if (id !== store.current?.id) await db.clear({ gte: chunkPrefix(id), lt: chunkRangeEnd(id) });
        await db.del(key);
      }
      return store;
    } catch (e) {
      await db.close();
      throw e;
    }
  }

  private async loadCurrent(): Promise<StoredMeta | undefined> {
    const v = await this.db.get(KEY_CURRENT);
    if (!v) return undefined;
    let m: StoredMeta;
    try {
      m = JSON.parse(new TextDecoder().decode(v)) as StoredMeta;
    } catch (e) {
      throw new SnapshotCorruptionError(
        this.location,
        `its metadata (${KEY_CURRENT}) is not valid JSON: ${(e as Error).message}`,
        this.dataDir,
      );
    }
    const ok =
      typeof m.id === 'string' &&
      Number.isInteger(m.bytes) &&
      Number.isInteger(m.chunks) &&
      Array.isArray(m.chunkSizes) &&
      Array.isArray(m.chunkDigests) &&
      m.chunkSizes.length === m.chunks &&
      m.chunkDigests.length === m.chunks &&
      m.chunkSizes.reduce((a, b) => a + b, 0) === m.bytes &&
      Number.isInteger(m.meta?.index) &&
      Number.isInteger(m.meta?.term) &&
      Array.isArray(m.meta?.conf?.voters) &&
      Array.isArray(m.meta?.conf?.learners);
    if (!ok)
      throw new SnapshotCorruptionError(this.location, `its metadata (${KEY_CURRENT}) is inconsistent`, this.dataDir);
    return m;
  }

  /** The current snapshot's description, or undefined when the store holds none. */
  latest(): StoredSnapshot | undefined {
    const c = this.current;
    return c ? { meta: c.meta, bytes: c.bytes, chunks: c.chunks } : undefined;
  }

  /**
   * Starts writing a new snapshot (from the local state machine, or streamed in by a leader's
   * InstallSnapshot). Only one write at a time; the current snapshot stays current until commit().
   */
  async beginWrite(meta: SnapshotMeta): Promise<SnapshotWriter> {
    if (this.writing)
      throw new SnapshotWriteError(
        `a snapshot (index ${this.writing.meta.index}) is already being written to ${this.location}; abort or commit it first`,
      );
    const id = this.nextId.toString(16).padStart(16, '0');
    this.nextId++;
    const enc = new TextEncoder();
    // Claimed before the first await: a second beginWrite meanwhile is refused, not interleaved.
    const w = new SnapshotWriter(this, this.db, id, meta);
    this.writing = w;
    try {
      await this.db.batch(
        [
          { type: 'put', key: KEY_NEXT_ID, value: enc.encode(String(this.nextId)) },
          { type: 'put', key: KEY_PENDING, value: enc.encode(id) },
        ],
        { sync: false },
      );
    } catch (e) {
      this.writing = undefined;
      throw e;
    }
    return w;
  }

  /**
   * Writes a whole snapshot, cut into SNAPSHOT_CHUNK_BYTES_DEFAULT chunks, and makes it current.
   * With `pace`, awaits it between two chunks (a controller's own snapshot leaves the cores and the
   * disk to its log meanwhile: daemon/controller/snapshotter.ts).
   */
  async save(
    meta: SnapshotMeta,
    data: Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    pace?: () => Promise<void>,
  ): Promise<StoredSnapshot> {
    const w = await this.beginWrite(meta);
    let written = 0;
    const write = async (chunk: Uint8Array): Promise<void> => {
      if (written++ > 0 && pace !== undefined) await pace();
      await w.write(chunk);
    };
    try {
      if (data instanceof Uint8Array) {
        for (let o = 0; o < data.length; o += SNAPSHOT_CHUNK_BYTES_DEFAULT)
          await write(data.subarray(o, o + SNAPSHOT_CHUNK_BYTES_DEFAULT));
      } else {
        for await (const c of data) await write(c);
      }
      return await w.commit();
    } catch (e) {
      await w.abort().catch(() => undefined);
      throw e;
    }
  }

  /** @internal Called by SnapshotWriter. */
  async finishWrite(w: SnapshotWriter, m: StoredMeta | undefined): Promise<void> {
    this.writing = undefined;
    const enc = new TextEncoder();
    if (!m) {
      await this.db.clear({ gte: chunkPrefix(w.id), lt: chunkRangeEnd(w.id) });
      await this.db.del(KEY_PENDING);
      return;
    }
    const old = this.current;
    const batch = this.db.batch();
    batch.put(KEY_CURRENT, enc.encode(JSON.stringify(m)));
    batch.del(KEY_PENDING);
    if (old) batch.put(KEY_GARBAGE, enc.encode(old.id));
    await batch.write({ sync: true });
    this.current = m;
    if (old) {
      // Readers still streaming the old snapshot hold an iterator, which reads from a LevelDB snapshot.
      await this.db.clear({ gte: chunkPrefix(old.id), lt: chunkRangeEnd(old.id) });
      await this.db.del(KEY_GARBAGE);
    }
  }

  /**
   * Streams the current snapshot in its stored chunks, checking each chunk's presence, order, size
   * and SHA-256 before yielding it. Throws SnapshotCorruptionError naming the chunk otherwise, and
   * SnapshotError when there is no snapshot.
   */
  async *read(): AsyncGenerator<SnapshotChunk> {
    const m = this.current;
    if (!m) throw new SnapshotError(`${this.location} holds no snapshot`);
    const it = this.db.iterator({ gte: chunkPrefix(m.id), lt: chunkRangeEnd(m.id) });
    let n = 0;
    let offset = 0;
    const where = `snapshot at index ${m.meta.index} term ${m.meta.term} (id ${m.id})`;
    try {
      for await (const [key, value] of it) {
        if (n >= m.chunks)
          throw new SnapshotCorruptionError(
            this.location,
            `${where} has an unexpected extra chunk ${key} beyond its ${m.chunks} chunk(s)`,
            this.dataDir,
          );
        const want = chunkKey(m.id, n);
        if (key !== want)
          throw new SnapshotCorruptionError(
            this.location,
            `${where} is missing chunk ${n} of ${m.chunks} (key ${want}); found ${key} next`,
            this.dataDir,
          );
        if (value.length !== m.chunkSizes[n]) {
          throw new SnapshotCorruptionError(
            this.location,
            `${where}: chunk ${n} holds ${value.length} bytes, expected ${m.chunkSizes[n]}`,
            this.dataDir,
          );
        }
        const digest = createHash('sha256').update(value).digest('base64');
        if (digest !== m.chunkDigests[n]) {
          throw new SnapshotCorruptionError(
            this.location,
            `${where}: chunk ${n} (offset ${offset}) has SHA-256 ${digest}, expected ${m.chunkDigests[n]}`,
            this.dataDir,
          );
        }
        yield { offset, data: value, last: n === m.chunks - 1 };
        offset += value.length;
        n++;
      }
    } finally {
      await it.close();
    }
    if (n < m.chunks) {
      throw new SnapshotCorruptionError(
        this.location,
        `${where} is missing chunk ${n} of ${m.chunks} (key ${chunkKey(m.id, n)}) and any after it`,
        this.dataDir,
      );
    }
  }

  /** Reads the whole current snapshot into one buffer (checked as read() checks it). */
  async readAll(): Promise<{ meta: SnapshotMeta; data: Buffer }> {
    const m = this.current;
    if (!m) throw new SnapshotError(`${this.location} holds no snapshot`);
    const out = Buffer.allocUnsafe(m.bytes);
    for await (const c of this.read()) out.set(c.data, c.offset);
    return { meta: m.meta, data: out };
  }

  async close(): Promise<void> {
    if (this.writing) await this.writing.abort().catch(() => undefined);
    await this.db.close();
  }
}

/** A snapshot being written; nothing of it is visible until commit(). */
export class SnapshotWriter {
  private n = 0;
  private bytes = 0;
  private readonly sizes: number[] = [];
  private readonly digests: string[] = [];
  private done = false;

  /** @internal Created by SnapshotStore.beginWrite. */
  constructor(
    private readonly store: SnapshotStore,
    private readonly db: Db,
    readonly id: string,
    readonly meta: SnapshotMeta,
  ) {}

  get bytesWritten(): number {
    return this.bytes;
  }

  /**
   * Appends the next chunk. `offset`, when given (InstallSnapshot carries one), must equal the bytes
   * written so far: a chunk out of order is refused rather than stored in the wrong place.
   */
  async write(chunk: Uint8Array, offset?: number): Promise<void> {
    if (this.done) throw new SnapshotWriteError(`snapshot write ${this.id} is already finished`);
    if (offset !== undefined && offset !== this.bytes)
      throw new SnapshotWriteError(`snapshot chunk at offset ${offset} out of order: expected offset ${this.bytes}`);
    if (chunk.length === 0) return;
    if (chunk.length > SNAPSHOT_CHUNK_BYTES_MAX)
      throw new SnapshotWriteError(
        `snapshot chunk of ${chunk.length} B exceeds SNAPSHOT_CHUNK_BYTES_MAX (${SNAPSHOT_CHUNK_BYTES_MAX} B)`,
      );
    if (this.bytes + chunk.length > SNAPSHOT_BYTES_MAX)
      throw new SnapshotWriteError(`snapshot exceeds SNAPSHOT_BYTES_MAX (${SNAPSHOT_BYTES_MAX} B)`);
    // LevelDB copies the value into its write batch, so the caller may reuse `chunk` once this resolves.
    const copy = chunk;
    this.digests.push(createHash('sha256').update(copy).digest('base64'));
    this.sizes.push(copy.length);
    await this.db.put(chunkKey(this.id, this.n), copy, { sync: false });
    this.n++;
    this.bytes += copy.length;
  }

  /** Makes this snapshot current, durably and atomically, and frees the previous one's chunks. */
  async commit(): Promise<StoredSnapshot> {
    if (this.done) throw new SnapshotWriteError(`snapshot write ${this.id} is already finished`);
    this.done = true;
    const m: StoredMeta = {
      id: this.id,
      meta: this.meta,
      bytes: this.bytes,
      chunks: this.n,
      chunkSizes: this.sizes,
      chunkDigests: this.digests,
    };
    await this.store.finishWrite(this, m);
    return { meta: this.meta, bytes: this.bytes, chunks: this.n };
  }

  /** Drops what was written; the current snapshot is unchanged. */
  async abort(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.store.finishWrite(this, undefined);
  }
}
