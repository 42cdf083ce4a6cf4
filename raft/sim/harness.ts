// A small synchronous cluster for scenario tests and the benchmark: every message is delivered at
// once (FIFO), unless a link is cut or a filter drops it. It plays the caller exactly like the
// simulator (persist, send, apply, advance) and runs the same safety checker after every step.
import { decodeConfChange } from '../confchange.js';
import type { RaftConfig } from '../config.js';
import { defaultConfig } from '../config.js';
import type { Message } from '../message.js';
import { MessageType } from '../message.js';
import { SeededRandom } from '../prng.js';
import type { ProposeResult } from '../raft.js';
import { StateType } from '../raft.js';
import type { Ready } from '../rawnode.js';
import { RawNode } from '../rawnode.js';
import type { ReadState } from '../readonly.js';
import { SnapshotAssembler, splitSnapshot } from '../snapshot-chunks.js';
import { MemoryStorage } from '../storage.js';
import type { ConfState, Entry, NodeId } from '../types.js';
import { EntryType } from '../types.js';
import { SafetyChecker, chainHash, storageTerm } from './checker.js';

/** Rounds of delivery stabilize() runs before giving up (a livelock in a test is a bug). */
export const HARNESS_STABILIZE_ROUNDS_MAX = 10_000;
/** Snapshot chunk size in scenarios: tiny, so that snapshots always travel in several chunks. */
export const HARNESS_SNAPSHOT_CHUNK_BYTES = 16;

export class HarnessNode {
  raw: RawNode | undefined;
  alive = true;
  /** Entries this node applied, in order (after a snapshot restore: only those after it). */
  applied: Entry[] = [];
  appliedIndex = 0;
  state = 0;
  readStates: ReadState[] = [];
  assembler = new SnapshotAssembler();
  checkedCommit = 0;
  lastState = StateType.Follower;
  lastTerm = 0;
  constructor(
    readonly id: NodeId,
    readonly storage: MemoryStorage,
    public config: RaftConfig,
  ) {}

  get r(): RawNode {
    if (this.raw === undefined) throw new Error(`node ${this.id} is down`);
    return this.raw;
  }
}

export interface HarnessOptions {
  readonly seed?: number;
  readonly config?: Partial<RaftConfig>;
  /** Persist snapshots by streaming them in chunks (default true). */
  readonly chunkSnapshots?: boolean;
  /** Run the safety checker (default true; the benchmark turns it off). */
  readonly check?: boolean;
  /** Start these nodes from the given storage instead of a fresh bootstrap (paper figures). */
  readonly storages?: ReadonlyMap<NodeId, MemoryStorage>;
}

/** Payload used by scenarios: deterministic from a label, so equal entries have equal bytes. */
export function payload(label: string): Uint8Array {
  return new TextEncoder().encode(label);
}

export class Harness {
  readonly nodes = new Map<NodeId, HarnessNode>();
  readonly checker = new SafetyChecker();
  private readonly rng: SeededRandom;
  private readonly cut = new Set<number>();
  /** Return true to drop a message. */
  filter: ((m: Message) => boolean) | undefined = undefined;
  /** Rewrites a message in flight (after `filter`); used to strip entries from a MsgApp. */
  intercept: ((m: Message) => Message) | undefined = undefined;
  private queue: Message[] = [];
  /** Every message delivered, for assertions on counts (cleared by the test when it wants). */
  delivered: Message[] = [];
  recordDelivered = false;
  private readonly check: boolean;

  constructor(
    voters: readonly NodeId[],
    readonly opts: HarnessOptions = {},
  ) {
    this.rng = new SeededRandom(opts.seed ?? 1);
    this.check = opts.check !== false;
    const conf: ConfState = { voters: [...voters], learners: [] };
    this.checker.onRestored(0, 1, 0);
    for (const id of voters) this.addNode(id, opts.storages?.get(id) ?? MemoryStorage.bootstrap(conf));
  }

  /** Adds a node over the given storage (default: empty, as a brand-new member starts). */
  addNode(id: NodeId, storage: MemoryStorage = new MemoryStorage(), config: Partial<RaftConfig> = {}): HarnessNode {
    const cfg = defaultConfig(id, { ...this.opts.config, ...config, applied: storage.snapshot().meta.index });
    const n = new HarnessNode(id, storage, cfg);
    this.nodes.set(id, n);
    this.boot(n);
    return n;
  }

