// The clients: bursts of proposals, mostly to a leader, sometimes to any live node, and ReadIndex
// reads whose commit index at the start is recorded for the linearizability check. Accepted
// proposals are remembered in the world for the final check.
import type { SimNode } from './sim-node.js';
import type { NodeDriver } from './driver.js';
import type { SimWorld } from './world.js';

export class Workload {
  private proposalSeq = 0;
  private readSeq = 0;

  constructor(
    private readonly w: SimWorld,
    private readonly driver: NodeDriver,
  ) {}

  private propose(node: SimNode): void {
    const seq = ++this.proposalSeq;
    const data = new Uint8Array(4 + this.w.rng.intBelow(24));
    new DataView(data.buffer).setUint32(0, seq, true);
    const res = node.raw!.propose(data);
    if (res.ok) {
      this.w.accepted.push({ index: res.index, term: res.term, leader: node.id });
      this.w.log(`n${node.id} accepted proposal #${seq} at ${res.index}/t${res.term}`);
    } else if (this.w.traceOn) {
      this.w.log(`n${node.id} refused proposal #${seq}: ${res.error.message}`);
    }
    this.driver.afterActivity(node);
  }

  /** One client event: a burst of proposals, maybe a read; the next event until the faults heal. */
  client(): void {
    const alive = this.w.aliveNodes();
    if (alive.length > 0) {
      const target =
        this.w.rng.chance(0.7) && this.w.leaders().length > 0
          ? this.w.rng.pick(this.w.leaders())
          : this.w.rng.pick(alive);
      const n = this.w.rng.chance(0.2) ? this.w.rng.intBetween(2, 20) : 1;
      for (let i = 0; i < n; i++) this.propose(target);
      if (this.w.rng.chance(0.2)) this.readIndex(this.w.rng.pick(alive));
    }
    if (!this.w.healed) this.w.q.push(this.w.now + this.w.rng.intBetween(5, 40), { kind: 'client' });
  }

  readIndex(node: SimNode): void {
    const ctx = `r${++this.readSeq}`;
    const res = node.raw!.readIndex(ctx);
    if (res.ok) this.w.readsPending.set(ctx, this.w.checker.maxCommitted);
    this.w.log(`n${node.id} readIndex ${ctx}: ${res.ok ? 'requested' : res.error.message}`);
    this.driver.afterActivity(node);
  }
}
