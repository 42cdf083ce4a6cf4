// Small decoded values that repeat from job to job (an env list, an argv, a set of limits), decoded
// once and then shared, frozen, by every job that carries the same value.
//
// Why: the objects a job keeps (its spec's env entries, argv, limits) are what the garbage
// collector copies when it promotes them, and what it marks ever after: fewer objects per job is a
// faster apply from bytes, a faster restore and a shorter full collection under a million jobs.
// The texts inside are already interned by the Reader (capnp-wire.ts), so a candidate is checked
// with a few identity comparisons.
//
// The cache is direct-mapped and only ever caches: a miss decodes as if there were no cache, a
// hit returns a value equal to what decoding would give. Admission gives each slot a second
// chance (as the text intern table): a value read again since the last miss keeps its slot, so a
// stream of values that occur once (a unique argv per job) does not evict those that repeat.

/** Lists longer than this are never shared (they are rare, and each costs its length to compare). */
export const SHARED_LIST_LENGTH_MAX = 16;

export class SharedValues<T> {
  private readonly values: (T | undefined)[];
  private readonly used: Uint8Array;
  private readonly mask: number;

  /** `slots` must be a power of two. */
  constructor(slots: number) {
    if (slots <= 0 || (slots & (slots - 1)) !== 0) throw new RangeError(`slots must be a power of two, not ${slots}`);
    this.values = new Array<T | undefined>(slots).fill(undefined);
    this.used = new Uint8Array(slots);
    this.mask = slots - 1;
  }

  /** The value cached under `key`'s slot, if any: the caller checks it is the value it wants. */
  candidate(key: number): T | undefined {
    return this.values[this.slotOf(key)];
  }

  /** The caller found the candidate of `key` equal to its value: it keeps its slot longer. */
  hit(key: number): void {
    this.used[this.slotOf(key)] = 1;
  }

  /** Whether a new value for `key` may take the slot (then the caller freezes it and calls `set`). */
  admit(key: number): boolean {
    const slot = this.slotOf(key);
    if (this.used[slot] === 1) {
      this.used[slot] = 0;
      return false;
    }
    return true;
  }

  set(key: number, value: T): void {
    this.values[this.slotOf(key)] = value;
  }

  private slotOf(key: number): number {
    return (key ^ (key >>> 15)) & this.mask;
  }
}

/** Mixes one more 32-bit part into a key (a multiplicative hash; collisions only cost a miss). */
export function mixKey(key: number, part: number): number {
  return Math.imul(key ^ part, 0x9e3779b1) ^ (key >>> 13);
}
