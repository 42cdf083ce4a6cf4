// A table from a hash (a 30-bit number ≥ 0, wire/text-hash.ts) to a number other than 0, held in
// one typed array of (key, value) pairs (open addressing, linear probing, deletion by backward
// shift). Why not a Map: name-index.ts puts a million restored jobs in one after a restore, in the
// apply of the submit that asks first; a Map of a million numbers took 0.5 to 1 s to fill on this
// machine. Here a key and its value share a cache line, and a table sized for its keys up front
// never grows while it is filled. Pure.

/** A slot with no key. */
const EMPTY = -1;
/** The table grows past this load (a half: short probes), and shrinks below an eighth. */
const GROW_AT = 0.5;
const SHRINK_BELOW = 0.125;
const CAPACITY_MIN = 16;
/** Fibonacci hashing: the slot is the top bits of the key times this. */
const SPREAD = 0x9e3779b1;

/** The smallest power of two that holds `keys` keys below GROW_AT. */
const capacityFor = (keys: number): number => {
  let c = CAPACITY_MIN;
  while (keys > c * GROW_AT) c *= 2;
  return c;
};

export class HashTable {
  /** Slot i: its key at 2i (EMPTY: none), its value at 2i + 1. */
  private slots: Float64Array;
  private capacity: number;
  private shift: number;
  private count = 0;

  /** A table that holds `keys` keys without growing. */
  constructor(keys = 0) {
    this.capacity = capacityFor(keys);
    this.slots = new Float64Array(2 * this.capacity).fill(EMPTY);
    this.shift = 32 - Math.log2(this.capacity);
  }

  get size(): number {
    return this.count;
  }

  private home(key: number): number {
    return Math.imul(key, SPREAD) >>> this.shift;
  }

  /** Where `key` is, or the empty slot where it would go. */
  private slot(key: number): number {
    const s = this.slots;
    const mask = this.capacity - 1;
    let i = this.home(key);
    while (s[2 * i] !== EMPTY && s[2 * i] !== key) i = (i + 1) & mask;
    return i;
  }

  /** The value of `key`; 0: none. */
  get(key: number): number {
    const i = this.slot(key);
    return this.slots[2 * i] === EMPTY ? 0 : this.slots[2 * i + 1]!;
  }

  /** Sets `key` (≥ 0) to `value` (not 0). */
  set(key: number, value: number): void {
    let i = this.slot(key);
    if (this.slots[2 * i] === EMPTY) {
      if (this.count + 1 > this.capacity * GROW_AT) {
        this.resize(this.capacity * 2);
        i = this.slot(key);
      }
      this.slots[2 * i] = key;
      this.count++;
    }
    this.slots[2 * i + 1] = value;
  }

  delete(key: number): void {
    const s = this.slots;
    const mask = this.capacity - 1;
    let i = this.slot(key);
    if (s[2 * i] === EMPTY) return;
    // Backward shift: each key after the hole that would be found from its home slot through the
    // hole moves into it, so that no probe stops short of its key.
    for (let j = (i + 1) & mask; s[2 * j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.home(s[2 * j]!);
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      s[2 * i] = s[2 * j]!;
      s[2 * i + 1] = s[2 * j + 1]!;
      i = j;
    }
    s[2 * i] = EMPTY;
    this.count--;
    if (this.capacity > CAPACITY_MIN && this.count < this.capacity * SHRINK_BELOW) this.resize(this.capacity / 2);
  }

  /** Every key and its value, in no particular order. */
  *entries(): Generator<[number, number]> {
    const s = this.slots;
    for (let i = 0; i < this.capacity; i++) if (s[2 * i] !== EMPTY) yield [s[2 * i]!, s[2 * i + 1]!];
  }

  private resize(capacity: number): void {
    const old = this.slots;
    this.capacity = capacity;
    this.slots = new Float64Array(2 * capacity).fill(EMPTY);
    this.shift = 32 - Math.log2(capacity);
    for (let i = 0; i < old.length; i += 2) {
      if (old[i] === EMPTY) continue;
      const j = this.slot(old[i]!);
      this.slots[2 * j] = old[i]!;
      this.slots[2 * j + 1] = old[i + 1]!;
    }
  }
}
