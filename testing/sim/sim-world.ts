// The simulated cluster's shared state, one per seed: the event queue, the seeded PRNG, the
// network, the nodes by id, whether the faults have healed, the trace and the statistics, and the
// first violation found (the run stops on it). Every other piece of the simulator works on it.

import type { SeededRandom } from '../../raft/prng.js';
import { SimNetwork } from './sim-network.js';
import {
  ControllerSimViolation,
  emptyStats,
  type ControllerSimStats,
  type SimNode,
  type ViolationKind,
} from './sim-types.js';
import { SimScheduler } from './virtual-clock.js';

export class SimWorld {
  readonly sched = new SimScheduler();
  readonly nodes = new Map<number, SimNode>();
  readonly net: SimNetwork;
  readonly trace: string[] = [];
  readonly stats: ControllerSimStats;
  /** Job and array ids a CleanFact was proposed for: they may have left the state (final checks). */
  readonly cleanProposed = new Set<number>();
  violation: ControllerSimViolation | undefined;
  /** The faults are over: no new requests, crashes or partitions; the run settles. */
  healed = false;
  /** Settled and checked: the run ends. */
  done = false;

  constructor(
    readonly rng: SeededRandom,
    readonly ids: readonly number[],
    readonly traceOn: boolean,
  ) {
    this.stats = emptyStats(ids.length);
    this.net = new SimNetwork(
      this.sched,
      rng,
      (id) => this.nodes.get(id)?.phase === 'up',
      (from, to, frame) => this.deliver(from, to, frame),
    );
  }

  log(line: string): void {
    if (!this.traceOn) return;
    this.trace.push(`${this.sched.nowMs.toFixed(2).padStart(9)}ms ${line}`);
  }

  /** Records the first violation (later ones are consequences) and logs it. */
  fail(kind: ViolationKind, detail: string): void {
    if (this.violation !== undefined) return;
    this.violation = new ControllerSimViolation(kind, detail);
    this.log(`VIOLATION ${this.violation.message}`);
  }

  /** The nodes up now, in id order. */
  up(): SimNode[] {
    const out: SimNode[] = [];
    for (const id of this.ids) {
      const n = this.nodes.get(id)!;
      if (n.phase === 'up') out.push(n);
    }
    return out;
  }

  /** The node that leads the highest term among those that think they lead. */
  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const n of this.up()) {
      if (!n.core!.isLeader()) continue;
      const term = n.core!.status().term;
      if (term > bestTerm) {
        best = n;
        bestTerm = term;
      }
    }
    return best;
  }

  private deliver(from: number, to: number, frame: Uint8Array): void {
    const n = this.nodes.get(to);
    if (n?.phase !== 'up' || n.core === undefined) return;
    n.core.receive(from, frame);
  }
}
