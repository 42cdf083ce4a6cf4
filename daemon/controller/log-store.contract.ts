// The behaviour every LogStore (ports.ts) must have, as node:test tests. The WAL (wal/wal.ts) is the
// reference; the simulator's MemoryLogStore must agree with it. stores.contract.test.ts runs these
// against both.

import assert from 'node:assert/strict';
import type { Entry, HardState } from '../../raft/types.js';
import { WalClosedError, WalGapError, WalInvalidSaveError, WalLimitError } from '../../wal/errors.js';
import { ENTRY_DATA_BYTES_MAX } from '../../wal/limits.js';
import type { LogStore } from './ports.js';
import { contractCheck, type StoreSubject } from './store-subject.contract.js';

/** One LogStore under test, over its own empty storage. */
export type LogStoreSubject = StoreSubject<LogStore>;

export interface LogStoreContractOptions {
  /** The store keeps the log in pieces (segments) that compact() removes: expect it to remove some. */
  readonly compactRemovesPieces?: boolean;
}

export function ent(index: number, term: number, bytes = 24): Entry {
  const data = new Uint8Array(bytes);
  for (let k = 0; k < bytes; k++) data[k] = (index * 7 + term * 13 + k) & 0xff;
  return { index, term, type: 0, data };
}
export function range(from: number, to: number, term: number, bytes = 24): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(ent(i, term, bytes));
  return out;
}
export const hs = (term: number, vote: number, commit: number): HardState => ({ term, vote, commit });
/** Entries as plain values (a store may hand back Buffers or views). */
export const strip = (es: readonly Entry[]) =>
  es.map((e) => ({ index: e.index, term: e.term, type: e.type, data: [...e.data] }));

