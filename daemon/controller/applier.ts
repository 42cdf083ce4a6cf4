// The state machine side of the Ready loop: applies committed entries to the controller state in
// order, answers the proposals waiting on them, serves the reads whose index is applied, and keeps
// the membership in force. While a snapshot is being encoded, entries are still applied: the jobs
// each one changes are first handed to the encoder, which writes them as they were at the
// snapshot's index (copy-on-write, statemachine/snapshot.ts); an entry whose changes cannot be told
// (a configuration) and those after it are held and applied once it is done (`hold`/`release`).

import type { RawNode } from '../../raft/rawnode.js';
import { ConfChangeType, decodeConfChange } from '../../raft/confchange.js';
import type { ReadState } from '../../raft/readonly.js';
import { EntryType, type ConfState, type Entry, type Snapshot } from '../../raft/types.js';
import type { apply as applyFact } from '../../statemachine/apply.js';
import type { ApplyResult } from '../../statemachine/facts.js';
import { emptyState, type ControllerState, type Job } from '../../statemachine/state.js';
import { jobsTouched } from '../../statemachine/apply.js';
import { decodeFact, WireError } from '../../statemachine/facts-codec.js';
import type { Fact } from '../../statemachine/facts.js';
import { restore, type SnapshotEncoder } from '../../statemachine/snapshot.js';
import type { Logger } from '../log.js';
import type { Listeners } from './listeners.js';
import type { AccountingPort, ClockPort } from './ports.js';
import type { Waiters } from './waiters.js';

/** What was applied, in order; each fact of a BatchFact on its own, with the batch's index. */
export type AppliedBatch = ReadonlyArray<{ index: number; result: ApplyResult }>;

export interface ApplierOptions {
  readonly raw: RawNode;
  readonly waiters: Waiters;
  readonly apply: typeof applyFact;
  readonly clock: ClockPort;
  readonly log: Pick<Logger, 'info'>;
  readonly onApplied: Listeners<[AppliedBatch]>;
  /** The membership or the controllers' addresses may have changed: relink the peers. */
  readonly membershipChanged: () => void;
  /** Takes the jobs CleanFacts remove (the accounting store); none: they are only dropped. */
  readonly accounting?: AccountingPort;
}

export class Applier {
  state: ControllerState;
  /** The last index the state reflects. */
  applied: number;
  /** The membership in force at `applied` (what the next snapshot records). */
  conf: ConfState;
  private holding = false;
  private held: Entry[] = [];
  /** The encoder of a snapshot being written while entries are still applied (copy-on-write). */
  private encoding: SnapshotEncoder | null = null;
  /** Membership changes among `held` already in force in Raft (see apply). */
  private readonly confAppliedEarly = new Set<number>();
  private readyReads: ReadState[] = [];

  constructor(
    private readonly o: ApplierOptions,
    start: { state: ControllerState; index: number; conf: ConfState },
  ) {
    this.state = start.state;
    this.applied = start.index;
    this.conf = start.conf;
  }

  /** Committed entries not applied yet because a snapshot is being encoded. */
  get heldCount(): number {
    return this.held.length;
  }

