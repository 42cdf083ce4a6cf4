// The simulated controllers' lifecycle: each node's disk and clock skew, starting a ControllerCore
// on its disk (a restart reads back only what was flushed), crashing it (unflushed writes lost),
// fsync timing, the core's log lines in the trace, and its leadership (a new leader may die at once).

import { SeededRandom } from '../../raft/prng.js';
import { snapshot } from '../../statemachine/snapshot.js';
import type { ControllerState } from '../../statemachine/state.js';
import { ControllerCore, type CoreLogger, type PeerAddress } from '../../daemon/controller/core.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from '../../daemon/controller/memory-stores.js';
import type { SnapshotStorePort } from '../../daemon/controller/ports.js';
import type { SimChecks } from './sim-checks.js';
import { SimPeerPort } from './sim-network.js';
import {
  SIM_ELECTION_TICKS,
  SIM_NEW_LEADER_CRASH_CHANCE,
  SIM_PROPOSAL_TIMEOUT_MS,
  SIM_TICK_MS,
  type SimNode,
} from './sim-types.js';
import { describe, safeJson } from './sim-util.js';
import type { SimWorld } from './sim-world.js';
import { NodeClock } from './virtual-clock.js';

/** The seed's snapshot settings, the same on every core. */
export interface SimSnapshotSettings {
  readonly snapshotEveryEntries: number;
  readonly snapshotCatchupEntries: number;
  readonly snapshotSliceJobs: number;
  readonly snapshotSliceMs: number;
}

export class SimNodes {
  constructor(
    private readonly w: SimWorld,
    private readonly checks: SimChecks,
    private readonly settings: SimSnapshotSettings,
  ) {}

  /** Adds a node record per id (each draws its clock skew and fsync latency); `faultyId`'s apply is perturbed. */
  create(seed: number, faultyId: number): void {
    for (const id of this.w.ids) {
      const node: SimNode = {
        id,
        disk: new MemoryDisk({ name: `node ${id}`, onPending: (d) => this.scheduleFlush(node, d) }),
        offsetMs: this.w.rng.intBetween(-50, 50),
        inc: 0,
        phase: 'down',
        core: undefined,
        clock: undefined,
        port: undefined,
        lastState: undefined,
        fsyncMs: this.w.rng.pick([0.2, 1, 3]),
        faulty: id === faultyId ? new SeededRandom(seed ^ (id * 0x9e3779b1)) : undefined,
      };
      this.w.nodes.set(id, node);
    }
  }

  private addresses = (state: ControllerState): readonly PeerAddress[] => {
    const listed = state.config?.cluster.cluster.controllers;
    if (listed !== undefined) return listed.map((c) => ({ id: c.id, address: `${c.host}:${c.port}` }));
    return this.w.ids.map((id) => ({ id, address: `127.0.0.1:${7100 + id}` }));
  };

  private scheduleFlush(node: SimNode, disk: MemoryDisk): void {
    const gen = disk.generation;
    this.w.sched.after(node.fsyncMs * (0.5 + this.w.rng.nextFloat()), `fsync n${node.id}`, () => {
      if (disk.generation === gen) disk.flush();
    });
  }

  /** Opens a core on the node's disk; once it is open (and still this incarnation), starts it. */
  start(n: SimNode): void {
    n.inc++;
    const inc = n.inc;
    n.phase = 'opening';
    n.lastState = undefined;
    const clock = new NodeClock(this.w.sched, `n${n.id}`, n.offsetMs);
    const port = new SimPeerPort(this.w.net, n.id);
    n.clock = clock;
    n.port = port;
    const logStore = MemoryLogStore.open(n.disk);
    const snapshots = this.watchSnapshots(n, MemorySnapshotStore.open(n.disk));
    const log = this.coreLogger(n.id);
    this.w.log(`n${n.id} START (${n.disk.describe()})`);
    ControllerCore.open({
      id: n.id,
      log,
      logStore,
      snapshots,
      peers: port,
      clock,
      seed: this.w.rng.nextU32(),
      bootstrapVoters: this.w.ids,
      addresses: this.addresses,
      dataDir: `memory:node-${n.id}`,
      tick_ms: SIM_TICK_MS,
      electionTicks: SIM_ELECTION_TICKS,
      heartbeatTicks: 1,
      proposalTimeout_ms: SIM_PROPOSAL_TIMEOUT_MS,
      ...this.settings,
      apply: (state, fact, index) => this.checks.applyOn(n, state, fact, index),
    }).then(
      (core) => this.opened(n, inc, core),
      (err: unknown) => {
        if (n.inc !== inc) return;
        this.w.fail('recovery', `node ${n.id} could not start from its disk (${n.disk.describe()}): ${describe(err)}`);
      },
    );
  }

