// What every part of one simulated run shares: the seeded randomness, the virtual clock and its
// event queue, the nodes, the safety checker, the trace and the counters, whether the faults have
// healed, and the client's promises (accepted proposals, reads in flight) that the checks verify.
import type { Message } from '../message.js';
import { StateType } from '../raft.js';
import { SeededRandom } from '../prng.js';
import type { SnapshotChunk } from '../snapshot-chunks.js';
import type { NodeId } from '../types.js';
import { SafetyChecker } from './checker.js';
import { EventQueue } from './event-queue.js';
import type { SimNode } from './sim-node.js';

export type SimEvent =
  | { kind: 'tick'; node: NodeId; inc: number }
  | { kind: 'deliver'; msg: Message }
  | { kind: 'chunk'; chunk: SnapshotChunk }
  | { kind: 'persist'; node: NodeId; inc: number }
  | { kind: 'snap-status'; leader: NodeId; inc: number; to: NodeId; ok: boolean }
  | { kind: 'chaos' }
  | { kind: 'crash'; node: NodeId; inc: number }
  | { kind: 'client' }
  | { kind: 'heal' }
  | { kind: 'liveness' };

export interface SimStats {
  events: number;
  virtualMs: number;
  elections: number;
  committed: number;
  crashes: number;
  confChanges: number;
  transfers: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  reads: number;
}

export class SimWorld {
  readonly rng: SeededRandom;
  readonly q = new EventQueue<SimEvent>();
  now = 0;
  readonly nodes = new Map<NodeId, SimNode>();
  readonly checker = new SafetyChecker();
  readonly traceOn: boolean;
  readonly trace: string[] = [];
  readonly stats: SimStats = {
    events: 0,
    virtualMs: 0,
    elections: 0,
    committed: 0,
    crashes: 0,
    confChanges: 0,
    transfers: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    reads: 0,
  };
  /** Set once every fault is repaired (no more chaos, crashes or delay spikes). */
  healed = false;
  /** Proposals accepted by a leader: checked at the end if that leader is still in power. */
  readonly accepted: { index: number; term: number; leader: NodeId }[] = [];
  /** ReadIndex requests: ctx → the highest committed index when the read began. */
  readonly readsPending = new Map<string, number>();

  constructor(seed: number, traceOn: boolean) {
    this.rng = new SeededRandom(seed);
    this.traceOn = traceOn;
  }

  log(line: string): void {
    if (!this.traceOn) return;
    this.trace.push(`${String(this.now).padStart(6)}ms ${line}`);
  }

  aliveNodes(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.alive) out.push(n);
    return out;
  }

  leaders(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.alive && n.raw!.raft.state === StateType.Leader) out.push(n);
    return out;
  }
}
