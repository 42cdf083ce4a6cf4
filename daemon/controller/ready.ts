// The Ready loop: drains the RawNode and does what each Ready asks, in raft/README.md's order:
// persist (snapshot, entries, hard state; one group-committed fsync), send, apply, serve reads,
// note the soft state, advance. Only one Ready is handled at a time; proposals that arrive
// meanwhile join the next one, so one fsync covers many submits.
//
// Departures from the plain order, each safe for a stated reason (see handle()):
// - a leader's appends and heartbeats go out BEFORE its own fsync completes (Raft thesis §10.2.1),
//   and appends of what is proposed while a Ready is in hand go out at once (RawNode.takeAppends);
// - committed entries already durable here are applied before the Ready's new entries are persisted
//   (committed = on a majority's disks);
// - a hard state that only moves the commit index is written with the next durable save, not alone
//   (the commit index is recovered from the leader and raised to the snapshot's index at start);
// - while a snapshot is encoded, committed entries go on being applied and answered (the encoder
//   keeps each job as it was before its first change: applier.ts, snapshotter.ts).

import type { RawNode, Ready, SoftState } from '../../raft/rawnode.js';
import type { MemoryStorage } from '../../raft/storage.js';
import type { Entry, HardState } from '../../raft/types.js';
import { MessageType, type Message } from '../../raft/message.js';
import { StateType } from '../../raft/raft.js';
import type { Applier } from './applier.js';
import { storage } from './errors.js';
import type { Listeners } from './listeners.js';
import type { PeerFrames } from './peer-frames.js';
import type { ClockPort, LogStore, TracePort } from './ports.js';
import type { Snapshotter } from './snapshotter.js';

export interface ReadyLoopOptions {
  readonly raw: RawNode;
  readonly storage: MemoryStorage;
  readonly logStore: LogStore;
  readonly clock: ClockPort;
  readonly frames: PeerFrames;
  readonly applier: Applier;
  readonly snapshotter: Snapshotter;
  /** Seconds a persist that had to be durable (mustSync) took. */
  readonly onFsync: Listeners<[number]>;
  /** Who leads, and this node's role, changed; `term` is the term they hold in (when the Ready was taken). */
  readonly softState: (s: SoftState, term: number) => void;
  /** True while new Readies may be handled (not stopping, stopped, crashed or failed). */
  readonly running: () => boolean;
  /** False once the core crashed or fail-stopped: the Ready in hand is abandoned, not advanced. */
  readonly live: () => boolean;
  readonly fail: (err: unknown) => void;
  /** Opt-in per-hop timestamps (ports.ts TracePort). */
  readonly trace?: TracePort;
}

const NO_ENTRIES: readonly Entry[] = [];

/** What a Ready saves to the log: whether anything, and the hard state with it. */
interface SavePlan {
  readonly save: boolean;
  readonly hardState: HardState | undefined;
}

/** A Ready's messages once a leader's appends went out: those sent after this turn, and after the persist. */
interface EarlySends {
  readonly late: readonly Message[];
  readonly afterApply?: readonly Message[];
}

export class ReadyLoop {
  private looping = false;
  private again = false;
  private done: Promise<void> = Promise.resolve();
  /** This node's role as of the last Ready handed out (for the early send). */
  private role: StateType;
  /** A hard state that only moved the commit index, not yet written: it joins the next save. */
  private unsavedHardState: HardState | undefined;
  /** A leader's early appends are due after this turn (sendAppendsSoon). */
  private appendsScheduled = false;

  constructor(private readonly o: ReadyLoopOptions) {
    this.role = o.raw.status().state;
  }

  /** Something changed in Raft: run the loop (after the current turn), or once more if it runs. */
  kick(): void {
    if (!this.o.running()) return;
    if (this.looping) {
      this.again = true;
      if (this.role === StateType.Leader) this.sendAppendsSoon();
      return;
    }
    this.looping = true;
    this.done = new Promise<void>((resolve) => this.o.clock.defer(() => void this.loop().finally(resolve)));
  }

  /**
   * A leader's appends of what was proposed (or acknowledged) while a Ready is in hand go out after
   * this turn, not after that Ready's fdatasync (RawNode.takeAppends: the leader still counts itself
   * only once its entries are durable, and they are persisted with the next Ready). Once per turn,
   * so the turn's proposals share one MsgApp per follower.
   */
  private sendAppendsSoon(): void {
    if (this.appendsScheduled) return;
    this.appendsScheduled = true;
    this.o.clock.defer(() => {
      this.appendsScheduled = false;
      if (!this.o.live() || !this.o.running()) return;
      for (const m of this.o.raw.takeAppends()) {
        if (this.o.trace !== undefined && m.entries.length > 0)
          this.o.trace.hop('send-app', m.entries[0]!.index, m.entries[m.entries.length - 1]!.index, m.to);
        this.o.frames.send(m);
      }
    });
  }

