// ReadIndex bookkeeping (Raft thesis §6.4): a read is safe at the leader's commit index once a
// quorum has confirmed, by answering a heartbeat that carries the read's context, that this node
// was still the leader after the read arrived. Requests are confirmed in arrival order.
import type { NodeId } from './types.js';

/** A read that became safe: serve it once the state machine has applied `index`. */
export interface ReadState {
  readonly index: number;
  readonly ctx: string;
}

export interface ReadRequest {
  readonly ctx: string;
  readonly index: number;
  /** The node that asked (the leader itself, or a follower that forwarded its client's read). */
  readonly from: NodeId;
  readonly acks: Set<NodeId>;
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadRequest>();
  private queue: string[] = [];

  get size(): number {
    return this.queue.length;
  }

  /** Queues a read; false when a read with the same context is already pending. */
  add(index: number, ctx: string, from: NodeId, self: NodeId): boolean {
    if (this.pending.has(ctx)) return false;
    const req: ReadRequest = { ctx, index, from, acks: new Set([self]) };
    this.pending.set(ctx, req);
    this.queue.push(ctx);
    return true;
  }

  /** Records a heartbeat acknowledgement; returns the acks of that read, if it is pending. */
  recvAck(from: NodeId, ctx: string): Set<NodeId> | undefined {
    const req = this.pending.get(ctx);
    if (req === undefined) return undefined;
    req.acks.add(from);
    return req.acks;
  }

  /** Removes and returns every read queued up to and including `ctx` (all are now confirmed). */
  advance(ctx: string): ReadRequest[] {
    const at = this.queue.indexOf(ctx);
    if (at < 0) return [];
    const done = this.queue.slice(0, at + 1);
    this.queue = this.queue.slice(at + 1);
    const out: ReadRequest[] = [];
    for (const c of done) {
      out.push(this.pending.get(c)!);
      this.pending.delete(c);
    }
    return out;
  }

  /** The newest pending context (a heartbeat carrying it confirms all earlier ones too). */
  lastPendingCtx(): string {
    return this.queue.length === 0 ? '' : this.queue[this.queue.length - 1]!;
  }

  reset(): void {
    this.pending.clear();
    this.queue = [];
  }
}
