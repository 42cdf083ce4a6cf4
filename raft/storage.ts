// The seam between the core and durable state. The core only READS storage; the caller writes it
// (after persisting a Ready to the WAL it appends the same entries here). `MemoryStorage` is the
// pure in-memory implementation the daemon fills from the WAL at start.
import { LogCompactedError, LogUnavailableError, SnapshotOutOfDateError, assert } from './errors.js';
import type { ConfState, Entry, HardState, Snapshot } from './types.js';
import { EMPTY_CONF_STATE, EMPTY_HARD_STATE, EntryType } from './types.js';

export interface InitialState {
  readonly hardState: HardState;
  readonly conf: ConfState;
}

export interface Storage {
  /** The persisted hard state and the membership of the latest snapshot (conf changes in the log
   * after it are re-applied by the caller as it re-applies those entries). */
  initialState(): InitialState;
  /** Entries in [lo, hi), at most `maxBytes` of payload but always at least one.
   * Throws LogCompactedError when lo < firstIndex(), LogUnavailableError when hi > lastIndex()+1. */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  /** Term of the entry at `index`, for firstIndex()-1 <= index <= lastIndex() (the entry before the
   * first is the snapshot's). Throws LogCompactedError / LogUnavailableError outside. */
  term(index: number): number;
  /** Index of the first entry still available (the snapshot's index + 1). */
  firstIndex(): number;
  lastIndex(): number;
  /** The latest snapshot. May throw SnapshotTemporarilyUnavailableError. */
  snapshot(): Snapshot;
}

/** Payload bytes of an entry as counted by every byte limit in the core. */
export function entryBytes(e: Entry): number {
  return e.data.byteLength + 16;
}

/** Takes entries from the front until `maxBytes` would be exceeded (the first always stays). */
export function limitBytes(ents: Entry[], maxBytes: number): Entry[] {
  if (ents.length <= 1) return ents;
  let size = entryBytes(ents[0]!);
  for (let i = 1; i < ents.length; i++) {
    size += entryBytes(ents[i]!);
    if (size > maxBytes) return ents.slice(0, i);
  }
  return ents;
}

const EMPTY_DATA = new Uint8Array(0);

/**
 * In-memory storage. `ents[0]` is a dummy entry holding the snapshot's index and term, so
 * `ents[i]` has index `ents[0].index + i`.
 */
export class MemoryStorage implements Storage {
  private hardState: HardState = EMPTY_HARD_STATE;
  private snap: Snapshot = { meta: { index: 0, term: 0, conf: EMPTY_CONF_STATE }, data: EMPTY_DATA };
  private ents: Entry[] = [{ index: 0, term: 0, type: EntryType.Normal, data: EMPTY_DATA }];

  /** Storage for a brand-new cluster member whose membership is `conf` (bootstrap): a snapshot at
   * index 1, term 1 holding only the membership, so every node starts from the same first entry and
   * a node added later (which starts empty) is caught up with a snapshot. */
  static bootstrap(conf: ConfState, data: Uint8Array = EMPTY_DATA): MemoryStorage {
    const s = new MemoryStorage();
    s.applySnapshot({ meta: { index: 1, term: 1, conf }, data });
    s.setHardState({ term: 1, vote: 0, commit: 1 });
    return s;
  }

  initialState(): InitialState {
    return { hardState: this.hardState, conf: this.snap.meta.conf };
  }

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  getHardState(): HardState {
    return this.hardState;
  }

  private offset(): number {
    return this.ents[0]!.index;
  }

  firstIndex(): number {
    return this.offset() + 1;
  }

  lastIndex(): number {
    return this.offset() + this.ents.length - 1;
  }

  term(index: number): number {
    const off = this.offset();
    if (index < off) throw new LogCompactedError(index, off + 1);
    if (index - off >= this.ents.length) throw new LogUnavailableError(index, this.lastIndex());
    return this.ents[index - off]!.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const off = this.offset();
    if (lo <= off) throw new LogCompactedError(lo, off + 1);
    if (hi > this.lastIndex() + 1) throw new LogUnavailableError(hi - 1, this.lastIndex());
    assert(lo <= hi, 'storage.entries: lo <= hi');
    return limitBytes(this.ents.slice(lo - off, hi - off), maxBytes);
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /** Replaces the whole content with a received snapshot (after the caller persisted it). */
  applySnapshot(snap: Snapshot): void {
    if (snap.meta.index < this.snap.meta.index) throw new SnapshotOutOfDateError(snap.meta.index, this.snap.meta.index);
    this.snap = snap;
    this.ents = [{ index: snap.meta.index, term: snap.meta.term, type: EntryType.Normal, data: EMPTY_DATA }];
  }

  /** Records a snapshot the caller took of its own state machine at `index` (<= applied) with the
   * membership in force at that index. Does not drop entries: call compact() for that. */
  createSnapshot(index: number, conf: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.snap.meta.index) throw new SnapshotOutOfDateError(index, this.snap.meta.index);
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    this.snap = { meta: { index, term: this.term(index), conf }, data };
    return this.snap;
  }

  /** Drops every entry before `index` (which becomes the dummy entry). The caller compacts only
   * at or below its snapshot and applied index. */
  compact(index: number): void {
    const off = this.offset();
    if (index <= off) throw new LogCompactedError(index, off + 1);
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    const i = index - off;
    const dummy = this.ents[i]!;
    const rest = this.ents.slice(i + 1);
    this.ents = [{ index: dummy.index, term: dummy.term, type: EntryType.Normal, data: EMPTY_DATA }, ...rest];
  }

  /** Appends persisted entries, truncating a conflicting suffix first. Entries already compacted
   * are skipped. The first new entry must not leave a gap. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    const lastNew = entries[entries.length - 1]!.index;
    if (lastNew < first) return; // all compacted
    let ents = entries;
    if (ents[0]!.index < first) ents = ents.slice(first - ents[0]!.index);
    const at = ents[0]!.index - this.offset();
    assert(at <= this.ents.length, 'storage.append: no gap before the appended entries');
    if (at < this.ents.length) this.ents.length = at;
    for (const e of ents) this.ents.push(e);
  }
}