  /** Resolves once the loop is not running (the Ready in hand, if any, is finished or abandoned). */
  idle(): Promise<void> {
    return this.done;
  }

  private async loop(): Promise<void> {
    const raw = this.o.raw;
    try {
      do {
        this.again = false;
        while (this.o.running() && raw.hasReady()) {
          const rd = raw.ready();
          // The term as of this Ready: while it is persisted, messages go on being stepped and the
          // term may move on, but its soft state belongs to this one.
          const term = raw.status().term;
          await this.handle(rd, term);
          if (!this.o.live()) return;
          raw.advance(rd);
        }
      } while (this.again && this.o.running());
    } catch (err) {
      this.o.fail(err);
    } finally {
      this.looping = false;
    }
  }

  private apply(es: readonly Entry[]): void {
    this.o.applier.apply(es);
    if (this.o.trace !== undefined) traceEntries(this.o.trace, 'applied', es);
  }

  /** One Ready, in the order of the file's header: each step below says why it comes where it does. */
  private async handle(rd: Ready, term: number): Promise<void> {
    const o = this.o;
    const role = rd.softState?.state ?? this.role;
    this.role = role;
    if (o.trace !== undefined) traceReady(o.trace, rd);
    const plan = this.planSave(rd);
    // A leader's appends go out first, before its own write and fdatasync even start: they promise
    // nothing about this node's disk (Raft thesis §10.2.1), and the leader counts itself towards
    // commitment only once advance() reports its entries durable. The followers' write+fsync+ack
    // (the longer of the two paths) so starts before the leader's record is encoded and written.
    // Then the write and fdatasync start, on every node: the work below (the early apply) runs
    // while the disk works. So a commit costs one fsync + one round trip instead of two fsyncs in a
    // row. Votes and append responses (`late`) still wait for the disk.
    const t0 = o.clock.now();
    const sends: EarlySends =
      role === StateType.Leader && rd.messages.length > 0 ? this.sendAppends(rd.messages) : { late: rd.messages };
    let saving: Promise<void> | undefined;
    if (plan.save && rd.snapshot === undefined) {
      saving = this.startSave(plan.hardState, rd.entries, true);
      // Awaited below; this only keeps a failure from being unhandled if the apply throws first.
      saving.catch(() => undefined);
    }
    const applyLater = this.applyDurable(rd);
    if (sends.afterApply !== undefined) this.sendAfterApply(sends.afterApply);
    // 1. Persist.
    const storeMs = await this.persist(rd, plan, saving, t0);
    if (storeMs === null) return;
    // 2. Send: only now, since these messages promise what step 1 made durable.
    for (const m of sends.late) o.frames.send(m);
    if (o.trace !== undefined) traceResponses(o.trace, sends.late);
    // 3. Apply.
    if (rd.snapshot !== undefined) {
      o.applier.installSnapshot(rd.snapshot, storeMs);
      o.snapshotter.installed(rd.snapshot.meta.index);
    }
    if (applyLater.length > 0) this.apply(applyLater);
    // 4. Reads.
    o.applier.addReads(rd.readStates);
    // Leadership changes.
    if (rd.softState !== undefined) o.softState(rd.softState, term);
    await o.snapshotter.maybe();
  }

  /**
   * What to save. A hard state that only moves the commit index (mustSync false) need not be
   * durable: a restarted node learns it again from the leader, and recovery raises it to the
   * snapshot's index (recovery.ts hardStateWith). So it is not written on its own (no fdatasync,
   * none for the next entries to queue behind): it joins the next save that must be durable, as
   * etcd's unsynced hard state does.
   */
  private planSave(rd: Ready): SavePlan {
    if (!rd.mustSync && rd.entries.length === 0 && rd.snapshot === undefined) {
      if (rd.hardState !== undefined) {
        this.unsavedHardState = rd.hardState;
        this.o.storage.setHardState(rd.hardState);
      }
      return { save: false, hardState: undefined };
    }
    if (rd.entries.length > 0 || rd.hardState !== undefined || this.unsavedHardState !== undefined) {
      const hardState = rd.hardState ?? this.unsavedHardState;
      this.unsavedHardState = undefined;
      return { save: true, hardState };
    }
    return { save: false, hardState: undefined };
  }

