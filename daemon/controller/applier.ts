// The state machine side of the Ready loop: applies committed entries to the controller state in
// order, answers the proposals waiting on them, serves the reads whose index is applied, and keeps
// the membership in force. While a snapshot is being encoded, entries are still applied, every
// kind of them: the encoder keeps each job as it was before it first changes (copy-on-write through
// statemachine/state.ts editJob, the only way to change a job) and wrote the rest of the state at
// its start (statemachine/snapshot.ts).

import type { RawNode } from '../../raft/rawnode.js';
import { ConfChangeType, decodeConfChange } from '../../raft/confchange.js';
import type { ReadState } from '../../raft/readonly.js';
import { EntryType, type ConfState, type Entry, type Snapshot } from '../../raft/types.js';
import type { apply as applyFact } from '../../statemachine/apply.js';
import type { ApplyResult } from '../../statemachine/facts.js';
import { emptyState, type ControllerState, type Job } from '../../statemachine/state.js';
import { restore } from '../../statemachine/snapshot.js';
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
  private readyReads: ReadState[] = [];

  constructor(
    private readonly o: ApplierOptions,
    start: { state: ControllerState; index: number; conf: ConfState },
  ) {
    this.state = start.state;
    this.applied = start.index;
    this.conf = start.conf;
  }

  /** Applies committed entries in order (those at or below `applied` are skipped). */
  apply(entries: readonly Entry[]): void {
    const results: Array<{ index: number; result: ApplyResult }> = [];
    let confChanged = false;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.index <= this.applied) continue;
      let result: ApplyResult;
      if (e.type === EntryType.ConfChange) {
        this.applyConfChange(e);
        confChanged = true;
        result = { kind: 'noop' };
      } else {
        const removed: Job[] = [];
        result = this.o.apply(this.state, e.data, e.index, removed);
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
