// The Raft log as the core sees it: the caller's stable `Storage` plus an unstable tail of entries
// (and possibly a snapshot) that the core accepted but the caller has not yet persisted.
// Indexes: committed <= lastIndex, applied <= committed (asserted).
import { LogCompactedError, LogUnavailableError, assert } from './errors.js';
import type { Storage } from './storage.js';
import { limitBytes } from './storage.js';
import type { Entry, Snapshot } from './types.js';

/** Entries (and a snapshot) not yet persisted. `entries[i]` has index `offset + i`. */
export class Unstable {
  snapshot: Snapshot | undefined = undefined;
  entries: Entry[] = [];
  constructor(public offset: number) {}

  maybeFirstIndex(): number | undefined {
    return this.snapshot === undefined ? undefined : this.snapshot.meta.index + 1;
  }

  maybeLastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot === undefined ? undefined : this.snapshot.meta.index;
  }

  maybeTerm(i: number): number | undefined {
    if (i < this.offset) {
      if (this.snapshot !== undefined && this.snapshot.meta.index === i) return this.snapshot.meta.term;
      return undefined;
    }
    const k = i - this.offset;
    if (k >= this.entries.length) return undefined;
    return this.entries[k]!.term;
  }

  /** The caller persisted entries up to (i, t): drop them from the tail, unless they were
   * replaced meanwhile (then the term no longer matches and nothing is dropped). */
  stableTo(i: number, t: number): void {
    if (i < this.offset) return;
    if (this.maybeTerm(i) !== t) return;
    this.entries = this.entries.slice(i + 1 - this.offset);
    this.offset = i + 1;
  }

  stableSnapTo(i: number): void {
    if (this.snapshot !== undefined && this.snapshot.meta.index === i) this.snapshot = undefined;
  }

  restore(s: Snapshot): void {
    this.offset = s.meta.index + 1;
    this.entries = [];
    this.snapshot = s;
  }

  truncateAndAppend(ents: readonly Entry[]): void {
    const first = ents[0]!.index;
    if (first === this.offset + this.entries.length) {
      for (const e of ents) this.entries.push(e);
    } else if (first <= this.offset) {
      // Replace the whole tail; the log before `first` lives in storage.
      this.offset = first;
      this.entries = ents.slice();
    } else {
      this.entries = this.entries.slice(0, first - this.offset);
      for (const e of ents) this.entries.push(e);
    }
  }

  slice(lo: number, hi: number): Entry[] {
    assert(lo >= this.offset && hi <= this.offset + this.entries.length && lo <= hi, 'unstable.slice in bounds');
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}

export class RaftLog {
  readonly unstable: Unstable;
  /** Highest index known to be committed (durable on a quorum). */
  committed: number;
  /** Highest index the caller has applied (acknowledged through advance()). */
  applied: number;

  constructor(
    readonly storage: Storage,
    applied: number,
  ) {
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.unstable = new Unstable(last + 1);
    this.committed = first - 1;
    this.applied = first - 1;
    if (applied > this.applied) this.applied = applied;
  }

  firstIndex(): number {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  /** Term at index `i`, or undefined when it is compacted or beyond the last index. */
  term(i: number): number | undefined {
    const u = this.unstable.maybeTerm(i);
    if (u !== undefined) return u;
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return undefined;
    try {
      return this.storage.term(i);
    } catch (e) {
      if (e instanceof LogCompactedError || e instanceof LogUnavailableError) return undefined;
      throw e;
    }
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    assert(t !== undefined, 'the last entry of the log has a term');
    return t;
  }

  matchTerm(i: number, t: number): boolean {
    return this.term(i) === t;
  }

  /** Raft §5.4.1: a candidate's log is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Follower side of AppendEntries: when our entry at `index` has term `logTerm`, append `ents`
   * after it (truncating a conflicting suffix) and advance commit to min(commit, last new index).
   * Returns the last index of the appended range, or undefined when the log does not match.
   */
  maybeAppend(index: number, logTerm: number, commit: number, ents: readonly Entry[]): number | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = index + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      // Raft §5.3: a committed entry is never overwritten; a leader sending one would be a bug.
      assert(ci > this.committed, 'an append never conflicts with a committed entry');
      this.append(ents.slice(ci - (index + 1)));
    }
    this.commitTo(Math.min(commit, lastNew));
    return lastNew;
  }

  /** First index in `ents` whose term differs from ours (or that we lack), 0 when all match. */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `term` (or the first unknown index below).
   * Used for fast back-off: the follower hints where its log may match, and the leader skips
   * whole terms instead of probing one entry at a time.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    if (index > this.lastIndex()) return { index, term: 0 };
    for (;;) {
      const t = this.term(index);
      if (t === undefined) return { index, term: 0 };
      if (t <= term) return { index, term: t };
      index--;
    }
  }

  append(ents: readonly Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = ents[0]!.index - 1;
    assert(after >= this.committed, 'never truncate below the commit index');
    assert(after <= this.lastIndex(), 'appended entries leave no gap');
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /** Entries in [lo, hi) within `maxBytes` (at least one), or undefined when lo is compacted. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] | undefined {
    if (lo >= hi) return [];
    if (lo < this.firstIndex()) return undefined;
    assert(hi <= this.lastIndex() + 1, 'log.slice within the last index');
    const off = this.unstable.offset;
    let out: Entry[] = [];
    if (lo < off) {
      try {
        out = this.storage.entries(lo, Math.min(hi, off), maxBytes);
      } catch (e) {
        if (e instanceof LogCompactedError) return undefined;
        throw e;
      }
      // Storage cut the range short because of the byte limit: done.
      if (out.length < Math.min(hi, off) - lo) return out;
    }
    if (hi > off) {
      const u = this.unstable.slice(Math.max(lo, off), hi);
      out = out.length > 0 ? out.concat(u) : u;
    }
    return limitBytes(out, maxBytes);
  }

  entriesFrom(lo: number, maxBytes: number): Entry[] | undefined {
    return this.slice(lo, this.lastIndex() + 1, maxBytes);
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  /** Committed entries not yet applied, within `maxBytes`. */
  nextCommittedEntries(maxBytes: number): Entry[] {
    const lo = Math.max(this.applied + 1, this.firstIndex());
    if (this.committed + 1 <= lo) return [];
    const ents = this.slice(lo, this.committed + 1, maxBytes);
    assert(ents !== undefined, 'committed entries above applied are never compacted');
    return ents;
  }

  commitTo(c: number): void {
    if (c <= this.committed) return; // never decreases
    assert(c <= this.lastIndex(), 'commit index within the log');
    this.committed = c;
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    assert(i <= this.committed && i >= this.applied, 'applied moves forward and stays <= committed');
    this.applied = i;
  }

  stableTo(i: number, t: number): void {
    this.unstable.stableTo(i, t);
  }

  stableSnapTo(i: number): void {
    this.unstable.stableSnapTo(i);
  }

  /** Highest index certainly persisted by the caller (0 while a snapshot is still unstable). */
  lastStableIndex(): number {
    if (this.unstable.snapshot !== undefined) return 0;
    if (this.unstable.entries.length > 0) return this.unstable.offset - 1;
    return this.lastIndex();
  }

  restore(s: Snapshot): void {
    this.committed = s.meta.index;
    this.unstable.restore(s);
  }

  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }
}
