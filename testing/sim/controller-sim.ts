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

import { isDeepStrictEqual } from 'node:util';
import { SeededRandom } from '../../raft/prng.js';
import { apply as realApply } from '../../statemachine/apply.js';
import { encodeFact } from '../../statemachine/facts-codec.js';
import type { ApplyResult, Fact } from '../../statemachine/facts.js';
import { checkStateInvariants, StateInvariantError } from '../../statemachine/invariants.js';
import { restore, snapshot } from '../../statemachine/snapshot.js';
import type { ControllerState } from '../../statemachine/state.js';
import { ControllerCore, type PeerAddress } from '../../daemon/controller/core.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from '../../daemon/controller/memory-stores.js';
import type { SnapshotStorePort } from '../../daemon/controller/ports.js';
import { SimNetwork, SimPeerPort } from './sim-network.js';
import { SimConfig } from './sim-config.js';
import { NodeClock, SimScheduler } from './virtual-clock.js';
import { dispatchFor, jobNameFor, nextRequest, statusFor, type ClientKind, type Request } from './workload.js';

/** Virtual milliseconds per Raft tick of the simulated controllers. */
export const SIM_TICK_MS = 20;
/** Election timeout in ticks (drawn in [5, 10) ticks = 100-200 ms). */
export const SIM_ELECTION_TICKS = 5;
/** Virtual time with faults before everything heals, drawn per seed. */
export const SIM_CHAOS_MS_MIN = 250;
export const SIM_CHAOS_MS_MAX = 900;
/** After healing: a leader, every write answered and all nodes at one applied index within this. */
export const SIM_SETTLE_BOUND_MS = 10_000;
/** A client gives up on an attempt after this long and retries the same sequence elsewhere. */
export const SIM_CLIENT_ATTEMPT_MS_MIN = 60;
export const SIM_CLIENT_ATTEMPT_MS_MAX = 400;
/** A proposal not applied within this fails as unavailable (the core's PROPOSAL_TIMEOUT_MS, scaled to the run). */
export const SIM_PROPOSAL_TIMEOUT_MS = 1_000;
/** Hard cap on events per seed (a livelock would otherwise run forever). */
export const SIM_EVENTS_MAX = 300_000;
/** Trace lines printed with a failure. */
export const SIM_TRACE_LINES_MAX = 300;
/** Probability that a newly elected leader crashes within 30 ms (chaos phase only). */
export const SIM_NEW_LEADER_CRASH_CHANCE = 0.1;

export type ViolationKind =
  | 'state-invariant'
  | 'result-divergence'
  | 'replica-divergence'
  | 'retry-result'
  | 'duplicate-apply'
  | 'lost-write'
  | 'election-safety'
  | 'fatal'
  | 'recovery'
  | 'liveness'
  | 'sim-error';

export class ControllerSimViolation extends Error {
  override readonly name = 'ControllerSimViolation';
  constructor(
    readonly kind: ViolationKind,
    detail: string,
  ) {
    super(`${kind}: ${detail}`);
  }
}

export interface ControllerSimOptions {
  readonly seed: number;
  readonly trace?: boolean;
  /** Give one node an apply that perturbs its state now and then (the checks must catch it). */
  readonly injectNondeterminism?: boolean;
}

export interface ControllerSimStats {
  nodes: number;
  events: number;
  virtualMs: number;
  elections: number;
  crashes: number;
  restarts: number;
  partitions: number;
  applies: number;
  snapshotsStored: number;
  snapshotsInstalled: number;
  restores: number;
  statesCompared: number;
  requests: number;
  attempts: number;
  acked: number;
  duplicateAnswers: number;
  configs: number;
  submitted: number;
  dispatched: number;
  declined: number;
  finished: number;
  controls: number;
  lostWrites: number;
}

export interface ControllerSimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly error: Error | undefined;
  readonly trace: readonly string[];
  readonly stats: ControllerSimStats;
}

interface SimNode {
  readonly id: number;
  readonly disk: MemoryDisk;
  /** Skew of this node's wall clock (the leader's clock goes into facts). */
  readonly offsetMs: number;
  /** Bumped at every start and crash: callbacks of an older incarnation are ignored. */
  inc: number;
  phase: 'down' | 'opening' | 'up';
  core: ControllerCore | undefined;
  clock: NodeClock | undefined;
  port: SimPeerPort | undefined;
  /** The state object last seen by apply: another object means a restore or an install. */
  lastState: ControllerState | undefined;
  /** fsync latency now (a stall raises it for a while). */
  fsyncMs: number;
  faulty: SeededRandom | undefined;
}

interface Attempt {
  readonly n: number;
  settled: boolean;
}

interface ClientRequest {
  readonly seq: number;
  readonly req: Request;
  attempts: number;
  answered: boolean;
  /** An answer came, but the client acts as if it was lost and sends the sequence again. */
  resendAfterAnswer: boolean;
  current: Attempt | undefined;
}

