// A queue handled at most `perTurn` items per turn of the event loop, in arrival order: a burst
// (every worker registering after a failover) leaves timers and I/O their turns in between
// (registration-gate.ts bounds the worker handshakes and registrations so).

export class TurnQueue<T> {
  private items: T[] = [];
  private at = 0;

  /** `perTurn`: a count, or where to read it each turn (a configured limit that may change). */
  constructor(
    private readonly perTurn: number | (() => number),
    private readonly handle: (item: T) => void,
  ) {}

  /** Items waiting. */
  get size(): number {
    return this.items.length - this.at;
  }

  /** The item that waited longest, if any. */
  peek(): T | undefined {
    return this.size > 0 ? this.items[this.at] : undefined;
  }

  push(item: T): void {
    this.items.push(item);
    if (this.size === 1) setImmediate(() => this.drain());
  }

  private drain(): void {
    const perTurn = typeof this.perTurn === 'number' ? this.perTurn : this.perTurn();
    const end = Math.min(this.items.length, this.at + Math.max(1, perTurn));
    while (this.at < end) this.handle(this.items[this.at++]!);
    if (this.at < this.items.length) setImmediate(() => this.drain());
    else {
      this.items = [];
      this.at = 0;
    }
  }
}