  private boot(n: HarnessNode): void {
    n.config = { ...n.config, applied: n.storage.snapshot().meta.index };
    n.raw = new RawNode(n.config, n.storage, new SeededRandom(this.rng.nextU32()));
    n.alive = true;
    n.appliedIndex = n.storage.snapshot().meta.index;
    n.state = decodeState(n.storage.snapshot().data);
    n.assembler = new SnapshotAssembler();
    n.checkedCommit = n.raw.raft.log.committed;
    n.lastState = StateType.Follower;
    n.lastTerm = n.raw.raft.term;
  }

  node(id: NodeId): HarnessNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  raft(id: NodeId) {
    return this.node(id).r.raft;
  }

  // ---------------------------------------------------------------- faults

  isolate(id: NodeId): void {
    for (const other of this.nodes.keys()) {
      if (other === id) continue;
      this.cut.add(id * 64 + other);
      this.cut.add(other * 64 + id);
    }
  }

  cutLink(a: NodeId, b: NodeId): void {
    this.cut.add(a * 64 + b);
    this.cut.add(b * 64 + a);
  }

  cutOneWay(from: NodeId, to: NodeId): void {
    this.cut.add(from * 64 + to);
  }

  heal(): void {
    this.cut.clear();
    this.filter = undefined;
    this.intercept = undefined;
  }

  /** Crash: everything not persisted is lost (in this harness a Ready is persisted at once, so
   * what is lost is the node's volatile state and the messages addressed to it). */
  crash(id: NodeId): void {
    const n = this.node(id);
    n.alive = false;
    n.raw = undefined;
  }

  restart(id: NodeId): void {
    const n = this.node(id);
    this.boot(n);
    n.applied = [];
  }

  // ---------------------------------------------------------------- driving

  tick(id: NodeId, times = 1): void {
    for (let i = 0; i < times; i++) {
      const n = this.node(id);
      if (!n.alive) return;
      n.r.tick();
      this.stabilize();
    }
  }

