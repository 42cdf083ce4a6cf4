// The whole-controller deterministic simulator (issue 17). Three (sometimes five) ControllerCores
// — the daemon's own Ready handling (daemon/controller/core.ts) with the REAL state machine — run
// on in-memory stores over MemoryDisks (crashes lose what was not flushed), a simulated network
// (delays, drops, duplicates, reordering, partitions) and virtual clocks, all driven by one event
// queue and one seeded PRNG. Clients write real facts through whoever leads, with sessions, and
// retry the same (client, sequence) after timeouts and leader changes; the simulator plays the
// scheduler and the workers. Snapshots are taken every few entries, so compaction and
// InstallSnapshot to lagging and restarted followers happen in most runs.
//
// Checked as it runs: the state invariants after every apply on every node; that every node's apply
// returns the same result at the same index; that a (client, sequence) applied again answers its
// first result, on every node and to the client; one leader per term; that the encoded state
// (statemachine/snapshot.ts) is byte-identical across nodes at sampled indexes, at every snapshot
// stored (taken locally or installed from the leader) and after every restore. After the faults
// heal: liveness (a leader, every outstanding write answered, every node at one applied index),
// byte-identical states, every acknowledged submit present exactly once.
//
// The core runs on promises, so after each event the simulator lets every microtask run
// (setImmediate comes after them all) before it takes the next: the order of everything depends
// only on the seed. A failing seed replays exactly with `--seed S`.
//
// This file draws the seed's settings and runs the event loop; the pieces: sim-types.ts,
// sim-world.ts (shared state, trace, stats), sim-nodes.ts (node lifecycle), sim-clients.ts,
// sim-workers.ts (scheduler and workers), sim-chaos.ts (faults, healing, settling), sim-checks.ts
// and sim-final-checks.ts, state-diff.ts, sim-util.ts.

import { SeededRandom } from '../../raft/prng.js';
import { SimChaos } from './sim-chaos.js';
import { SimChecks } from './sim-checks.js';
import { SimClients } from './sim-clients.js';
import { SimConfig } from './sim-config.js';
import { SimNodes, type SimSnapshotSettings } from './sim-nodes.js';
import {
  SIM_CHAOS_MS_MAX,
  SIM_CHAOS_MS_MIN,
  SIM_EVENTS_MAX,
  type ControllerSimOptions,
  type ControllerSimResult,
  type ControllerSimStats,
} from './sim-types.js';
import { describe, drainMicrotasks } from './sim-util.js';
import { SimWorkers } from './sim-workers.js';
import { SimWorld } from './sim-world.js';

export {
  ControllerSimViolation,
  SIM_CHAOS_MS_MAX,
  SIM_CHAOS_MS_MIN,
  SIM_CLIENT_ATTEMPT_MS_MAX,
  SIM_CLIENT_ATTEMPT_MS_MIN,
  SIM_ELECTION_TICKS,
  SIM_EVENTS_MAX,
  SIM_NEW_LEADER_CRASH_CHANCE,
  SIM_PROPOSAL_TIMEOUT_MS,
  SIM_SETTLE_BOUND_MS,
  SIM_TICK_MS,
  SIM_TRACE_LINES_MAX,
  type ControllerSimOptions,
  type ControllerSimResult,
  type ControllerSimStats,
  type ViolationKind,
} from './sim-types.js';

/** The simulation of one seed. */
export class ControllerSim {
  private readonly w: SimWorld;
  private readonly nodes: SimNodes;
  private readonly clients: SimClients;
  private readonly workers: SimWorkers;
  private readonly chaos: SimChaos;
  private readonly chaosMs: number;
  readonly trace: string[];
  readonly stats: ControllerSimStats;

