// The behaviour every SnapshotStorePort (ports.ts) must have, as node:test tests. The LevelDB store
// (wal/snapshot-store.ts) is the reference; the simulator's MemorySnapshotStore must agree with it.
// stores.contract.test.ts runs these against both.

import assert from 'node:assert/strict';
import type { SnapshotMeta } from '../../raft/types.js';
import { SnapshotError } from '../../wal/errors.js';
import type { SnapshotStorePort } from './ports.js';
import { contractCheck, type StoreSubject } from './store-subject.contract.js';

/** One SnapshotStorePort under test, over its own empty storage. */
export type SnapshotStoreSubject = StoreSubject<SnapshotStorePort>;

export const meta = (index: number, term = 2, voters: number[] = [1, 2, 3], learners: number[] = []): SnapshotMeta => ({
  index,
  term,
  conf: { voters, learners },
});
export function bytes(n: number, salt: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let k = 0; k < n; k++) b[k] = (k * 31 + salt + (k >> 10)) & 0xff;
  return b;
}
const same = (a: Uint8Array, b: Uint8Array): boolean =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

export function snapshotStoreContract(name: string, open: () => Promise<SnapshotStoreSubject>): void {
  const check = contractCheck(name, open);

  /** The store's current snapshot is `m` with `data`, by latestMeta and by readAll. */
  async function holds(st: SnapshotStorePort, m: SnapshotMeta, data: Uint8Array): Promise<void> {
    assert.deepEqual(st.latestMeta(), m);
    const got = await st.readAll();
    assert.deepEqual(got.meta, m);
    assert.equal(got.data.byteLength, data.byteLength);
    assert.ok(same(got.data, data), 'the bytes read back differ from those saved');
  }

  check('with nothing stored, latestMeta is undefined and readAll refuses with SnapshotError', async (s) => {
    for (const st of [s.store, await s.reopen()]) {
      assert.equal(st.latestMeta(), undefined);
      await assert.rejects(st.readAll(), SnapshotError);
    }
  });

  check('a snapshot saved is read back, before and after reopening', async (s) => {
    const m = meta(10, 2);
    const data = bytes(5000, 1);
    await s.store.save(m, data);
    await holds(s.store, m, data);
    await holds(await s.reopen(), m, data);
  });

  check('a 0-byte snapshot is stored and read back', async (s) => {
    const m = meta(1, 1);
    await s.store.save(m, new Uint8Array(0));
    await holds(s.store, m, new Uint8Array(0));
    await holds(await s.reopen(), m, new Uint8Array(0));
  });

  check('a multi-MiB snapshot is stored and read back whole', async (s) => {
    const m = meta(5000, 4);
    const data = bytes(3 * 1024 * 1024 + 12_345, 7);
    await s.store.save(m, data);
    await holds(await s.reopen(), m, data);
  });

  check('a second save replaces the first once it resolves, and only then', async (s) => {
    const a = bytes(200_000, 1);
    const b = bytes(3000, 2);
    await s.store.save(meta(10, 2), a);
    const saving = s.store.save(meta(20, 3), b);
    assert.deepEqual(s.store.latestMeta(), meta(10, 2));
    await saving;
    // Nothing of the first is left: the shorter second snapshot reads back exactly.
    await holds(s.store, meta(20, 3), b);
    await holds(await s.reopen(), meta(20, 3), b);
  });

  check('meta fields round-trip: index, term, voters and learners in order', async (s) => {
    const cases: SnapshotMeta[] = [
      meta(2 ** 40 + 3, 2 ** 31 + 5, [3, 1, 2], [5, 4]),
      meta(7, 1, [], [9]),
      meta(8, 1, [2], []),
    ];
    let st = s.store;
    for (const m of cases) {
      await st.save(m, bytes(10, m.index & 0xff));
      st = await s.reopen();
      await holds(st, m, bytes(10, m.index & 0xff));
    }
  });

  check('the store keeps its own copy of the bytes', async (s) => {
    const data = bytes(4096, 3);
    const kept = data.slice();
    await s.store.save(meta(3), data);
    data.fill(0);
    const first = await s.store.readAll();
    first.data.fill(0xff);
    await holds(s.store, meta(3), kept);
  });

  check(
    'close is idempotent, a closed store refuses to save, and reopening twice gives the same snapshot',
    async (s) => {
      const data = bytes(1000, 9);
      await s.store.save(meta(12, 3), data);
      await s.store.close();
      await s.store.close();
      // Refused, though not with the same error type: LevelDB's own, or SnapshotError in memory.
      await assert.rejects(s.store.save(meta(13, 3), bytes(10, 1)));
      await holds(await s.reopen(), meta(12, 3), data);
      await holds(await s.reopen(), meta(12, 3), data);
    },
  );
}