  /** Ticks every live node `times` times, stabilizing after each round. */
  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const n of this.nodes.values()) if (n.alive) n.r.tick();
      this.stabilize();
    }
  }

  campaign(id: NodeId): void {
    this.node(id).r.campaign();
    this.stabilize();
  }

  propose(id: NodeId, data: Uint8Array): ProposeResult {
    const res = this.node(id).r.propose(data);
    this.stabilize();
    return res;
  }

  leader(): NodeId | undefined {
    let best: HarnessNode | undefined;
    for (const n of this.nodes.values()) {
      if (!n.alive || n.r.raft.state !== StateType.Leader) continue;
      if (best === undefined || n.r.raft.term > best.r.raft.term) best = n;
    }
    return best?.id;
  }

  /** Processes Readys and delivers messages until nothing moves. */
  stabilize(): void {
    for (let round = 0; round < HARNESS_STABILIZE_ROUNDS_MAX; round++) {
      let moved = false;
      for (const n of this.nodes.values()) {
        if (n.alive && n.r.hasReady()) {
          this.handleReady(n, n.r.ready());
          moved = true;
        }
      }
      if (this.queue.length > 0) {
        const q = this.queue;
        this.queue = [];
        for (const m of q) this.deliver(m);
        moved = true;
      }
      if (!moved) return;
    }
    throw new Error(`the cluster did not stabilize within ${HARNESS_STABILIZE_ROUNDS_MAX} rounds`);
  }

  private handleReady(n: HarnessNode, rd: Ready): void {
    const raw = n.r;
    if (rd.snapshot !== undefined) n.storage.applySnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      n.storage.append(rd.entries);
      if (this.check) this.checker.onPersisted(n.id, rd.entries, storageTerm(n.storage));
    }
    if (rd.hardState !== undefined) n.storage.setHardState(rd.hardState);
    for (const m of rd.messages) this.send(m);
    if (rd.snapshot !== undefined) {
      n.appliedIndex = rd.snapshot.meta.index;
      n.state = decodeState(rd.snapshot.data);
      n.applied = [];
      if (this.check) this.checker.onRestored(n.id, n.appliedIndex, n.state);
    }
    for (const e of rd.committedEntries) {
      if (e.index <= n.appliedIndex) continue;
      n.appliedIndex = e.index;
      n.applied.push(e);
      if (this.check) {
        n.state = chainHash(n.state, e);
        this.checker.onApplied(n.id, e, n.state);
      }
      if (e.type === EntryType.ConfChange) raw.applyConfChange(decodeConfChange(e.data));
    }
    for (const rs of rd.readStates) n.readStates.push(rs);
    raw.advance(rd);
    this.afterStep(n);
  }

  private afterStep(n: HarnessNode): void {
    if (!this.check || n.raw === undefined) return;
    const r = n.raw.raft;
    r.checkInvariants();
    if (r.log.committed > n.checkedCommit) {
      this.checker.onCommitted(n.id, r.log, n.checkedCommit, r.log.committed, r.term);
      n.checkedCommit = r.log.committed;
    }
    if (r.state === StateType.Leader && (n.lastState !== StateType.Leader || n.lastTerm !== r.term)) {
      this.checker.onLeader(n.id, r.term, r.log);
    }
    n.lastState = r.state;
    n.lastTerm = r.term;
  }

  private send(m: Message): void {
    if (this.cut.has(m.from * 64 + m.to)) return;
    if (this.filter !== undefined && this.filter(m)) return;
    this.queue.push(this.intercept === undefined ? m : this.intercept(m));
  }

  private deliver(m: Message): void {
    const n = this.nodes.get(m.to);
    if (n === undefined || !n.alive) return;
    if (this.recordDelivered) this.delivered.push(m);
    if (m.type === MessageType.Snap && this.opts.chunkSnapshots !== false) {
      // Stream the snapshot in chunks through the receiver's assembler, as a transport would.
      let whole: Message | undefined;
      for (const c of splitSnapshot(m, HARNESS_SNAPSHOT_CHUNK_BYTES)) {
        const res = n.assembler.add(c);
        if (res !== undefined && typeof res !== 'string') whole = res;
      }
      if (whole === undefined) throw new Error('snapshot reassembly failed');
      n.r.step(whole);
      this.node(m.from).raw?.reportSnapshot(m.to, true);
    } else {
      n.r.step(m);
    }
    this.afterStep(n);
  }

  /** Snapshot node `id`'s state machine at its applied index and compact its log there. */
  compact(id: NodeId, keepEntries = 0): void {
    const n = this.node(id);
    const idx = n.appliedIndex;
    n.storage.createSnapshot(idx, n.r.raft.conf, encodeState(n.state, idx));
    const to = idx - keepEntries;
    if (to > n.storage.firstIndex() - 1) n.storage.compact(to);
  }

  /** (index, term) pairs of a node's log from its first available index. */
  logOf(id: NodeId): string {
    const log = this.raft(id).log;
    const out: string[] = [];
    for (let i = log.firstIndex(); i <= log.lastIndex(); i++) out.push(`${i}:${log.term(i)}`);
    return out.join(' ');
  }
}

function encodeState(state: number, index: number): Uint8Array {
  // The state, then padding so that a snapshot spans several chunks.
  const b = new Uint8Array(8 + 40);
  const v = new DataView(b.buffer);
  v.setUint32(0, state, true);
  v.setUint32(4, index, true);
  return b;
}

function decodeState(data: Uint8Array): number {
  if (data.byteLength < 4) return 0;
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0, true);
}

/** Storage holding a log with the given terms at indexes 1..n (for the paper's figures). */
export function storageWithLog(conf: ConfState, terms: readonly number[], hardTerm: number): MemoryStorage {
  const s = new MemoryStorage();
  s.applySnapshot({ meta: { index: 0, term: 0, conf }, data: new Uint8Array(0) });
  s.append(terms.map((t, i) => ({ index: i + 1, term: t, type: EntryType.Normal, data: payload(`${i + 1}/${t}`) })));
  s.setHardState({ term: hardTerm, vote: 0, commit: 0 });
  return s;
}