export function logStoreContract(
  name: string,
  open: () => Promise<LogStoreSubject>,
  opts: LogStoreContractOptions = {},
): void {
  const check = contractCheck(name, open);

  check('a new store recovers an empty log, and reopens the same', async (s) => {
    for (const st of [s.store, await s.reopen()]) {
      assert.deepEqual(st.recovered.hardState, hs(0, 0, 0));
      assert.deepEqual(st.recovered.snapshot, { index: 0, term: 0 });
      assert.deepEqual(st.recovered.entries, []);
      assert.deepEqual(st.entriesAfter(0), []);
    }
  });

  check('hard state and entries saved are read back after reopening', async (s) => {
    await s.store.save(hs(1, 1, 0), range(1, 5, 1));
    await s.store.save(hs(2, 1, 3), range(6, 8, 2));
    // entriesAfter gives what was durable at open, not what was saved since.
    assert.deepEqual(s.store.entriesAfter(0), []);
    const st = await s.reopen();
    const all = [...range(1, 5, 1), ...range(6, 8, 2)];
    assert.deepEqual(st.recovered.hardState, hs(2, 1, 3));
    assert.deepEqual(st.recovered.snapshot, { index: 0, term: 0 });
    assert.deepEqual(strip(st.recovered.entries), strip(all));
    assert.deepEqual(strip(st.entriesAfter(0)), strip(all));
    assert.deepEqual(strip(st.entriesAfter(5)), strip(range(6, 8, 2)));
    assert.deepEqual(st.entriesAfter(8), []);
  });

  check('a hard state saved alone (no entry) is durable', async (s) => {
    await s.store.save(hs(3, 2, 0), []);
    let st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(3, 2, 0));
    assert.deepEqual(st.recovered.entries, []);
    // A new term may carry a new vote.
    await st.save(hs(4, 0, 0), []);
    st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(4, 0, 0));
    // Nothing to save is a no-op.
    await st.save(undefined, []);
    st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(4, 0, 0));
  });

  check('a save with a gap is refused and loses nothing; the log goes on after it', async (s) => {
    await s.store.save(hs(1, 1, 0), range(1, 5, 1));
    await assert.rejects(s.store.save(hs(1, 1, 2), [ent(7, 1)]), WalInvalidSaveError);
    await assert.rejects(s.store.save(undefined, [ent(6, 1), ent(8, 1)]), WalInvalidSaveError);
    let st = await s.reopen();
    // The refused save's hard state was refused with its entries.
    assert.deepEqual(st.recovered.hardState, hs(1, 1, 0));
    assert.deepEqual(strip(st.recovered.entries), strip(range(1, 5, 1)));
    await st.save(undefined, [ent(6, 1)]);
    await assert.rejects(st.save(undefined, [ent(8, 1)]), WalInvalidSaveError);
    st = await s.reopen();
    assert.deepEqual(strip(st.recovered.entries), strip(range(1, 6, 1)));
  });

  check('hard state rules: a term never goes back, one vote per term, commit never goes back', async (s) => {
    await s.store.save(hs(2, 1, 3), range(1, 5, 2));
    await assert.rejects(s.store.save(hs(1, 1, 3), []), WalInvalidSaveError);
    await assert.rejects(s.store.save(hs(2, 3, 3), []), WalInvalidSaveError);
    await assert.rejects(s.store.save(hs(2, 1, 2), []), WalInvalidSaveError);
    const st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(2, 1, 3));
    assert.deepEqual(strip(st.recovered.entries), strip(range(1, 5, 2)));
  });

  check('entries from a new leader replace a conflicting suffix; committed entries are never replaced', async (s) => {
    await s.store.save(hs(1, 1, 2), range(1, 6, 1));
    await s.store.save(hs(2, 0, 2), range(4, 5, 2));
    await assert.rejects(s.store.save(undefined, [ent(2, 3)]), WalInvalidSaveError);
    let st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(2, 0, 2));
    assert.deepEqual(strip(st.recovered.entries), strip([...range(1, 3, 1), ...range(4, 5, 2)]));
    // The log continues after the replaced suffix.
    await st.save(undefined, [ent(6, 2)]);
    st = await s.reopen();
    assert.deepEqual(strip(st.recovered.entries), strip([...range(1, 3, 1), ...range(4, 6, 2)]));
  });

  check('an entry over ENTRY_DATA_BYTES_MAX is refused with WalLimitError, and nothing is lost', async (s) => {
    await s.store.save(hs(1, 1, 0), range(1, 2, 1));
    const big: Entry = { index: 3, term: 1, type: 0, data: new Uint8Array(ENTRY_DATA_BYTES_MAX + 1) };
    await assert.rejects(s.store.save(hs(1, 1, 1), [big]), WalLimitError);
    await s.store.save(undefined, [ent(3, 1)]);
    const st = await s.reopen();
    assert.deepEqual(st.recovered.hardState, hs(1, 1, 0));
    assert.deepEqual(strip(st.recovered.entries), strip(range(1, 3, 1)));
  });

  check('a snapshot mark drops the entries it covers; entriesAfter(mark) gives only later ones', async (s) => {
    await s.store.save(hs(1, 1, 8), range(1, 10, 1));
    await s.store.saveSnapshot({ index: 6, term: 1 });
    let st = await s.reopen();
    assert.deepEqual(st.recovered.snapshot, { index: 6, term: 1 });
    assert.deepEqual(st.recovered.hardState, hs(1, 1, 8));
    assert.deepEqual(strip(st.recovered.entries), strip(range(7, 10, 1)));
    assert.deepEqual(strip(st.entriesAfter(6)), strip(range(7, 10, 1)));
    assert.deepEqual(strip(st.entriesAfter(8)), strip(range(9, 10, 1)));
    // Entries at or below the mark, and a mark going back, are refused.
    await assert.rejects(st.save(undefined, [ent(6, 1)]), WalInvalidSaveError);
    await assert.rejects(st.saveSnapshot({ index: 5, term: 1 }), WalInvalidSaveError);
    await st.save(undefined, [ent(11, 1)]);
    st = await s.reopen();
    assert.deepEqual(st.recovered.snapshot, { index: 6, term: 1 });
    assert.deepEqual(strip(st.entriesAfter(6)), strip(range(7, 11, 1)));
  });

  check(
    'a mark beyond the last entry (a snapshot installed from the leader) replaces the log; saves go on after it',
    async (s) => {
      await s.store.save(hs(1, 1, 3), range(1, 5, 1));
      await s.store.saveSnapshot({ index: 20, term: 3 });
      await s.store.save(hs(3, 0, 20), range(21, 22, 3));
      let st = await s.reopen();
      assert.deepEqual(st.recovered.snapshot, { index: 20, term: 3 });
      assert.deepEqual(st.recovered.hardState, hs(3, 0, 20));
      assert.deepEqual(strip(st.recovered.entries), strip(range(21, 22, 3)));
      assert.deepEqual(strip(st.entriesAfter(20)), strip(range(21, 22, 3)));
      // A mark alone, with no entry after it, also lets the next save start right after it.
      await st.saveSnapshot({ index: 40, term: 4 });
      st = await s.reopen();
      assert.deepEqual(st.recovered.snapshot, { index: 40, term: 4 });
      assert.deepEqual(st.recovered.entries, []);
      assert.deepEqual(st.entriesAfter(40), []);
      await assert.rejects(st.save(undefined, [ent(42, 4)]), WalInvalidSaveError);
      await st.save(hs(4, 0, 40), [ent(41, 4)]);
      st = await s.reopen();
      assert.deepEqual(strip(st.entriesAfter(40)), strip([ent(41, 4)]));
    },
  );

  check('a mark whose term does not match the log at its index replaces the whole log', async (s) => {
    await s.store.save(hs(1, 1, 2), range(1, 6, 1));
    await s.store.saveSnapshot({ index: 4, term: 2 });
    let st = await s.reopen();
    assert.deepEqual(st.recovered.snapshot, { index: 4, term: 2 });
    assert.deepEqual(st.recovered.entries, []);
    await st.save(undefined, range(5, 6, 2));
    st = await s.reopen();
    assert.deepEqual(strip(st.entriesAfter(4)), strip(range(5, 6, 2)));
  });

  check('compact(index) after a mark keeps every entry above it', async (s) => {
    // Many small saves, so that a store in segments fills several.
    for (let i = 1; i <= 60; i += 5) await s.store.save(hs(1, 1, i - 1), range(i, i + 4, 1, 200));
    await s.store.saveSnapshot({ index: 40, term: 1 });
    const removed = await s.store.compact(40);
    assert.ok(Number.isInteger(removed) && removed >= 0, `compact resolved with ${removed}`);
    if (opts.compactRemovesPieces) assert.ok(removed > 0, 'compact removed nothing');
    await s.store.save(hs(1, 1, 60), range(61, 65, 1, 200));
    let st = await s.reopen();
    assert.deepEqual(st.recovered.snapshot, { index: 40, term: 1 });
    assert.deepEqual(st.recovered.hardState, hs(1, 1, 60));
    assert.deepEqual(strip(st.entriesAfter(40)), strip(range(41, 65, 1, 200)));
    // Compacting again at the same index removes nothing more that is needed.
    await st.compact(40);
    st = await s.reopen();
    assert.deepEqual(strip(st.entriesAfter(40)), strip(range(41, 65, 1, 200)));
  });

  check('entriesAfter throws WalGapError when entries between the snapshot and the log are missing', async (s) => {
    await s.store.save(hs(1, 1, 10), range(1, 10, 1));
    await s.store.saveSnapshot({ index: 6, term: 1 });
    const st = await s.reopen();
    assert.throws(
      () => st.entriesAfter(3),
      (e) => e instanceof WalGapError && e.firstIndex === 7 && e.snapshotIndex === 3,
    );
    assert.throws(() => st.entriesAfter(5), WalGapError);
    assert.deepEqual(strip(st.entriesAfter(6)), strip(range(7, 10, 1)));
    assert.deepEqual(st.entriesAfter(12), []);
  });

  check('entriesAfter throws WalGapError for an older snapshot even when the log holds no entry', async (s) => {
    // The mark at 10 dropped every entry: the log says it held 1..10, a snapshot at 3 lacks 4..10.
    await s.store.save(hs(1, 1, 10), range(1, 10, 1));
    await s.store.saveSnapshot({ index: 10, term: 1 });
    const st = await s.reopen();
    assert.deepEqual(st.recovered.entries, []);
    assert.throws(
      () => st.entriesAfter(3),
      (e) => e instanceof WalGapError && e.firstIndex === 11 && e.snapshotIndex === 3,
    );
    assert.deepEqual(st.entriesAfter(10), []);
  });

  check('close is idempotent, a closed store refuses writes, and reopening twice gives the same log', async (s) => {
    await s.store.save(hs(2, 1, 2), range(1, 4, 2));
    await s.store.saveSnapshot({ index: 2, term: 2 });
    await s.store.close();
    await s.store.close();
    await assert.rejects(s.store.save(hs(2, 1, 3), [ent(5, 2)]), WalClosedError);
    await assert.rejects(s.store.saveSnapshot({ index: 3, term: 2 }), WalClosedError);
    await assert.rejects(s.store.compact(2), WalClosedError);
    for (let k = 0; k < 2; k++) {
      const st = await s.reopen();
      assert.deepEqual(st.recovered.hardState, hs(2, 1, 2));
      assert.deepEqual(st.recovered.snapshot, { index: 2, term: 2 });
      assert.deepEqual(strip(st.entriesAfter(2)), strip(range(3, 4, 2)));
    }
  });
}