  private opened(n: SimNode, inc: number, core: ControllerCore): void {
    if (n.inc !== inc) {
      core.crash();
      return;
    }
    n.core = core;
    n.phase = 'up';
    core.onLeadership((leader, term) => this.onLeadership(n, leader, term));
    core.onFatal((err) => this.w.fail('fatal', `node ${n.id} fail-stopped: ${err.message}`));
    // The state it recovered (a restored snapshot, replayed later) must be what the others had.
    const st = core.state;
    n.lastState = st;
    if (st.appliedIndex > 0) {
      this.w.stats.restores++;
      this.checks.compareEncoded(n, st.appliedIndex, snapshot(st), 'restored at start');
    }
    core.start();
    this.w.log(`n${n.id} UP at applied ${st.appliedIndex}`);
  }

  private coreLogger(id: number): CoreLogger {
    const line = (level: string) => (msg: string, fields?: object) => {
      if (this.w.traceOn) this.w.log(`n${id} ${level} ${msg}${fields === undefined ? '' : ` ${safeJson(fields)}`}`);
    };
    return { debug: () => undefined, info: line('info'), warn: line('WARN'), error: line('ERROR') };
  }

  /** Every snapshot a node stores (its own or the leader's) is compared with what the others held. */
  private watchSnapshots(n: SimNode, store: MemorySnapshotStore): SnapshotStorePort {
    return {
      latestMeta: () => store.latestMeta(),
      readAll: () => store.readAll(),
      close: () => store.close(),
      save: (meta, data) => {
        if (data.byteLength > 0) {
          this.w.stats.snapshotsStored++;
          this.checks.compareEncoded(n, meta.index, data, `snapshot stored at ${meta.index}`);
        }
        return store.save(meta, data);
      },
    };
  }

  /** Power loss on node `n`: its core stops where it is, its disk keeps a prefix of the unflushed writes. */
  crash(n: SimNode, why: string): void {
    if (n.phase === 'down') return;
    this.w.log(`n${n.id} CRASH (${why}; ${n.disk.pendingWrites} writes not flushed)`);
    n.core?.crash();
    n.clock?.kill();
    n.port?.close();
    n.disk.crash(this.w.rng);
    n.core = undefined;
    n.clock = undefined;
    n.port = undefined;
    n.phase = 'down';
    n.inc++;
    this.w.stats.crashes++;
  }

  restart(n: SimNode): void {
    if (n.phase !== 'down') return;
    this.w.stats.restarts++;
    this.start(n);
  }

  private onLeadership(n: SimNode, leader: boolean, term: number): void {
    if (!leader) {
      this.w.log(`n${n.id} steps down (term ${term})`);
      return;
    }
    this.w.stats.elections++;
    this.checks.oneLeaderPerTerm(n.id, term);
    this.w.log(`n${n.id} becomes LEADER of term ${term}`);
    if (!this.w.healed && this.w.rng.chance(SIM_NEW_LEADER_CRASH_CHANCE)) {
      const inc = n.inc;
      this.w.sched.after(this.w.rng.intBetween(1, 30), 'crash new leader', () => {
        if (n.inc === inc && !this.w.healed) this.crash(n, 'a new leader dies at once');
      });
    }
  }
}
