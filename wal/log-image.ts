// The log as the records describe it, replayed op by op: the snapshot base, the hard state and the
// terms (and, during recovery, the entries) from the first index on. The same rules serve recovery,
// where a broken rule means corruption, and save(), where it means a caller bug.

import type { Entry, HardState } from '../raft/types.js';
import { EMPTY_HARD_STATE } from '../raft/types.js';
import { type Op, type SegmentHeader, type SnapshotBase, OpKind } from './record.js';

export class LogImage {
  base: SnapshotBase;
  hardState: HardState;
  /** Index of terms[0] (and entries[0]); lastIndex + 1 when the log holds no entry. */
  firstIndex: number;
  readonly terms: number[] = [];
  /** Kept only while recovering: the entries themselves. */
  readonly entries: Entry[] | undefined;

  constructor(header: Pick<SegmentHeader, 'firstIndex' | 'hardState' | 'base'>, keepEntries: boolean) {
    this.base = header.base;
    this.hardState = header.hardState;
    this.firstIndex = header.firstIndex;
    this.entries = keepEntries ? [] : undefined;
  }

  static empty(keepEntries: boolean): LogImage {
    return new LogImage({ firstIndex: 1, hardState: EMPTY_HARD_STATE, base: { index: 0, term: 0 } }, keepEntries);
  }

  get lastIndex(): number {
    return this.firstIndex + this.terms.length - 1;
  }

  /** The term of entry `i`, the base's term at the base index, or undefined when unknown. */
  termAt(i: number): number | undefined {
    if (i >= this.firstIndex && i <= this.lastIndex) return this.terms[i - this.firstIndex];
    if (i === this.base.index) return this.base.term;
    return undefined;
  }

  /**
   * Drops the terms (and entries) at or below `index`, which a durable snapshot covers; the log's
   * last index is unchanged. Used to keep the WAL's accepted image as small as the log.
   */
  forgetThrough(index: number): void {
    const drop = Math.min(index + 1 - this.firstIndex, this.terms.length);
    if (drop <= 0) return;
    this.terms.splice(0, drop);
    this.entries?.splice(0, drop);
    this.firstIndex += drop;
  }

  /** Applies one op; returns a description of the broken rule, or undefined. */
  apply(op: Op): string | undefined {
    switch (op.kind) {
      case OpKind.HardState:
        return this.applyHardState(op.hardState);
      case OpKind.SnapshotMark:
        return this.applyMark(op.base);
      case OpKind.Entries:
        return this.applyEntries(op.entries);
    }
  }

  private applyHardState(hs: HardState): string | undefined {
    if (hs.term < this.hardState.term)
      return `hard state term ${hs.term} below the previous term ${this.hardState.term}`;
    if (hs.commit < this.hardState.commit)
      return `hard state commit ${hs.commit} below the previous commit ${this.hardState.commit}`;
    this.hardState = hs;
    return undefined;
  }

  private applyMark(mark: SnapshotBase): string | undefined {
    if (mark.index < this.base.index)
      return `snapshot mark at index ${mark.index} below the current snapshot index ${this.base.index}`;
    const t = this.termAt(mark.index);
    if (t === mark.term && mark.index >= this.firstIndex - 1) {
      // The log continues past the snapshot: keep the suffix (Raft paper §7, "retain log entries following it").
      const drop = mark.index + 1 - this.firstIndex;
      this.terms.splice(0, drop);
      this.entries?.splice(0, drop);
      this.firstIndex = mark.index + 1;
    } else if (mark.index >= this.firstIndex - 1) {
      // The snapshot replaces the whole log (a follower installing a leader's snapshot).
      this.terms.length = 0;
      if (this.entries) this.entries.length = 0;
      this.firstIndex = mark.index + 1;
    }
    // A mark below firstIndex - 1 (older segments already compacted away) leaves the entries as they are.
    this.base = mark;
    return undefined;
  }

  private applyEntries(es: readonly Entry[]): string | undefined {
    const first = es[0]!.index;
    for (let k = 0; k < es.length; k++) {
      const e = es[k]!;
      if (e.index !== first + k)
        return `entry ${first + k} at position ${k} of a run starting at ${first}, found index ${e.index}`;
      if (k > 0 && e.term < es[k - 1]!.term)
        return `entry ${e.index} term ${e.term} below the previous entry's term ${es[k - 1]!.term}`;
    }
    if (first > this.lastIndex + 1)
      return `entries to continue at index ${this.lastIndex + 1}, found a run starting at ${first} (a gap)`;
    if (first <= this.base.index)
      return `entries after the snapshot index ${this.base.index}, found a run starting at ${first}`;
    const prevTerm = this.termAt(first - 1);
    if (prevTerm !== undefined && es[0]!.term < prevTerm)
      return `entry ${first} term ≥ ${prevTerm} (the term of entry ${first - 1}), found term ${es[0]!.term}`;
    if (first < this.firstIndex) {
      // Truncation reaching before the first entry still held (older segments compacted away).
      this.terms.length = 0;
      if (this.entries) this.entries.length = 0;
      this.firstIndex = first;
    } else if (first <= this.lastIndex) {
      this.terms.length = first - this.firstIndex;
      if (this.entries) this.entries.length = first - this.firstIndex;
    }
    for (const e of es) this.terms.push(e.term);
    if (this.entries) for (const e of es) this.entries.push(e);
    return undefined;
  }
}
