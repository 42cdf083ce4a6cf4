// The leader's side of log replication: commitment (the Figure 8 rule), MsgApp with flow control,
// InstallSnapshot when a follower's entries are compacted, the once-per-Ready broadcast, and
// heartbeats. A layer of the Raft class (raft.ts lists them).
import { SnapshotTemporarilyUnavailableError, assert } from './errors.js';
import type { Message } from './message.js';
import { MessageType, newMessage } from './message.js';
import { ProgressState, type Progress } from './progress.js';
import { committedIndex } from './quorum.js';
import { RaftCore, StateType } from './raft-core.js';
import { entryBytes } from './storage.js';
import type { NodeId, Snapshot } from './types.js';

export abstract class RaftReplication extends RaftCore {
  /** Serves (or holds) a ReadIndex request: read-index.ts. */
  protected abstract handleReadIndexRequest(m: Message): void;

  /** The Figure 8 rule (§5.4.2): commit by counting replicas only for an entry of the current term. */
  maybeCommit(): boolean {
    const mci = committedIndex(this.conf.voters, (id) => this.prs.get(id)?.match ?? 0);
    if (mci <= this.log.committed) return false;
    if (this.log.term(mci) !== this.term) return false;
    if (this.pendingConfIndex > this.log.committed && this.pendingConfIndex <= mci) this.commitNewsDue = true;
    this.log.commitTo(mci);
    this.onCommitAdvanced();
    return true;
  }

  private onCommitAdvanced(): void {
    this.pendingBcast = true;
    if (this.pendingReadIndex.length > 0 && this.committedInCurrentTerm()) {
      const reads = this.pendingReadIndex;
      this.pendingReadIndex = [];
      for (const r of reads) this.handleReadIndexRequest(r);
    }
  }

  protected committedInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  /** Sends one MsgApp to `to` if flow control allows. Returns true when entries went out (so a
   * caller may loop to fill the pipeline). */
  private maybeSendAppend(to: NodeId, pr: Progress, sendIfEmpty: boolean): boolean {
    if (pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const ents = prevTerm === undefined ? undefined : this.log.entriesFrom(pr.next, this.cfg.maxSizePerMsgBytes);
    if (prevTerm === undefined || ents === undefined) {
      // The entries this follower needs are compacted: InstallSnapshot (§7).
      this.sendSnapshot(to, pr);
      return false;
    }
    if (ents.length === 0 && !sendIfEmpty) return false;
    const m = newMessage(MessageType.App, this.id, to, this.term);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = ents;
    m.commit = this.log.committed;
    let bytes = 0;
    for (let i = 0; i < ents.length; i++) bytes += entryBytes(ents[i]!);
    const last = prevIndex + ents.length;
    pr.sentEntries(last, ents.length, bytes);
    pr.appendSinceBeat = true;
    this.send(m);
    return ents.length > 0;
  }

  private sendSnapshot(to: NodeId, pr: Progress): void {
    if (!pr.recentActive) return; // retried once the follower answers a heartbeat
    let snap: Snapshot;
    try {
      snap = this.log.snapshot();
    } catch (e) {
      if (e instanceof SnapshotTemporarilyUnavailableError) return;
      throw e;
    }
    assert(snap.meta.index > 0, 'a compacted log has a snapshot');
    pr.becomeSnapshot(snap.meta.index);
    const m = newMessage(MessageType.Snap, this.id, to, this.term);
    m.snapshot = snap;
    this.send(m);
  }

  /**
   * Sends to one follower until its pipeline is full or it has everything. An append with no
   * entries goes only when asked (`sendIfEmpty`: a probe, a transfer), never just to tell a follower
   * that the commit index moved: that news rides on the next append with entries or the next
   * heartbeat (bcastHeartbeat), at most heartbeatTicks later. Under load an append of its own for
   * every commit doubled the messages each way (one empty append per batch, and its answer), and a
   * follower's commit index is not needed for safety or for the leader's answers; it only sets when
   * the follower applies.
   */
  protected sendAppendsTo(to: NodeId, pr: Progress, sendIfEmpty = false): void {
    let sent = this.maybeSendAppend(to, pr, sendIfEmpty);
    // Bounded: each round either advances pr.next or pauses (the window holds maxInflightMsgs).
    for (let i = 0; sent && i < this.cfg.maxInflightMsgs; i++) sent = this.maybeSendAppend(to, pr, false);
  }

  bcastAppend(): void {
    this.pendingBcast = false;
    for (const [id, pr] of this.prs) {
      if (id !== this.id) this.sendAppendsTo(id, pr);
    }
  }

  /** Called once per Ready: broadcast what accumulated since the last one. */
  flush(): void {
    if (this.pendingBcast && this.state === StateType.Leader) this.bcastAppend();
    this.pendingBcast = false;
    if (this.commitNewsDue && this.state === StateType.Leader) this.bcastHeartbeat(this.readOnly.lastPendingCtx());
    this.commitNewsDue = false;
  }

  /**
   * Sends each follower a heartbeat carrying the commit index it may apply. `tick` (the heartbeat
   * timer's round, with no ReadIndex waiting for acknowledgements) skips a follower that is
   * replicating and was sent an append since the last round: that append already kept its election
   * timer from firing and carried a commit index, and its answer shows the leader it is alive; under
   * load a heartbeat and its answer per follower per round only repeated that. The next round with
   * no append in between sends one, so a follower hears the commit index within two rounds.
   */
  protected bcastHeartbeat(ctx: string, tick = false): void {
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const skip = tick && ctx === '' && pr.appendSinceBeat && pr.state === ProgressState.Replicate;
      pr.appendSinceBeat = false;
      if (skip) continue;
      const m = newMessage(MessageType.Heartbeat, this.id, id, this.term);
      // Never tell a follower to commit beyond what it is known to hold.
      m.commit = Math.min(pr.match, this.log.committed);
      m.context = ctx;
      this.send(m);
    }
  }
}
