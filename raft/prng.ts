// A small seeded PRNG (sfc32). The core draws randomized election timeouts from a source passed in,
// so a run is reproducible from its seed. Pure: no Math.random.

export interface RandomSource {
  /** A uniformly distributed integer in [0, bound). `bound` is a positive integer. */
  intBelow(bound: number): number;
}

export class SeededRandom implements RandomSource {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    // Spread the seed over the state with splitmix32, then warm up.
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A float in [0, 1). */
  nextFloat(): number {
    return this.nextU32() / 4294967296;
  }

  intBelow(bound: number): number {
    return Math.floor(this.nextFloat() * bound);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.nextFloat() < p;
  }

  /** An integer in [lo, hi] inclusive. */
  intBetween(lo: number, hi: number): number {
    return lo + this.intBelow(hi - lo + 1);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.intBelow(items.length)] as T;
  }
}
