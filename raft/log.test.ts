import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RaftInvariantError } from './errors.js';
import { RaftLog } from './log.js';
import { MemoryStorage } from './storage.js';
import type { Entry } from './types.js';
import { EntryType } from './types.js';

function ents(from: number, terms: number[]): Entry[] {
  return terms.map((t, i) => ({
    index: from + i,
    term: t,
    type: EntryType.Normal,
    data: new Uint8Array([from + i, t]),
  }));
}

function logWith(terms: number[]): RaftLog {
  const s = new MemoryStorage();
  s.append(ents(1, terms));
  return new RaftLog(s, 0);
}

function termsOf(l: RaftLog): number[] {
  const out: number[] = [];
  for (let i = l.firstIndex(); i <= l.lastIndex(); i++) out.push(l.term(i)!);
  return out;
}

describe('RaftLog', () => {
  it('appends after a matching entry, truncating a conflicting suffix', () => {
    const l = logWith([1, 1, 2, 2]);
    assert.equal(l.maybeAppend(2, 1, 0, ents(3, [3, 3, 3])), 5);
    assert.deepEqual(termsOf(l), [1, 1, 3, 3, 3]);
  });

  it('refuses entries whose previous entry does not match', () => {
    const l = logWith([1, 1, 2]);
    assert.equal(l.maybeAppend(3, 1, 0, ents(4, [3])), undefined);
    assert.equal(l.maybeAppend(5, 2, 0, ents(6, [3])), undefined);
    assert.deepEqual(termsOf(l), [1, 1, 2]);
  });

  it('commits up to min(leader commit, last new entry), never backwards', () => {
    const l = logWith([1, 1, 1, 1, 1]);
    l.maybeAppend(2, 1, 10, []);
    assert.equal(l.committed, 2, 'only what the message proves matches');
    l.maybeAppend(5, 1, 4, []);
    assert.equal(l.committed, 4);
    l.maybeAppend(1, 1, 1, []);
    assert.equal(l.committed, 4);
  });

  it('a duplicate (already held) append changes nothing', () => {
    const l = logWith([1, 1, 2]);
    assert.equal(l.maybeAppend(1, 1, 0, ents(2, [1])), 2);
    assert.deepEqual(termsOf(l), [1, 1, 2], 'an old, shorter append does not truncate newer entries');
  });

  it('refuses to overwrite a committed entry (an invariant, not a recoverable error)', () => {
    const l = logWith([1, 1, 1]);
    l.commitTo(3);
    assert.throws(() => l.maybeAppend(1, 1, 3, ents(2, [2])), RaftInvariantError);
  });

  it('findConflictByTerm skips whole terms for the fast back-off', () => {
    const l = logWith([1, 1, 1, 4, 4, 5, 5, 6, 6, 6]);
    assert.deepEqual(l.findConflictByTerm(10, 3), { index: 3, term: 1 });
    assert.deepEqual(l.findConflictByTerm(10, 5), { index: 7, term: 5 });
    assert.deepEqual(l.findConflictByTerm(10, 6), { index: 10, term: 6 });
    assert.deepEqual(l.findConflictByTerm(12, 6), { index: 12, term: 0 }, 'beyond the log: no information');
  });

  it('persisting entries that were replaced meanwhile leaves the new ones unstable', () => {
    const s = new MemoryStorage();
    s.append(ents(1, [1]));
    const l = new RaftLog(s, 0);
    l.append(ents(2, [2, 2]));
    l.append(ents(3, [3]));
    l.stableTo(3, 2); // the caller persisted 3/t2, which has since been replaced by 3/t3
    assert.equal(l.unstable.entries.length, 2);
    s.append(ents(2, [2]));
    s.append(ents(3, [3]));
    l.stableTo(3, 3);
    assert.equal(l.unstable.entries.length, 0);
    assert.equal(l.lastStableIndex(), 3);
  });

  it('slices across storage and the unstable tail within a byte limit', () => {
    const l = logWith([1, 1, 1]);
    l.append(ents(4, [2, 2]));
    assert.deepEqual(
      l.slice(2, 6, Infinity)!.map((e) => e.index),
      [2, 3, 4, 5],
    );
    assert.deepEqual(
      l.slice(2, 6, 1)!.map((e) => e.index),
      [2],
      'at least one entry',
    );
    assert.deepEqual(
      l.slice(2, 6, 40)!.map((e) => e.index),
      [2, 3],
    );
  });

  it('reports compacted entries as unavailable', () => {
    const s = new MemoryStorage();
    s.append(ents(1, [1, 1, 1, 1]));
    s.compact(3);
    const l = new RaftLog(s, 0);
    assert.equal(l.firstIndex(), 4);
    assert.equal(l.term(2), undefined);
    assert.equal(l.term(3), 1, 'the snapshot boundary keeps its term');
    assert.equal(l.slice(2, 4, Infinity), undefined);
  });

  it('up-to-date comparison is by last term, then by length (§5.4.1)', () => {
    const l = logWith([1, 2, 2]);
    assert.ok(l.isUpToDate(1, 3));
    assert.ok(l.isUpToDate(3, 2));
    assert.ok(!l.isUpToDate(2, 2));
    assert.ok(!l.isUpToDate(9, 1));
  });
});