interface SimClient {
  readonly id: string;
  readonly kind: ClientKind;
  seq: number;
  leaderHint: number;
  open: ClientRequest | undefined;
  /** seq → first answer received. */
  readonly answers: Map<number, ApplyResult>;
}

/** The first application of a (client, sequence): where and what it answered. */
interface FirstApplied {
  readonly index: number;
  readonly result: ApplyResult;
  readonly canon: string;
}

/** JSON with sorted keys: what a client sees of a result, whatever the key order in memory. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return x;
    const o = x as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(o).sort()) out[k] = o[k];
    return out;
  });
}

/** FNV-1a of a fact's bytes, for finding the client request a committed entry carries. */
function bytesKey(b: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) {
    h ^= b[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return `${h >>> 0}:${b.length}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Lets every pending microtask run (setImmediate fires after the whole microtask queue). */
function drainMicrotasks(): Promise<void> {
  return new Promise<void>((r) => setImmediate(r));
}

/** The simulation of one seed. */
export class ControllerSim {
  private readonly rng: SeededRandom;
  private readonly sched = new SimScheduler();
  private readonly net: SimNetwork;
  private readonly nodes = new Map<number, SimNode>();
  private readonly ids: number[];
  private readonly config: SimConfig;
  private readonly traceOn: boolean;
  readonly trace: string[] = [];
  readonly stats: ControllerSimStats;
  private violation: ControllerSimViolation | undefined;
  private readonly chaosMs: number;
  private healed = false;
  private healAt = 0;
  private done = false;

  // Per-seed settings of the cores.
  private readonly snapshotEveryEntries: number;
  private readonly snapshotCatchupEntries: number;
  private readonly snapshotSliceJobs: number;
  private readonly snapshotSliceMs: number;
  /** A node's state is encoded and compared after applying an index divisible by this. */
  private readonly sampleEvery: number;

  // What the checks remember.
  private readonly resultAt = new Map<number, string>();
  private readonly encodedAt = new Map<number, { node: number; bytes: Uint8Array; what: string }>();
  private readonly leaderOfTerm = new Map<number, number>();
  private readonly factsByKey = new Map<string, Array<{ bytes: Uint8Array; client: string; seq: number }>>();
  private readonly firstApplied = new Map<string, FirstApplied>();

  // Workload.
  private readonly clients: SimClient[] = [];
  private readonly dispatching = new Set<number>();
  private readonly reporting = new Set<number>();

  constructor(private readonly opts: ControllerSimOptions) {
    this.rng = new SeededRandom(opts.seed);
    this.traceOn = opts.trace === true;
    const n = this.rng.chance(0.2) ? 5 : 3;
    this.ids = Array.from({ length: n }, (_, i) => i + 1);
    this.chaosMs = this.rng.intBetween(SIM_CHAOS_MS_MIN, SIM_CHAOS_MS_MAX);
    this.snapshotEveryEntries = this.rng.pick([3, 6, 12, 24]);
    this.snapshotCatchupEntries = this.rng.pick([0, 1, 4, 20]);
    this.snapshotSliceJobs = this.rng.pick([1, 3, 1000]);
    this.snapshotSliceMs = this.rng.pick([0, 0, 1000]);
    this.sampleEvery = this.rng.intBetween(4, 12);
    this.config = new SimConfig(this.ids);
    this.stats = {
      nodes: n,
      events: 0,
      virtualMs: 0,
      elections: 0,
      crashes: 0,
      restarts: 0,
      partitions: 0,
      applies: 0,
      snapshotsStored: 0,
      snapshotsInstalled: 0,
      restores: 0,
      statesCompared: 0,
      requests: 0,
      attempts: 0,
      acked: 0,
      duplicateAnswers: 0,
      configs: 0,
      submitted: 0,
      dispatched: 0,
      declined: 0,
      finished: 0,
      controls: 0,
      lostWrites: 0,
    };
    this.net = new SimNetwork(
      this.sched,
      this.rng,
      (id) => this.nodes.get(id)?.phase === 'up',
      (from, to, frame) => this.deliver(from, to, frame),
    );
    this.net.conditions.maxDelayMs = this.rng.intBetween(2, 8);
    const faultyId = opts.injectNondeterminism ? this.rng.pick(this.ids) : 0;
    for (const id of this.ids) {
      const node: SimNode = {
        id,
        disk: new MemoryDisk({ name: `node ${id}`, onPending: (d) => this.scheduleFlush(node, d) }),
        offsetMs: this.rng.intBetween(-50, 50),
        inc: 0,
        phase: 'down',
        core: undefined,
        clock: undefined,
        port: undefined,
        lastState: undefined,
        fsyncMs: this.rng.pick([0.2, 1, 3]),
        faulty: id === faultyId ? new SeededRandom(opts.seed ^ (id * 0x9e3779b1)) : undefined,
      };
      this.nodes.set(id, node);
    }
    this.clients.push(
      this.newClient('c-admin', 'admin'),
      this.newClient('c-alice', 'alice'),
      this.newClient('c-bob', 'bob'),
    );
    if (this.rng.chance(0.5)) this.clients.push(this.newClient('c-alice2', 'alice'));
    this.log(
      `seed ${opts.seed}: ${n} controllers, chaos ${this.chaosMs} ms, snapshot every ${this.snapshotEveryEntries} entries (keep ${this.snapshotCatchupEntries}, slice ${this.snapshotSliceJobs} jobs / ${this.snapshotSliceMs} ms), compare every ${this.sampleEvery} indexes${faultyId !== 0 ? `, node ${faultyId} has a FAULTY apply` : ''}`,
    );
  }

  private newClient(id: string, kind: ClientKind): SimClient {
    return { id, kind, seq: 0, leaderHint: 0, open: undefined, answers: new Map() };
  }

  private log(line: string): void {
    if (!this.traceOn) return;
    this.trace.push(`${this.sched.nowMs.toFixed(2).padStart(9)}ms ${line}`);
  }

  private fail(kind: ViolationKind, detail: string): void {
    if (this.violation !== undefined) return;
    this.violation = new ControllerSimViolation(kind, detail);
    this.log(`VIOLATION ${this.violation.message}`);
  }

  // ------------------------------------------------------------------ run

  async run(): Promise<ControllerSimResult> {
    const onUnhandled = (reason: unknown): void =>
      this.fail('sim-error', `unhandled promise rejection: ${describe(reason)}`);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (const id of this.ids) this.startNode(this.nodes.get(id)!);
      this.sched.after(this.rng.intBetween(10, 60), 'chaos', () => this.chaos());
      for (const c of this.clients)
        this.sched.after(this.rng.intBetween(1, 40), `client ${c.id}`, () => this.clientNext(c));
      this.sched.after(this.rng.intBetween(20, 80), 'scheduler', () => this.schedulerPass());
      this.sched.after(this.chaosMs, 'heal', () => this.heal());
      await drainMicrotasks();
      while (!this.done && this.violation === undefined) {
        const ev = this.sched.next();
        if (ev === undefined) {
          this.fail('liveness', 'no event left to run');
          break;
        }
        if (this.sched.events > SIM_EVENTS_MAX) {
          this.fail('liveness', `more than ${SIM_EVENTS_MAX} events`);
          break;
        }
        try {
          ev.run();
        } catch (e) {
          this.fail('sim-error', `event "${ev.label}" threw ${describe(e)}`);
        }
        await drainMicrotasks();
      }
    } finally {
      process.off('unhandledRejection', onUnhandled);
      for (const n of this.nodes.values()) {
        n.core?.crash();
        n.clock?.kill();
      }
    }
    this.stats.events = this.sched.events;
    this.stats.virtualMs = Math.round(this.sched.nowMs);
    return {
      seed: this.opts.seed,
      ok: this.violation === undefined,
      error: this.violation,
      trace: this.trace,
      stats: this.stats,
    };
  }

  // ------------------------------------------------------------------ nodes

  private addresses = (state: ControllerState): readonly PeerAddress[] => {
    const listed = state.config?.cluster.cluster.controllers;
    if (listed !== undefined) return listed.map((c) => ({ id: c.id, address: `${c.host}:${c.port}` }));
    return this.ids.map((id) => ({ id, address: `127.0.0.1:${7100 + id}` }));
  };

  private scheduleFlush(node: SimNode, disk: MemoryDisk): void {
    const gen = disk.generation;
    this.sched.after(node.fsyncMs * (0.5 + this.rng.nextFloat()), `fsync n${node.id}`, () => {
      if (disk.generation === gen) disk.flush();
    });
  }

  private startNode(n: SimNode): void {
    n.inc++;
    const inc = n.inc;
    n.phase = 'opening';
    n.lastState = undefined;
    const clock = new NodeClock(this.sched, `n${n.id}`, n.offsetMs);
    const port = new SimPeerPort(this.net, n.id);
    n.clock = clock;
    n.port = port;
    const logStore = MemoryLogStore.open(n.disk);
    const snapshots = this.watchSnapshots(n, MemorySnapshotStore.open(n.disk));
    const log = this.coreLogger(n.id);
    this.log(`n${n.id} START (${n.disk.describe()})`);
    ControllerCore.open({
      id: n.id,
      log,
      logStore,
      snapshots,
      peers: port,
      clock,
      seed: this.rng.nextU32(),
      bootstrapVoters: this.ids,
      addresses: this.addresses,
      dataDir: `memory:node-${n.id}`,
      tick_ms: SIM_TICK_MS,
      electionTicks: SIM_ELECTION_TICKS,
      heartbeatTicks: 1,
      proposalTimeout_ms: SIM_PROPOSAL_TIMEOUT_MS,
      snapshotEveryEntries: this.snapshotEveryEntries,
      snapshotCatchupEntries: this.snapshotCatchupEntries,
      snapshotSliceJobs: this.snapshotSliceJobs,
      snapshotSliceMs: this.snapshotSliceMs,
      apply: (state, fact, index) => this.applyOn(n, state, fact, index),
    }).then(
      (core) => {
        if (n.inc !== inc) {
          core.crash();
          return;
        }
        n.core = core;
        n.phase = 'up';
        core.onLeadership((leader, term) => this.onLeadership(n, leader, term));
        core.onFatal((err) => this.fail('fatal', `node ${n.id} fail-stopped: ${err.message}`));
        // The state it recovered (a restored snapshot, replayed later) must be what the others had.
        const st = core.state;
        n.lastState = st;
        if (st.appliedIndex > 0) {
          this.stats.restores++;
          this.compareEncoded(n, st.appliedIndex, snapshot(st), 'restored at start');
        }
        core.start();
        this.log(`n${n.id} UP at applied ${st.appliedIndex}`);
      },
      (err: unknown) => {
        if (n.inc !== inc) return;
        this.fail('recovery', `node ${n.id} could not start from its disk (${n.disk.describe()}): ${describe(err)}`);
      },
    );
  }

  private coreLogger(id: number): {
    debug(m: string, f?: object): void;
    info(m: string, f?: object): void;
    warn(m: string, f?: object): void;
    error(m: string, f?: object): void;
  } {
    const line = (level: string) => (msg: string, fields?: object) => {
      if (this.traceOn) this.log(`n${id} ${level} ${msg}${fields === undefined ? '' : ` ${safeJson(fields)}`}`);
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
          this.stats.snapshotsStored++;
          this.compareEncoded(n, meta.index, data, `snapshot stored at ${meta.index}`);
        }
        return store.save(meta, data);
      },
    };
  }

  private crash(n: SimNode, why: string): void {
    if (n.phase === 'down') return;
    this.log(`n${n.id} CRASH (${why}; ${n.disk.pendingWrites} writes not flushed)`);
    n.core?.crash();
    n.clock?.kill();
    n.port?.close();
    n.disk.crash(this.rng);
    n.core = undefined;
    n.clock = undefined;
    n.port = undefined;
    n.phase = 'down';
    n.inc++;
    this.stats.crashes++;
  }

  private restart(n: SimNode): void {
    if (n.phase !== 'down') return;
    this.stats.restarts++;
    this.startNode(n);
  }

  private deliver(from: number, to: number, frame: Uint8Array): void {
    const n = this.nodes.get(to);
    if (n?.phase !== 'up' || n.core === undefined) return;
    n.core.receive(from, frame);
  }

  private onLeadership(n: SimNode, leader: boolean, term: number): void {
    if (!leader) {
      this.log(`n${n.id} steps down (term ${term})`);
      return;
    }
    this.stats.elections++;
    const prev = this.leaderOfTerm.get(term);
    if (prev !== undefined && prev !== n.id)
      this.fail('election-safety', `nodes ${prev} and ${n.id} both lead term ${term}`);
    this.leaderOfTerm.set(term, n.id);
    this.log(`n${n.id} becomes LEADER of term ${term}`);
    if (!this.healed && this.rng.chance(SIM_NEW_LEADER_CRASH_CHANCE)) {
      const inc = n.inc;
      this.sched.after(this.rng.intBetween(1, 30), 'crash new leader', () => {
        if (n.inc === inc && !this.healed) this.crash(n, 'a new leader dies at once');
      });
    }
  }

  private up(): SimNode[] {
    const out: SimNode[] = [];
    for (const id of this.ids) {
      const n = this.nodes.get(id)!;
      if (n.phase === 'up') out.push(n);
    }
    return out;
  }

  private leader(): SimNode | undefined {
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

  // ------------------------------------------------------------------ apply and its checks

  /** The node's apply: the real one, then the checks (and the injected fault, when asked). */
  private applyOn(n: SimNode, state: ControllerState, fact: Uint8Array | Fact, index: number): ApplyResult {
    if (state !== n.lastState) {
      // A state this node did not build by applying: restored or installed from the leader.
      n.lastState = state;
      if (state.appliedIndex > 0) {
        this.stats.snapshotsInstalled++;
        this.compareEncoded(n, state.appliedIndex, snapshot(state), 'installed or restored');
      }
    }
    const result = realApply(state, fact, index);
    this.stats.applies++;
    if (n.faulty !== undefined && result.kind === 'submitted' && n.faulty.chance(0.3)) {
      // The injected non-determinism: this node records a submit time one millisecond early.
      const job = state.jobs.get(result.jobId) as { submitTimeMs: number } | undefined;
      if (job !== undefined) job.submitTimeMs -= 1;
    }
    try {
      checkStateInvariants(state);
    } catch (e) {
      if (!(e instanceof StateInvariantError)) throw e;
      this.fail('state-invariant', `node ${n.id} after applying index ${index}: ${e.message}`);
    }
    const canon = canonical(result);
    const known = this.resultAt.get(index);
    if (known === undefined) this.resultAt.set(index, canon);
    else if (known !== canon)
      this.fail(
        'result-divergence',
        `node ${n.id} applied index ${index} with result ${canon}; another node got ${known}`,
      );
    if (fact instanceof Uint8Array && fact.length > 0) this.noteClientFact(n, fact, index, result, canon);
    if (index % this.sampleEvery === 0) this.compareEncoded(n, index, snapshot(state), `applied ${index}`);
    return result;
  }

  /** A committed entry that carries a client request: a retry of a sequence answers the first result. */
  private noteClientFact(n: SimNode, bytes: Uint8Array, index: number, result: ApplyResult, canon: string): void {
    const list = this.factsByKey.get(bytesKey(bytes));
    const f = list?.find((x) => sameBytes(x.bytes, bytes));
    if (f === undefined) return;
    const key = `${f.client}#${f.seq}`;
    const first = this.firstApplied.get(key);
    if (first === undefined) {
      this.firstApplied.set(key, { index, result, canon });
      return;
    }
    if (index < first.index) {
      this.fail(
        'retry-result',
        `node ${n.id} applied ${key} at index ${index}, before its first application at ${first.index} elsewhere`,
      );
    } else if (index > first.index && canon !== first.canon) {
      this.fail(
        'retry-result',
        `node ${n.id}: the retry of ${key} at index ${index} answered ${canon}, its first application at index ${first.index} answered ${first.canon}`,
      );
    }
  }

  /** Encoded states at one index must be byte-identical on every node, whatever way they got there. */
  private compareEncoded(n: SimNode, index: number, bytes: Uint8Array, what: string): void {
    this.stats.statesCompared++;
    const known = this.encodedAt.get(index);
    if (known === undefined) {
      this.encodedAt.set(index, { node: n.id, bytes, what });
      return;
    }
    if (sameBytes(known.bytes, bytes)) return;
    this.fail(
      'replica-divergence',
      `at index ${index} node ${n.id} (${what}) and node ${known.node} (${known.what}) hold different states: ${explainDifference(known.bytes, bytes)}`,
    );
  }

  // ------------------------------------------------------------------ clients

  private clientNext(c: SimClient): void {
    if (this.healed || c.open !== undefined) return;
    c.seq++;
    const view = this.up()[0]?.core?.state;
    const req = nextRequest(c.kind, this.rng, jobNameFor(c.id, c.seq), this.config, view, c.seq);
    c.open = { seq: c.seq, req, attempts: 0, answered: false, resendAfterAnswer: false, current: undefined };
    this.stats.requests++;
    this.log(`${c.id} request ${c.seq}: ${req.label}`);
    this.attempt(c);
  }

  /** Sends the open request (same client, same sequence) to the node the client thinks leads. */
  private attempt(c: SimClient): void {
    const r = c.open;
    if (r === undefined) return;
    const up = this.up();
    const hinted = this.nodes.get(c.leaderHint);
    const target =
      hinted?.phase === 'up' && this.rng.chance(0.85) ? hinted : up.length > 0 ? this.rng.pick(up) : undefined;
    r.attempts++;
    this.stats.attempts++;
    const a: Attempt = { n: r.attempts, settled: false };
    r.current = a;
    if (target === undefined) {
      this.retryLater(c, r, a, 'no controller is up');
      return;
    }
    const fact: Fact = { clientId: c.id, sequence: r.seq, timeMs: target.clock!.now(), body: r.req.body };
    const bytes = encodeFact(fact);
    const key = bytesKey(bytes);
    let list = this.factsByKey.get(key);
    if (list === undefined) this.factsByKey.set(key, (list = []));
    if (!list.some((x) => sameBytes(x.bytes, bytes))) list.push({ bytes, client: c.id, seq: r.seq });
    this.sched.after(
      this.rng.intBetween(SIM_CLIENT_ATTEMPT_MS_MIN, SIM_CLIENT_ATTEMPT_MS_MAX),
      `client ${c.id} timeout`,
      () => {
        if (a.settled || r.current !== a || r.answered) return;
        a.settled = true;
        this.log(`${c.id} request ${r.seq} attempt ${a.n} timed out`);
        this.attempt(c);
      },
    );
    target.core!.propose(bytes).then(
      (result) => this.answered(c, r, a, target.id, result),
      (err: unknown) => {
        const hint = (err as { leaderId?: number }).leaderId;
        if (typeof hint === 'number' && hint !== 0) c.leaderHint = hint;
        if (a.settled || r.current !== a) return;
        this.retryLater(c, r, a, `n${target.id}: ${describe(err)}`);
      },
    );
  }

  private retryLater(c: SimClient, r: ClientRequest, a: Attempt, why: string): void {
    a.settled = true;
    if (this.traceOn) this.log(`${c.id} request ${r.seq} attempt ${a.n} refused (${why}); retrying`);
    this.sched.after(this.rng.intBetween(5, 40), `client ${c.id} retry`, () => {
      if (r.current === a && !r.answered) this.attempt(c);
    });
  }

  /** An answer, possibly to an attempt the client already gave up on: still checked. */
  private answered(c: SimClient, r: ClientRequest, a: Attempt, from: number, result: ApplyResult): void {
    const key = `${c.id}#${r.seq}`;
    const first = this.firstApplied.get(key);
    const canon = canonical(result);
    if (first === undefined) {
      this.fail('retry-result', `${key} was answered ${canon} by node ${from} but never applied anywhere`);
      return;
    }
    if (first.canon !== canon) {
      this.fail(
        'retry-result',
        `${key} attempt ${a.n} was answered ${canon} by node ${from}; its first application (index ${first.index}) answered ${first.canon}`,
      );
      return;
    }
    const prev = c.answers.get(r.seq);
    if (prev !== undefined) {
      this.stats.duplicateAnswers++;
      if (!isDeepStrictEqual(JSON.parse(canonical(prev)), JSON.parse(canon)))
        this.fail('retry-result', `${key} answered ${canon}, earlier ${canonical(prev)}`);
    } else c.answers.set(r.seq, result);
    c.leaderHint = from;
    this.log(
      `${c.id} request ${r.seq} answered by n${from}: ${canon.length > 160 ? `${canon.slice(0, 160)}...` : canon}`,
    );
    if (r.answered) return;
    // Now and then the answer is "lost" on its way and the client sends the same sequence again.
    if (!r.resendAfterAnswer && !this.healed && this.rng.chance(0.15)) {
      r.resendAfterAnswer = true;
      a.settled = true;
      this.log(`${c.id} request ${r.seq}: the answer is lost, the client sends it again`);
      this.sched.after(this.rng.intBetween(1, 30), `client ${c.id} resend`, () => this.attempt(c));
      return;
    }
    r.answered = true;
    a.settled = true;
    this.stats.acked++;
    this.countResult(result);
    c.open = undefined;
    if (!this.healed) this.sched.after(this.rng.intBetween(5, 80), `client ${c.id}`, () => this.clientNext(c));
  }

  private countResult(r: ApplyResult): void {
    if (r.kind === 'configApplied') this.stats.configs++;
    else if (r.kind === 'submitted') this.stats.submitted++;
    else if (r.kind === 'controlled') this.stats.controls++;
  }

  // ------------------------------------------------------------------ scheduler and workers (leader facts)

  private schedulerPass(): void {
    if (this.healed) return;
    this.sched.after(this.rng.intBetween(15, 60), 'scheduler', () => this.schedulerPass());
    const l = this.leader();
    if (l === undefined) return;
    const state = l.core!.state;
    const now = l.clock!.now();
    let budget = this.rng.intBetween(1, 4);
    for (const job of state.jobs.values()) {
      if (budget === 0) break;
      if (job.state === 'PEND' && !this.dispatching.has(job.id) && this.rng.chance(0.6)) {
        const d = dispatchFor(job, state, this.rng, this.config);
        if (d === undefined) continue;
        budget--;
        this.dispatching.add(job.id);
        this.leaderFact(l, d.body, d.label, now, () => this.dispatching.delete(job.id));
      } else if (job.state === 'RUN' && !this.reporting.has(job.id) && this.rng.chance(0.4)) {
        const s = statusFor(job, this.rng, now);
        budget--;
        this.reporting.add(job.id);
        this.leaderFact(l, s.body, s.label, now, () => this.reporting.delete(job.id));
      }
    }
  }

  private leaderFact(l: SimNode, body: Fact['body'], label: string, timeMs: number, settled: () => void): void {
    this.log(`n${l.id} proposes ${label}`);
    l.core!.propose(encodeFact({ clientId: null, sequence: 0, timeMs, body })).then(
      (r) => {
        settled();
        if (r.kind === 'dispatched') this.stats.dispatched++;
        else if (r.kind === 'declined') this.stats.declined++;
        else if (r.kind === 'statusApplied') this.stats.finished++;
        this.log(`${label}: ${r.kind}${r.kind === 'declined' || r.kind === 'ignored' ? ` (${r.message})` : ''}`);
      },
      () => settled(),
    );
  }

  // ------------------------------------------------------------------ faults

  private chaos(): void {
    if (this.healed) return;
    this.sched.after(this.rng.intBetween(20, 120), 'chaos', () => this.chaos());
    const r = this.rng.intBelow(100);
    const all = this.ids.map((id) => this.nodes.get(id)!);
    const up = this.up();
    const down = all.filter((n) => n.phase === 'down');
    if (r < 7) {
      // Keep a majority up most of the time, so that work gets done between failures.
      if (up.length > 0 && (down.length < Math.floor(all.length / 2) || this.rng.chance(0.2)))
        this.crash(this.rng.pick(up), 'chaos');
    } else if (r < 13) {
      const l = this.leader();
      if (l !== undefined && down.length < Math.floor(all.length / 2)) this.crash(l, 'the leader crashes');
    } else if (r < 30) {
      if (down.length > 0) this.restart(this.rng.pick(down));
    } else if (r < 37) {
      const side = new Set(this.ids.filter(() => this.rng.chance(0.5)));
      this.net.partition(side, this.ids);
      this.stats.partitions++;
      this.log(`PARTITION {${[...side].join(',')}} | rest`);
    } else if (r < 41) {
      const a = this.rng.pick(this.ids);
      const b = this.rng.pick(this.ids);
      if (a !== b) {
        this.net.block(a, b);
        this.log(`ONE-WAY block ${a}->${b}`);
      }
    } else if (r < 52) {
      this.net.healLinks();
      this.log('links healed');
    } else if (r < 60) {
      const c = this.net.conditions;
      c.dropRate = this.rng.pick([0, 0, 0.05, 0.2, 0.4]);
      c.dupRate = this.rng.pick([0, 0.05, 0.2]);
      c.maxDelayMs = this.rng.intBetween(1, 25);
      this.log(`network drop=${c.dropRate} dup=${c.dupRate} maxDelay=${c.maxDelayMs}ms`);
    } else if (r < 66) {
      const n = this.rng.pick(all);
      n.fsyncMs = this.rng.pick([0.2, 1, 3, 30, 120]);
      this.log(`n${n.id} fsync now takes ~${n.fsyncMs} ms`);
    } else if (r < 72) {
      const from = up.length > 0 ? this.rng.pick(up) : undefined;
      const to = this.rng.pick(this.ids);
      if (from !== undefined) {
        try {
          from.core!.transferLeader(to);
          this.log(`n${from.id} transferLeader(${to})`);
        } catch (e) {
          this.log(`n${from.id} transferLeader(${to}) refused: ${describe(e)}`);
        }
      }
    } else if (r < 76) {
      const n = up.length > 0 ? this.rng.pick(up) : undefined;
      if (n !== undefined) {
        const inc = n.inc;
        this.log(`n${n.id} snapshotNow`);
        n.core!.snapshotNow().then(
          (i) => this.log(`n${n.id} snapshot at ${i} stored`),
          (e: unknown) => {
            if (n.inc === inc && n.phase === 'up' && n.core?.fatalError === null)
              this.fail('sim-error', `node ${n.id} snapshotNow failed: ${describe(e)}`);
          },
        );
      }
    }
  }

  // ------------------------------------------------------------------ healing and the end

  private heal(): void {
    this.healed = true;
    this.healAt = this.sched.nowMs;
    this.net.healLinks();
    const c = this.net.conditions;
    c.dropRate = 0;
    c.dupRate = 0;
    c.maxDelayMs = Math.min(c.maxDelayMs, 5);
    for (const n of this.nodes.values()) {
      n.fsyncMs = Math.min(n.fsyncMs, 3);
      if (n.phase === 'down') this.restart(n);
    }
    this.log('HEAL: links repaired, disks fast again, every crashed node restarts; no new requests');
    this.sched.after(SIM_TICK_MS, 'settle', () => this.settle());
  }

  /** After healing: every open request answered, then every node at one applied index. */
  private settle(): void {
    if (this.sched.nowMs - this.healAt > SIM_SETTLE_BOUND_MS) {
      const st = this.ids
        .map((id) => {
          const n = this.nodes.get(id)!;
          if (n.phase !== 'up') return `n${id}:${n.phase}`;
          const s = n.core!.status();
          return `n${id}:t${s.term} lead ${s.lead} commit ${s.commit} applied ${s.appliedIndex} snap ${s.snapshotIndex}`;
        })
        .join(' | ');
      const open = this.clients.filter((c) => c.open !== undefined).map((c) => `${c.id}#${c.open!.seq}`);
      this.fail(
        'liveness',
        `not settled ${SIM_SETTLE_BOUND_MS} ms after healing: ${st}; open requests: ${open.join(', ') || 'none'}`,
      );
      return;
    }
    this.sched.after(SIM_TICK_MS, 'settle', () => this.settle());
    if (this.clients.some((c) => c.open !== undefined) || this.dispatching.size > 0 || this.reporting.size > 0) return;
    const up = this.up();
    if (up.length !== this.ids.length) return;
    const l = this.leader();
    if (l === undefined) return;
    const commit = l.core!.status().commit;
    for (const n of up) {
      const s = n.core!.status();
      if (s.appliedIndex !== commit || s.commit !== commit || s.snapshotJobsLeft !== null) return;
    }
    this.finalChecks(up, commit);
    this.done = true;
  }

  private finalChecks(up: readonly SimNode[], index: number): void {
    this.log(`SETTLED: every node at applied index ${index}`);
    let reference: { id: number; bytes: Uint8Array } | undefined;
    for (const n of up) {
      const bytes = snapshot(n.core!.state);
      this.stats.statesCompared++;
      if (reference === undefined) reference = { id: n.id, bytes };
      else if (!sameBytes(reference.bytes, bytes)) {
        this.fail(
          'replica-divergence',
          `after healing, at index ${index}, nodes ${reference.id} and ${n.id} hold different states: ${explainDifference(reference.bytes, bytes)}`,
        );
        return;
      }
    }
    const state = up[0]!.core!.state;
    // Exactly once: no request created two jobs.
    const byName = new Map<string, number>();
    for (const j of state.jobs.values()) {
      const name = j.spec.jobName;
      if (name === null) continue;
      const prev = byName.get(name);
      if (prev !== undefined) {
        this.fail(
          'duplicate-apply',
          `jobs ${prev} and ${j.id} were both created by request ${name} (a retried submit was applied twice)`,
        );
        return;
      }
      byName.set(name, j.id);
    }
    // Every acknowledged submit is in the final state, under the id its client was told.
    for (const c of this.clients) {
      for (const [seq, r] of c.answers) {
        if (r.kind !== 'submitted') continue;
        const job = state.jobs.get(r.jobId);
        const name = jobNameFor(c.id, seq);
        if (job === undefined || job.spec.jobName !== name) {
          this.stats.lostWrites++;
          this.fail(
            'lost-write',
            `${c.id} request ${seq} was acknowledged as job ${r.jobId}, but the final state ${job === undefined ? 'has no such job' : `holds ${job.spec.jobName} there`}`,
          );
          return;
        }
      }
      const s = state.sessions.get(c.id);
      const last = Math.max(0, ...[...c.answers.keys()]);
      if (last > 0 && (s === undefined || s.lastSequence < last)) {
        this.fail(
          'lost-write',
          `${c.id}'s request ${last} was acknowledged but its session says ${s === undefined ? 'nothing' : `last sequence ${s.lastSequence}`}`,
        );
        return;
      }
    }
  }
}

