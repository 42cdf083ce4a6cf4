// The deterministic workload of the crash tests. Save number n always carries the same entries and
// hard state for a given seed, whatever the timing, so the parent can rebuild the log the child had
// after any save and compare it with what reopening the WAL reads back.

import type { Entry, HardState } from '../raft/types.js';

/** mulberry32: a small seeded PRNG (tests only; not for anything secret). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The data of entry (index, term): 0..599 bytes that depend on both. */
export function entryData(index: number, term: number): Uint8Array {
  const h = Math.imul(index ^ Math.imul(term, 0x9e3779b1), 0x85ebca6b) >>> 0;
  const len = h % 600;
  const out = new Uint8Array(len);
  for (let k = 0; k < len; k++) out[k] = (h >>> (k & 24)) ^ k ^ index;
  return out;
}

export interface ModelSave {
  readonly no: number;
  readonly hardState: HardState;
  readonly entries: Entry[];
}

/** Entries per save, at most. */
const SAVE_ENTRIES_MAX = 6;
/** The model commits everything but the last COMMIT_LAG entries, so truncations have room. */
const COMMIT_LAG = 40;
/** Chance that a save is a new leader's, replacing an uncommitted suffix. */
const TRUNCATE_PROBABILITY = 0.03;

export class CrashModel {
  private readonly rng: () => number;
  saveNo = 0;
  /** terms[i - 1] is the term of entry i. */
  readonly terms: number[] = [];
  hardState: HardState = { term: 1, vote: 1, commit: 0 };

  constructor(readonly seed: number) {
    this.rng = prng(seed);
  }

  get lastIndex(): number {
    return this.terms.length;
  }

  next(): ModelSave {
    this.saveNo++;
    const last = this.terms.length;
    let { term, vote, commit } = this.hardState;
    let first = last + 1;
    if (this.rng() < TRUNCATE_PROBABILITY && last > commit + 1) {
      term += 1;
      vote = 1 + Math.floor(this.rng() * 3);
      first = commit + 1 + Math.floor(this.rng() * (last - commit));
    }
    const n = 1 + Math.floor(this.rng() * SAVE_ENTRIES_MAX);
    const entries: Entry[] = [];
    for (let i = first; i < first + n; i++) entries.push({ index: i, term, type: 0, data: entryData(i, term) });
    this.terms.length = first - 1;
    for (let k = 0; k < n; k++) this.terms.push(term);
    commit = Math.max(commit, first + n - 1 - COMMIT_LAG);
    this.hardState = { term, vote, commit };
    return { no: this.saveNo, hardState: this.hardState, entries };
  }
}

/** The content of the snapshot at `index` in the snapshot crash test: 0.5..3 MiB fixed by the index. */
export function snapshotContent(index: number): Uint8Array {
  const len = 512 * 1024 + ((index * 7919) % 5) * 640 * 1024 + (index % 1000);
  const out = new Uint8Array(len);
  const v = new DataView(out.buffer);
  for (let k = 0; k + 4 <= len; k += 4) v.setUint32(k, (Math.imul(k, 2654435761) ^ index) >>> 0, true);
  return out;
}