  constructor(private readonly opts: ControllerSimOptions) {
    // The draws come in a fixed order: a seed's whole run depends on it.
    const rng = new SeededRandom(opts.seed);
    const n = rng.chance(0.2) ? 5 : 3;
    const ids = Array.from({ length: n }, (_, i) => i + 1);
    this.chaosMs = rng.intBetween(SIM_CHAOS_MS_MIN, SIM_CHAOS_MS_MAX);
    const settings: SimSnapshotSettings = {
      snapshotEveryEntries: rng.pick([3, 6, 12, 24]),
      snapshotCatchupEntries: rng.pick([0, 1, 4, 20]),
      snapshotSliceJobs: rng.pick([1, 3, 1000]),
      snapshotSliceMs: rng.pick([0, 0, 1000]),
    };
    const sampleEvery = rng.intBetween(4, 12);
    const config = new SimConfig(ids);
    this.w = new SimWorld(rng, ids, opts.trace === true);
    this.trace = this.w.trace;
    this.stats = this.w.stats;
    this.w.net.conditions.maxDelayMs = rng.intBetween(2, 8);
    const faultyId = opts.injectNondeterminism ? rng.pick(ids) : 0;
    const checks = new SimChecks(this.w, sampleEvery);
    this.nodes = new SimNodes(this.w, checks, settings);
    this.nodes.create(opts.seed, faultyId);
    this.clients = new SimClients(this.w, checks, config);
    this.workers = new SimWorkers(this.w, config);
    this.chaos = new SimChaos(this.w, this.nodes, this.clients, this.workers);
    this.w.log(
      `seed ${opts.seed}: ${n} controllers, chaos ${this.chaosMs} ms, snapshot every ${settings.snapshotEveryEntries} entries (keep ${settings.snapshotCatchupEntries}, slice ${settings.snapshotSliceJobs} jobs / ${settings.snapshotSliceMs} ms), compare every ${sampleEvery} indexes${faultyId !== 0 ? `, node ${faultyId} has a FAULTY apply` : ''}`,
    );
  }

  async run(): Promise<ControllerSimResult> {
    const w = this.w;
    const onUnhandled = (reason: unknown): void =>
      w.fail('sim-error', `unhandled promise rejection: ${describe(reason)}`);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (const id of w.ids) this.nodes.start(w.nodes.get(id)!);
      w.sched.after(w.rng.intBetween(10, 60), 'chaos', () => this.chaos.chaos());
      this.clients.start();
      w.sched.after(w.rng.intBetween(20, 80), 'scheduler', () => this.workers.pass());
      w.sched.after(this.chaosMs, 'heal', () => this.chaos.heal());
      await drainMicrotasks();
      await this.loop();
    } finally {
      process.off('unhandledRejection', onUnhandled);
      for (const n of w.nodes.values()) {
        n.core?.crash();
        n.clock?.kill();
      }
    }
    this.stats.events = w.sched.events;
    this.stats.virtualMs = Math.round(w.sched.nowMs);
    return {
      seed: this.opts.seed,
      ok: w.violation === undefined,
      error: w.violation,
      trace: this.trace,
      stats: this.stats,
    };
  }

  /** One event at a time, every microtask it caused run before the next, until done or a violation. */
  private async loop(): Promise<void> {
    const w = this.w;
    while (!w.done && w.violation === undefined) {
      const ev = w.sched.next();
      if (ev === undefined) {
        w.fail('liveness', 'no event left to run');
        break;
      }
      if (w.sched.events > SIM_EVENTS_MAX) {
        w.fail('liveness', `more than ${SIM_EVENTS_MAX} events`);
        break;
      }
      try {
        ev.run();
      } catch (e) {
        w.fail('sim-error', `event "${ev.label}" threw ${describe(e)}`);
      }
      await drainMicrotasks();
    }
  }
}

/** Runs one seed. With `trace`, the result carries a readable trace of the whole run. */
export function runControllerSeed(
  seed: number,
  opts: { trace?: boolean; injectNondeterminism?: boolean } = {},
): Promise<ControllerSimResult> {
  return new ControllerSim({
    seed,
    trace: opts.trace ?? false,
    injectNondeterminism: opts.injectNondeterminism ?? false,
  }).run();
}
