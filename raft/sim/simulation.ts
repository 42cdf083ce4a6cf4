// The deterministic cluster simulator. One seed fixes everything: the cluster size, the fault
// schedule, every network delay, drop, duplicate and partition, crashes and restarts, membership
// changes, leadership transfers, client proposals and reads. The real core (RawNode) runs unchanged;
// the simulator plays the caller exactly as the daemon will: persist, then send, then apply, then
// advance. A crash loses everything not yet persisted. Safety is checked after every step
// (checker.ts); liveness once the faults heal.
//
// This file: a run's set-up and its event loop. The parts: world.ts (clock, queue, shared state),
// sim-node.ts, driver.ts (each node's caller), network.ts, chaos.ts (faults), workload.ts
// (clients), liveness.ts (healing and the liveness checks), params.ts (the constants).
import { describeConf } from '../confchange.js';
import { RaftInvariantError } from '../errors.js';
import type { SeededRandom } from '../prng.js';
import { MemoryStorage } from '../storage.js';
import type { ConfState, NodeId } from '../types.js';
import type { SafetyChecker } from './checker.js';
import { SimViolation } from './checker.js';
import { Chaos } from './chaos.js';
import { NodeDriver } from './driver.js';
import { Liveness } from './liveness.js';
import { SimNetwork } from './network.js';
import { SIM_CHAOS_MS_MAX, SIM_CHAOS_MS_MIN, SIM_EVENTS_MAX } from './params.js';
import { SimNode, encodeSmSnapshot } from './sim-node.js';
import { Workload } from './workload.js';
import type { SimEvent, SimStats } from './world.js';
import { SimWorld } from './world.js';

export * from './params.js';
export type { SimStats } from './world.js';

export interface SimOptions {
  readonly seed: number;
  readonly trace?: boolean;
  readonly chaosMs?: number;
}

export interface SimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly error: Error | undefined;
  readonly trace: readonly string[];
  readonly stats: SimStats;
}

export class Simulation {
  readonly rng: SeededRandom;
  readonly nodes: Map<NodeId, SimNode>;
  readonly checker: SafetyChecker;
  readonly trace: string[];
  readonly stats: SimStats;
  private readonly w: SimWorld;
  private readonly net: SimNetwork;
  private readonly driver: NodeDriver;
  private readonly chaos: Chaos;
  private readonly workload: Workload;
  private readonly live: Liveness;

  constructor(readonly opts: SimOptions) {
    const w = new SimWorld(opts.seed, opts.trace === true);
    this.w = w;
    this.rng = w.rng;
    this.nodes = w.nodes;
    this.checker = w.checker;
    this.trace = w.trace;
    this.stats = w.stats;
    const chaosMs = opts.chaosMs ?? w.rng.intBetween(SIM_CHAOS_MS_MIN, SIM_CHAOS_MS_MAX);
    const mode = w.rng.intBelow(10);
    // Most seeds run the production setting (both on); some run without one of them, for safety
    // under more disruptive election patterns.
    const preVote = mode !== 8;
    const checkQuorum = mode !== 9;
    const n = w.rng.pick([1, 3, 3, 3, 5, 5]);
    const voters: NodeId[] = [];
    for (let i = 1; i <= n; i++) voters.push(i);
    this.net = new SimNetwork(w);
    this.driver = new NodeDriver(w, this.net, { preVote, checkQuorum });
    this.workload = new Workload(w, this.driver);
    this.chaos = new Chaos(w, this.net, this.driver, this.workload, n + 1);
    this.live = new Liveness(w, this.net, this.driver);
    const conf: ConfState = { voters, learners: [] };
    w.log(`seed ${opts.seed}: ${n} voters ${describeConf(conf)} preVote=${preVote} checkQuorum=${checkQuorum}`);
    w.checker.onRestored(0, 1, 0);
    for (const id of voters) {
      const node = new SimNode(id, MemoryStorage.bootstrap(conf, encodeSmSnapshot(1, 0, 0)));
      w.nodes.set(id, node);
      this.driver.start(node);
    }
    this.net.maxDelayMs = w.rng.intBetween(1, 20);
    w.q.push(w.rng.intBetween(20, 100), { kind: 'chaos' });
    w.q.push(w.rng.intBetween(5, 30), { kind: 'client' });
    w.q.push(chaosMs, { kind: 'heal' });
  }

  run(): SimResult {
    const w = this.w;
    let error: Error | undefined;
    try {
      while (!this.live.done) {
        const item = w.q.pop();
        if (item === undefined) throw new SimViolation('liveness', 'no event left to run');
        w.now = item.timeMs;
        if (++w.stats.events > SIM_EVENTS_MAX) throw new SimViolation('liveness', `more than ${SIM_EVENTS_MAX} events`);
        this.handle(item.event);
      }
      this.live.finalChecks();
    } catch (e) {
      error = e instanceof Error ? e : new Error(String(e));
      if (error instanceof RaftInvariantError) error = new SimViolation('invariant', error.message);
      w.log(`FAILED: ${error.message}`);
    }
    w.stats.virtualMs = w.now;
    w.stats.committed = w.checker.maxCommitted;
    return { seed: this.opts.seed, ok: error === undefined, error, trace: w.trace, stats: w.stats };
  }

  private handle(ev: SimEvent): void {
    const w = this.w;
    switch (ev.kind) {
      case 'tick': {
        const node = w.nodes.get(ev.node)!;
        if (!node.alive || node.inc !== ev.inc) return;
        node.raw!.tick();
        this.driver.afterActivity(node);
        w.q.push(w.now + node.tickMs, ev);
        return;
      }
      case 'deliver':
        this.driver.deliver(ev.msg);
        return;
      case 'chunk':
        this.driver.deliverChunk(ev.chunk);
        return;
      case 'persist': {
        const node = w.nodes.get(ev.node)!;
        if (!node.alive || node.inc !== ev.inc || node.outstanding === undefined) return;
        this.driver.persist(node);
        this.driver.afterActivity(node);
        return;
      }
      case 'snap-status': {
        const node = w.nodes.get(ev.leader)!;
        if (!node.alive || node.inc !== ev.inc) return;
        node.raw!.reportSnapshot(ev.to, ev.ok);
        this.driver.afterActivity(node);
        return;
      }
      case 'crash': {
        const node = w.nodes.get(ev.node)!;
        if (node.alive && node.inc === ev.inc && !w.healed) this.driver.crash(node);
        return;
      }
      case 'chaos':
        if (!w.healed) this.chaos.chaos();
        return;
      case 'client':
        this.workload.client();
        return;
      case 'heal':
        this.live.heal();
        return;
      case 'liveness':
        this.live.liveness();
        return;
    }
  }
}

/** Runs one seed. With `trace`, the result carries a readable trace of the whole run. */
export function runSeed(seed: number, trace = false): SimResult {
  return new Simulation({ seed, trace }).run();
}
