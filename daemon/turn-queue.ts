// A queue handled at most `perTurn` items per turn of the event loop, in arrival order: a burst
// (every worker registering after a failover) leaves timers and I/O their turns in between.

/**
 * Registrations handled per turn of the event loop; the rest wait for the next turns, so that a
 * storm of them (every host after a failover) leaves Raft's ticks and I/O their turns in between
 * and the new leader is not deposed for being too busy to send heartbeats.
 */
export const REGISTRATIONS_PER_TURN_MAX = 64;

export class TurnQueue<T> {
  private items: T[] = [];
  private at = 0;

  constructor(
    private readonly perTurn: number,
    private readonly handle: (item: T) => void,
  ) {}

  /** Items waiting. */
  get size(): number {
    return this.items.length - this.at;
  }

  push(item: T): void {
    this.items.push(item);
    if (this.size === 1) setImmediate(() => this.drain());
  }

  private drain(): void {
    const end = Math.min(this.items.length, this.at + this.perTurn);
    while (this.at < end) this.handle(this.items[this.at++]!);
    if (this.at < this.items.length) setImmediate(() => this.drain());
    else {
      this.items = [];
      this.at = 0;
    }
  }
}
