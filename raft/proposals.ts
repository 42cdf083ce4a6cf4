// The caller's writes into the core: proposals (with their limits), membership changes (proposed
// one at a time, applied when committed), and the persistence/apply feedback that moves the
// leader's own match and the uncommitted budget. A layer of the Raft class (raft.ts lists them).
import type { ConfChange } from './confchange.js';
import { applyToConf, checkConfChange, encodeConfChange } from './confchange.js';
import { RaftElections } from './elections.js';
import type { ProposalError, ProposeResult } from './proposal-error.js';
import { StateType } from './raft-core.js';
import { entryBytes } from './storage.js';
import type { ConfState, Entry } from './types.js';
import { EntryType, NONE } from './types.js';

export abstract class RaftProposals extends RaftElections {
  private checkCanPropose(bytes: number): { ok: false; error: ProposalError } | undefined {
    if (this.state !== StateType.Leader || !this.prs.has(this.id)) return this.refuse('not-leader');
    if (this.leadTransferee !== NONE) return this.refuse('transfer-in-progress', `to node ${this.leadTransferee}`);
    if (bytes > this.cfg.maxProposalBytes) {
      return this.refuse('too-large', `${bytes} bytes > maxProposalBytes ${this.cfg.maxProposalBytes}`);
    }
    if (this.uncommittedBytes > 0 && this.uncommittedBytes + bytes > this.cfg.maxUncommittedEntriesBytes) {
      return this.refuse('overloaded', `${this.uncommittedBytes} uncommitted bytes`);
    }
    return undefined;
  }

  propose(data: Uint8Array): ProposeResult {
    const refused = this.checkCanPropose(data.byteLength);
    if (refused !== undefined) return refused;
    const e = this.appendEntry(EntryType.Normal, data);
    this.uncommittedBytes += entryBytes(e);
    return { ok: true, index: e.index, term: e.term };
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    const data = encodeConfChange(cc);
    const refused = this.checkCanPropose(data.byteLength);
    if (refused !== undefined) return refused;
    if (this.pendingConfIndex > this.log.applied) {
      return this.refuse('conf-change-pending', `the change at index ${this.pendingConfIndex} is not applied yet`);
    }
    const err = checkConfChange(this.conf, cc);
    if (err !== undefined) return this.refuse('invalid-conf-change', err.message);
    const e = this.appendEntry(EntryType.ConfChange, data);
    this.uncommittedBytes += entryBytes(e);
    this.pendingConfIndex = e.index;
    return { ok: true, index: e.index, term: e.term };
  }

  /**
   * Applies a committed membership change (called by the caller when it applies the entry).
   * A change that does not apply to the current configuration is ignored, identically on every
   * node, since all apply the same sequence of changes from the same starting configuration.
   */
  applyConfChange(cc: ConfChange): ConfState {
    if (checkConfChange(this.conf, cc) !== undefined) return this.conf;
    this.switchToConfig(applyToConf(this.conf, cc));
    if (this.state !== StateType.Leader) return this.conf;
    if (!this.prs.has(this.id)) {
      // A leader that removed itself steps down; the remaining voters elect a new leader.
      this.becomeFollower(this.term, NONE);
      return this.conf;
    }
    if (this.leadTransferee !== NONE && !this.isVoter(this.leadTransferee)) this.abortLeaderTransfer();
    // The quorum changed: an index may now be committed, and new members need the log.
    this.maybeCommit();
    this.pendingBcast = true;
    return this.conf;
  }

  /** Called after the caller persisted entries: the leader counts its own durable log. */
  onPersisted(): void {
    if (this.state !== StateType.Leader) return;
    const self = this.prs.get(this.id);
    if (self === undefined) return;
    if (self.maybeUpdate(this.log.lastStableIndex())) this.maybeCommit();
  }

  /** Committed entries were applied: they no longer count against the uncommitted limit. */
  reduceUncommitted(ents: readonly Entry[]): void {
    if (this.state !== StateType.Leader || this.uncommittedBytes === 0) return;
    let s = 0;
    for (const e of ents) s += entryBytes(e);
    this.uncommittedBytes = Math.max(0, this.uncommittedBytes - s);
  }
}
