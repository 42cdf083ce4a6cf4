import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LogCompactedError, LogUnavailableError, SnapshotOutOfDateError } from './errors.js';
import { MemoryStorage } from './storage.js';
import { EntryType } from './types.js';

const e = (index: number, term: number) => ({ index, term, type: EntryType.Normal, data: new Uint8Array(0) });

describe('MemoryStorage', () => {
  it('appends, truncates a conflicting suffix, and answers terms', () => {
    const s = new MemoryStorage();
    s.append([e(1, 1), e(2, 1), e(3, 1)]);
    s.append([e(2, 2)]);
    assert.equal(s.lastIndex(), 2);
    assert.equal(s.term(2), 2);
    assert.throws(() => s.term(3), LogUnavailableError);
  });

  it("compacts below an index and keeps that index's term as the boundary", () => {
    const s = new MemoryStorage();
    s.append([e(1, 1), e(2, 1), e(3, 2), e(4, 2)]);
    s.compact(3);
    assert.equal(s.firstIndex(), 4);
    assert.equal(s.term(3), 2);
    assert.throws(() => s.term(2), LogCompactedError);
    assert.throws(() => s.entries(3, 5, Infinity), LogCompactedError);
    assert.deepEqual(
      s.entries(4, 5, Infinity).map((x) => x.index),
      [4],
    );
  });

  it('creates a snapshot at an applied index and refuses older ones', () => {
    const s = MemoryStorage.bootstrap({ voters: [1, 2, 3], learners: [] });
    s.append([e(2, 1), e(3, 1)]);
    const snap = s.createSnapshot(3, { voters: [1, 2], learners: [] }, new Uint8Array([7]));
    assert.deepEqual(snap.meta, { index: 3, term: 1, conf: { voters: [1, 2], learners: [] } });
    assert.throws(() => s.createSnapshot(2, { voters: [1], learners: [] }, new Uint8Array(0)), SnapshotOutOfDateError);
    assert.throws(
      () =>
        s.applySnapshot({ meta: { index: 2, term: 1, conf: { voters: [1], learners: [] } }, data: new Uint8Array(0) }),
      SnapshotOutOfDateError,
    );
  });

  it('applying a received snapshot replaces the whole log', () => {
    const s = new MemoryStorage();
    s.append([e(1, 1), e(2, 1)]);
    s.applySnapshot({ meta: { index: 10, term: 3, conf: { voters: [1], learners: [] } }, data: new Uint8Array(0) });
    assert.equal(s.firstIndex(), 11);
    assert.equal(s.lastIndex(), 10);
    assert.equal(s.term(10), 3);
    assert.deepEqual(s.initialState().conf.voters, [1]);
  });

  it('skips appended entries that are already compacted', () => {
    const s = new MemoryStorage();
    s.append([e(1, 1), e(2, 1), e(3, 1)]);
    s.compact(2);
    s.append([e(1, 1), e(2, 1), e(3, 1), e(4, 1)]);
    assert.equal(s.firstIndex(), 3);
    assert.equal(s.lastIndex(), 4);
  });
});
