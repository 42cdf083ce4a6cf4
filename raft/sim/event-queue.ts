// A min-heap of simulation events ordered by (virtual time, insertion sequence): two events at the
// same time run in the order they were scheduled, so a run depends only on its seed.

export interface Scheduled<E> {
  readonly timeMs: number;
  readonly seq: number;
  readonly event: E;
}

export class EventQueue<E> {
  private heap: Scheduled<E>[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(timeMs: number, event: E): void {
    const item: Scheduled<E> = { timeMs, seq: this.seq++, event };
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  pop(): Scheduled<E> | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l]!, h[m]!)) m = l;
        if (r < h.length && less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function less<E>(a: Scheduled<E>, b: Scheduled<E>): boolean {
  return a.timeMs < b.timeMs || (a.timeMs === b.timeMs && a.seq < b.seq);
}
