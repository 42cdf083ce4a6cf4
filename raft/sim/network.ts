// The simulated network: per-message delay (with reordering spikes), drops, duplicates, symmetric
// partitions and one-way blocks, and snapshots streamed in chunks over one ordered connection.
// Sending only schedules deliveries; the node driver (driver.ts) delivers them.
import type { Message } from '../message.js';
import { MessageType, describeMessage } from '../message.js';
import { splitSnapshot } from '../snapshot-chunks.js';
import type { NodeId } from '../types.js';
import { SIM_SNAPSHOT_CHUNK_BYTES } from './params.js';
import type { SimNode } from './sim-node.js';
import type { SimWorld } from './world.js';

export class SimNetwork {
  dropRate = 0;
  dupRate = 0;
  maxDelayMs = 10;
  private readonly blocked = new Set<number>(); // from * 64 + to

  constructor(private readonly w: SimWorld) {}

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.blocked.size > 0 && this.blocked.has(from * 64 + to);
  }

  private delay(): number {
    // Mostly short, sometimes a long spike (reordering).
    if (!this.w.healed && this.w.rng.chance(0.03)) return this.w.rng.intBetween(this.maxDelayMs, this.maxDelayMs * 8);
    return this.w.rng.intBetween(1, this.maxDelayMs);
  }

  send(m: Message): void {
    if (m.type === MessageType.Snap) {
      this.sendSnapshot(m);
      return;
    }
    if (this.isBlocked(m.from, m.to) || (this.dropRate > 0 && this.w.rng.chance(this.dropRate))) {
      if (this.w.traceOn) this.w.log(`drop ${describeMessage(m)}`);
      return;
    }
    this.w.q.push(this.w.now + this.delay(), { kind: 'deliver', msg: m });
    if (this.dupRate > 0 && this.w.rng.chance(this.dupRate))
      this.w.q.push(this.w.now + this.delay(), { kind: 'deliver', msg: m });
  }

  /** Streams a snapshot in chunks over one ordered connection; a lost chunk fails the transfer. */
  private sendSnapshot(m: Message): void {
    this.w.stats.snapshotsSent++;
    const chunks = splitSnapshot(m, SIM_SNAPSHOT_CHUNK_BYTES);
    const leader = this.w.nodes.get(m.from)!;
    let t = this.w.now;
    let ok = true;
    for (const c of chunks) {
      if (this.isBlocked(m.from, m.to) || (this.dropRate > 0 && this.w.rng.chance(this.dropRate))) {
        ok = false;
        break;
      }
      t += this.w.rng.intBetween(1, Math.max(1, this.maxDelayMs >> 1));
      this.w.q.push(t, { kind: 'chunk', chunk: c });
    }
    this.w.log(
      `snapshot ${m.from}->${m.to} at ${m.snapshot!.meta.index}: ${chunks.length} chunks, ${ok ? 'streamed' : 'a chunk was lost'}`,
    );
    this.w.q.push(t + 1, { kind: 'snap-status', leader: m.from, inc: leader.inc, to: m.to, ok });
  }

  // ---------------------------------------------------------------- faults (chaos.ts draws them)

  /** Symmetric partition: a random split. */
  partition(all: readonly SimNode[]): void {
    this.blocked.clear();
    const side = new Set(all.filter(() => this.w.rng.chance(0.5)).map((n) => n.id));
    for (const a of all) for (const b of all) if (side.has(a.id) !== side.has(b.id)) this.blocked.add(a.id * 64 + b.id);
    this.w.log(`PARTITION {${[...side].join(',')}} | rest`);
  }

  blockOneWay(all: readonly SimNode[]): void {
    const a = this.w.rng.pick(all).id;
    const b = this.w.rng.pick(all).id;
    if (a !== b) {
      this.blocked.add(a * 64 + b);
      this.w.log(`ONE-WAY block ${a}->${b}`);
    }
  }

  unblockAll(): void {
    this.blocked.clear();
    this.w.log('network healed');
  }

  /** New drop and duplicate rates and maximum delay. */
  redraw(): void {
    this.dropRate = this.w.rng.pick([0, 0, 0.05, 0.2, 0.5]);
    this.dupRate = this.w.rng.pick([0, 0.05, 0.2]);
    this.maxDelayMs = this.w.rng.intBetween(1, 30);
    this.w.log(`network drop=${this.dropRate} dup=${this.dupRate} maxDelay=${this.maxDelayMs}ms`);
  }

  /** Every link repaired: no block, no drop, short delays (the duplicate rate stays). */
  heal(): void {
    this.blocked.clear();
    this.dropRate = 0;
    this.maxDelayMs = Math.min(this.maxDelayMs, 10);
  }
}