/** What differs between two encoded states (restored for the report; slow, only on a failure). */
function explainDifference(a: Uint8Array, b: Uint8Array): string {
  let at = 0;
  while (at < a.length && at < b.length && a[at] === b[at]) at++;
  const where = `${a.length} vs ${b.length} bytes, first difference at byte ${at}`;
  try {
    const x = restore(a);
    const y = restore(b);
    const diffs: string[] = [];
    for (const k of ['appliedIndex', 'logTimeMs', 'nextJobId'] as const)
      if (x[k] !== y[k]) diffs.push(`${k} ${x[k]} vs ${y[k]}`);
    if (canonical(x.config?.files ?? null) !== canonical(y.config?.files ?? null))
      diffs.push('configuration files differ');
    for (const [id, j] of x.jobs) {
      const k = y.jobs.get(id);
      if (k === undefined) {
        diffs.push(`job ${id} only in the first`);
        continue;
      }
      for (const f of Object.keys(j) as (keyof typeof j)[]) {
        const u = canonical(j[f]);
        const v = canonical(k[f]);
        if (u !== v) diffs.push(`job ${id}.${f}: ${u.slice(0, 120)} vs ${v.slice(0, 120)}`);
      }
    }
    for (const id of y.jobs.keys()) if (!x.jobs.has(id)) diffs.push(`job ${id} only in the second`);
    for (const [id, s] of x.sessions) {
      const t = y.sessions.get(id);
      if (t === undefined) diffs.push(`session ${id} only in the first`);
      else if (canonical(s) !== canonical(t))
        diffs.push(`session ${id}: ${canonical(s).slice(0, 160)} vs ${canonical(t).slice(0, 160)}`);
    }
    for (const id of y.sessions.keys()) if (!x.sessions.has(id)) diffs.push(`session ${id} only in the second`);
    if (diffs.length === 0) diffs.push('the same values, encoded differently (a non-canonical encoding)');
    return `${where}; ${diffs.slice(0, 8).join('; ')}${diffs.length > 8 ? ` (and ${diffs.length - 8} more)` : ''}`;
  } catch (e) {
    return `${where} (could not restore them to compare: ${describe(e)})`;
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) =>
      x instanceof Uint8Array ? `<${x.byteLength} bytes>` : typeof x === 'bigint' ? String(x) : x,
    );
  } catch {
    return String(v);
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
