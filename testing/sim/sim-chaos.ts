// The faults, then the healing: during the chaos phase an event every 20-120 ms crashes or restarts
// nodes, partitions or blocks links, changes the network's drops, duplicates and delays, stalls a
// disk, asks for a leadership transfer or a snapshot; at the heal everything is repaired and the
// run settles (liveness) and ends with the final checks.

import type { SimClients } from './sim-clients.js';
import { finalChecks } from './sim-final-checks.js';
import type { SimNodes } from './sim-nodes.js';
import { SIM_SETTLE_BOUND_MS, SIM_TICK_MS, type SimNode } from './sim-types.js';
import { describe } from './sim-util.js';
import type { SimWorkers } from './sim-workers.js';
import type { SimWorld } from './sim-world.js';

export class SimChaos {
  private healAt = 0;

  constructor(
    private readonly w: SimWorld,
    private readonly nodes: SimNodes,
    private readonly clients: SimClients,
    private readonly workers: SimWorkers,
  ) {}

  /** One fault (drawn), and the next one scheduled, until healing. */
  chaos(): void {
    if (this.w.healed) return;
    this.w.sched.after(this.w.rng.intBetween(20, 120), 'chaos', () => this.chaos());
    const r = this.w.rng.intBelow(100);
    const all = this.w.ids.map((id) => this.w.nodes.get(id)!);
    const up = this.w.up();
    const down = all.filter((n) => n.phase === 'down');
    if (r < 30) this.nodeFault(r, all, up, down);
    else if (r < 60) this.networkFault(r);
    else this.coreFault(r, all, up);
  }

  private nodeFault(r: number, all: readonly SimNode[], up: readonly SimNode[], down: readonly SimNode[]): void {
    const rng = this.w.rng;
    if (r < 7) {
      // Keep a majority up most of the time, so that work gets done between failures.
      if (up.length > 0 && (down.length < Math.floor(all.length / 2) || rng.chance(0.2)))
        this.nodes.crash(rng.pick(up), 'chaos');
    } else if (r < 13) {
      const l = this.w.leader();
      if (l !== undefined && down.length < Math.floor(all.length / 2)) this.nodes.crash(l, 'the leader crashes');
    } else if (down.length > 0) this.nodes.restart(rng.pick(down));
  }

  private networkFault(r: number): void {
    const rng = this.w.rng;
    const net = this.w.net;
    if (r < 37) {
      const side = new Set(this.w.ids.filter(() => rng.chance(0.5)));
      net.partition(side, this.w.ids);
      this.w.stats.partitions++;
      this.w.log(`PARTITION {${[...side].join(',')}} | rest`);
    } else if (r < 41) {
      const a = rng.pick(this.w.ids);
      const b = rng.pick(this.w.ids);
      if (a !== b) {
        net.block(a, b);
        this.w.log(`ONE-WAY block ${a}->${b}`);
      }
    } else if (r < 52) {
      net.healLinks();
      this.w.log('links healed');
    } else {
      const c = net.conditions;
      c.dropRate = rng.pick([0, 0, 0.05, 0.2, 0.4]);
      c.dupRate = rng.pick([0, 0.05, 0.2]);
      c.maxDelayMs = rng.intBetween(1, 25);
      this.w.log(`network drop=${c.dropRate} dup=${c.dupRate} maxDelay=${c.maxDelayMs}ms`);
    }
  }

  private coreFault(r: number, all: readonly SimNode[], up: readonly SimNode[]): void {
    const rng = this.w.rng;
    if (r < 66) {
      const n = rng.pick(all);
      n.fsyncMs = rng.pick([0.2, 1, 3, 30, 120]);
      this.w.log(`n${n.id} fsync now takes ~${n.fsyncMs} ms`);
    } else if (r < 72) {
      const from = up.length > 0 ? rng.pick(up) : undefined;
      const to = rng.pick(this.w.ids);
      if (from !== undefined) {
        try {
          from.core!.transferLeader(to);
          this.w.log(`n${from.id} transferLeader(${to})`);
        } catch (e) {
          this.w.log(`n${from.id} transferLeader(${to}) refused: ${describe(e)}`);
        }
      }
    } else if (r < 76) {
      const n = up.length > 0 ? rng.pick(up) : undefined;
      if (n !== undefined) this.snapshotNow(n);
    }
  }

  private snapshotNow(n: SimNode): void {
    const inc = n.inc;
    this.w.log(`n${n.id} snapshotNow`);
    n.core!.snapshotNow().then(
      (i) => this.w.log(`n${n.id} snapshot at ${i} stored`),
      (e: unknown) => {
        if (n.inc === inc && n.phase === 'up' && n.core?.fatalError === null)
          this.w.fail('sim-error', `node ${n.id} snapshotNow failed: ${describe(e)}`);
      },
    );
  }

  /** The end of the faults: links repaired, disks fast again, every crashed node restarts. */
  heal(): void {
    this.w.healed = true;
    this.healAt = this.w.sched.nowMs;
    this.w.net.healLinks();
    const c = this.w.net.conditions;
    c.dropRate = 0;
    c.dupRate = 0;
    c.maxDelayMs = Math.min(c.maxDelayMs, 5);
    for (const n of this.w.nodes.values()) {
      n.fsyncMs = Math.min(n.fsyncMs, 3);
      if (n.phase === 'down') this.nodes.restart(n);
    }
    this.w.log('HEAL: links repaired, disks fast again, every crashed node restarts; no new requests');
    this.w.sched.after(SIM_TICK_MS, 'settle', () => this.settle());
  }

  /** After healing: every open request answered, then every node at one applied index. */
  private settle(): void {
    if (this.w.sched.nowMs - this.healAt > SIM_SETTLE_BOUND_MS) {
      this.notSettled();
      return;
    }
    this.w.sched.after(SIM_TICK_MS, 'settle', () => this.settle());
    if (this.clients.openRequests().length > 0 || this.workers.busy) return;
    const up = this.w.up();
    if (up.length !== this.w.ids.length) return;
    const l = this.w.leader();
    if (l === undefined) return;
    const commit = l.core!.status().commit;
    for (const n of up) {
      const s = n.core!.status();
      if (s.appliedIndex !== commit || s.commit !== commit || s.snapshotJobsLeft !== null) return;
    }
    finalChecks(this.w, up, commit, this.clients.clients);
    this.w.done = true;
  }

  private notSettled(): void {
    const st = this.w.ids
      .map((id) => {
        const n = this.w.nodes.get(id)!;
        if (n.phase !== 'up') return `n${id}:${n.phase}`;
        const s = n.core!.status();
        return `n${id}:t${s.term} lead ${s.lead} commit ${s.commit} applied ${s.appliedIndex} snap ${s.snapshotIndex}`;
      })
      .join(' | ');
    const open = this.clients.openRequests();
    this.w.fail(
      'liveness',
      `not settled ${SIM_SETTLE_BOUND_MS} ms after healing: ${st}; open requests: ${open.join(', ') || 'none'}`,
    );
  }
}