  /**
   * A leader's early sends. Appends that carry entries first (a follower's fdatasync waits for
   * them); heartbeats and appends that only move the commit index once the answers of this Ready
   * are written (`afterApply`); the rest (`late`) once this node's disk has them.
   */
  private sendAppends(messages: readonly Message[]): EarlySends {
    const trace = this.o.trace;
    const late: Message[] = [];
    let afterApply: Message[] | undefined;
    for (const m of messages) {
      if (m.type === MessageType.App && m.entries.length > 0) {
        if (trace !== undefined)
          trace.hop('send-app', m.entries[0]!.index, m.entries[m.entries.length - 1]!.index, m.to);
        this.o.frames.send(m);
      } else if (m.type === MessageType.App || m.type === MessageType.Heartbeat) (afterApply ??= []).push(m);
      else late.push(m);
    }
    return afterApply === undefined ? { late } : { late, afterApply };
  }

  /**
   * Committed entries this node already holds durably (below this Ready's new entries) are applied
   * now, while the new entries are persisted: a committed entry is on a majority's disks, so its
   * answer need not wait for the next entries' fdatasync (etcd applies alongside the write too).
   * Returns the committed entries left to apply after the persist.
   */
  private applyDurable(rd: Ready): readonly Entry[] {
    const committed = rd.committedEntries;
    if (rd.snapshot !== undefined || committed.length === 0 || (rd.entries.length === 0 && rd.mustSync))
      return committed;
    const firstNew = rd.entries.length > 0 ? rd.entries[0]!.index : Infinity;
    let k = 0;
    while (k < committed.length && committed[k]!.index < firstNew) k++;
    if (k === 0) return committed;
    this.apply(k === committed.length ? committed : committed.slice(0, k));
    return k === committed.length ? NO_ENTRIES : committed.slice(k);
  }

  /** After this turn: the answers of what was just applied are written first. */
  private sendAfterApply(msgs: readonly Message[]): void {
    const o = this.o;
    o.clock.defer(() => {
      if (o.live()) for (const m of msgs) o.frames.send(m);
    });
  }

  /**
   * 1. Persist: a snapshot received, then the entries and hard state (their save started early, or
   * now). Returns the ms the snapshot took to store (0 without one), null once the core is no
   * longer live (the Ready is abandoned).
   */
  private async persist(
    rd: Ready,
    plan: SavePlan,
    started: Promise<void> | undefined,
    t0: number,
  ): Promise<number | null> {
    const o = this.o;
    let storeMs = 0;
    if (rd.snapshot !== undefined) {
      storeMs = await o.snapshotter.persistReceived(rd.snapshot);
      if (!o.live()) return null;
    }
    if (plan.save) {
      const saving = started ?? this.startSave(plan.hardState, rd.entries, false);
      await storage('saving entries and hard state to the log', saving);
      if (!o.live()) return null;
      if (o.trace !== undefined && rd.entries.length > 0) traceEntries(o.trace, 'wal-done', rd.entries);
      if (rd.mustSync) o.onFsync.emit((o.clock.now() - t0) / 1000);
      if (rd.entries.length > 0) o.storage.append(rd.entries);
      if (plan.hardState !== undefined) o.storage.setHardState(plan.hardState);
    }
    return storeMs;
  }

  private startSave(hardState: HardState | undefined, entries: readonly Entry[], startNow: boolean): Promise<void> {
    if (this.o.trace !== undefined && entries.length > 0) traceEntries(this.o.trace, 'wal-start', entries);
    return this.o.logStore.save(hardState, entries, startNow);
  }
}

function traceEntries(
  trace: TracePort,
  hop: 'wal-start' | 'wal-done' | 'applied' | 'ready' | 'commit',
  es: readonly Entry[],
): void {
  if (es.length > 0) trace.hop(hop, es[0]!.index, es[es.length - 1]!.index, 0);
}

/** A Ready taken: its new entries and its committed ones. */
function traceReady(trace: TracePort, rd: Ready): void {
  traceEntries(trace, 'ready', rd.entries);
  traceEntries(trace, 'commit', rd.committedEntries);
}

/** A follower's acknowledgements, sent once its entries are durable. */
function traceResponses(trace: TracePort, sent: readonly Message[]): void {
  for (const m of sent) if (m.type === MessageType.AppResp && !m.reject) trace.hop('send-resp', m.index, m.index, m.to);
}