  /**
   * Applies committed entries, or holds them while a snapshot is encoded. A held membership change
   * still takes effect in Raft at once: Raft counts it applied when it hands it out and would
   * otherwise accept the next change before this one is in force. The state machine gets it in
   * order with the rest.
   */
  apply(entries: readonly Entry[]): void {
    if (this.holding) {
      for (const e of entries) {
        if (e.index <= this.applied) continue;
        if (e.type === EntryType.ConfChange) {
          this.applyConfChange(e);
          this.confAppliedEarly.add(e.index);
        }
        this.held.push(e);
      }
      return;
    }
    const results: Array<{ index: number; result: ApplyResult }> = [];
    let confChanged = false;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.index <= this.applied) continue;
      let result: ApplyResult;
      if (e.type === EntryType.ConfChange) {
        if (!this.confAppliedEarly.delete(e.index)) this.applyConfChange(e);
        confChanged = true;
        result = { kind: 'noop' };
      } else {
        let fact: Uint8Array | Fact = e.data;
        if (this.encoding !== null) {
          // A snapshot is being written: the jobs this fact changes are kept as they were first.
          const touched = touchedBy(e.data);
          if (touched === null) {
            // Which jobs it changes cannot be told: it and what follows wait for the snapshot.
            this.holding = true;
            this.apply(entries.slice(i));
            break;
          }
          fact = touched.fact;
          for (const id of touched.ids) {
            const job = this.state.jobs.get(id);
            if (job !== undefined) this.encoding.preserve(job);
          }
        }
        const removed: Job[] = [];
        result = this.o.apply(this.state, fact, e.index, removed);
        if (removed.length > 0) this.o.accounting?.record(e.index, this.state.logTimeMs, removed);
      }
      this.applied = e.index;
      // A batch's facts are heard one by one (same index); its proposer gets the batch's result.
      if (result.kind === 'batch') for (const r of result.results) results.push({ index: e.index, result: r });
      else results.push({ index: e.index, result });
      this.o.waiters.applied(e.index, e.term, result);
    }
    // A config change may have moved controller addresses.
    if (confChanged || results.some((r) => r.result.kind === 'configApplied')) this.o.membershipChanged();
    if (results.length > 0) this.o.onApplied.emit(results);
  }

  private applyConfChange(e: Entry): void {
    const cc = decodeConfChange(e.data);
    this.conf = this.o.raw.applyConfChange(cc);
    this.o.log.info('membership changed', {
      change: ConfChangeType[cc.type],
      node: cc.nodeId,
      voters: this.conf.voters,
      learners: this.conf.learners,
    });
  }

  /**
   * A snapshot of the state is being encoded. With its encoder, entries go on being applied, each
   * job a fact changes handed to `encoder.preserve` first (copy-on-write), except from an entry
   * whose changes cannot be told (a configuration) on: that one and the rest wait in `held`.
   * Without one the state is frozen: every entry waits in `held`.
   */
  hold(encoder?: SnapshotEncoder): void {
    if (encoder === undefined) this.holding = true;
    else {
      encoder.announceChanges();
      this.encoding = encoder;
    }
  }

  /** The snapshot is encoded: applies what was held, in order, and serves the reads that waited on it. */
  release(): void {
    this.holding = false;
    this.encoding = null;
    const held = this.held;
    this.held = [];
    if (held.length > 0) this.apply(held);
    this.serveReads();
  }

  /** Replaces the state with a snapshot received from the leader (already stored). */
  installSnapshot(snap: Snapshot, storeMs: number): void {
    const t0 = this.o.clock.now();
    // The jobs cleaned between our index and the snapshot's were never applied here (accounting).
    this.o.accounting?.snapshotInstalled(this.applied, snap.meta.index);
    this.state = snap.data.byteLength === 0 ? emptyState() : restore(snap.data);
    this.applied = snap.meta.index;
    this.conf = snap.meta.conf;
    this.o.membershipChanged();
    this.o.log.info('installed a snapshot from the leader', {
      index: snap.meta.index,
      jobs: this.state.jobs.size,
      bytes: snap.data.byteLength,
      storeMs,
      restoreMs: Math.round(this.o.clock.now() - t0),
    });
    this.o.waiters.failThrough(snap.meta.index, 'the log was replaced by a snapshot');
  }

  /** ReadIndex answers of a Ready: each read is served once its index is applied here. */
  addReads(states: readonly ReadState[]): void {
    if (states.length > 0) this.readyReads.push(...states);
    this.serveReads();
  }

  private serveReads(): void {
    if (this.readyReads.length === 0) return;
    const keep: ReadState[] = [];
    for (const rs of this.readyReads) {
      if (rs.index > this.applied) keep.push(rs);
      else this.o.waiters.readDone(rs.ctx);
    }
    this.readyReads = keep;
  }
}

/** An entry's fact and the existing jobs it may change; null when that cannot be told. */
function touchedBy(data: Uint8Array): { fact: Uint8Array | Fact; ids: readonly number[] } | null {
  if (data.length === 0) return { fact: data, ids: [] };
  let fact: Fact;
  try {
    fact = decodeFact(data);
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    return { fact: data, ids: [] }; // apply refuses it and changes nothing
  }
  const ids = jobsTouched(fact);
  return ids === null ? null : { fact, ids };
}
