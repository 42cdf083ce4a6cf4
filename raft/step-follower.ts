// The follower's step function and the receiving side of replication: MsgApp (append or reject
// with a conflict hint), heartbeats, InstallSnapshot (restore). A layer of the Raft class (raft.ts
// lists them); candidates use these handlers too when they meet a leader.
import { assert } from './errors.js';
import type { Message } from './message.js';
import { MessageType, newMessage } from './message.js';
import { StateType } from './raft-core.js';
import { RaftLeader } from './step-leader.js';
import type { Snapshot } from './types.js';
import { NONE } from './types.js';

export abstract class RaftFollower extends RaftLeader {
  /** Starts an election (or pre-vote) if this node may: elections.ts. */
  protected abstract hup(transfer: boolean): void;

  protected stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.App:
      case MessageType.Heartbeat:
      case MessageType.Snap:
        // The leader speaks: its election timer restarts, and the follower knows whom to follow.
        this.electionElapsed = 0;
        this.leaderSilentTicks = 0;
        this.followLeader(m.from);
        if (m.type === MessageType.App) this.handleAppendEntries(m);
        else if (m.type === MessageType.Heartbeat) this.handleHeartbeat(m);
        else this.handleSnapshot(m);
        return;
      case MessageType.TransferLeader:
        if (this.lead === NONE) return;
        this.send({ ...m, from: this.id, to: this.lead, term: this.term });
        return;
      case MessageType.TimeoutNow:
        // The leader asks us to take over: campaign at once, skipping pre-vote (thesis §3.10).
        this.hup(true);
        return;
      case MessageType.ReadIndexResp:
        this.readStates.push({ index: m.index, ctx: m.context });
        return;
      default:
        return;
    }
  }

  protected handleAppendEntries(m: Message): void {
    if (m.index < this.log.committed) {
      const r = newMessage(MessageType.AppResp, this.id, m.from, this.term);
      r.index = this.log.committed;
      this.send(r);
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    const r = newMessage(MessageType.AppResp, this.id, m.from, this.term);
    if (lastNew !== undefined) {
      r.index = lastNew;
      this.send(r);
      return;
    }
    // Reject with a hint (§5.3's optimization): the largest index <= m.index whose term is
    // <= m.logTerm; the leader can skip every entry above it in one round trip.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    r.index = m.index;
    r.reject = true;
    r.rejectHint = hint.index;
    r.logTerm = hint.term;
    this.send(r);
  }

  protected handleHeartbeat(m: Message): void {
    // The leader sends commit ≤ what it believes we match. A commit past our last index means we
    // lost persisted state (a wiped data directory): commit nothing, answer, and let the leader's
    // next append be refused so that it probes back and sends a snapshot (etcd panics here).
    if (m.commit <= this.log.lastIndex()) this.log.commitTo(m.commit);
    const r = newMessage(MessageType.HeartbeatResp, this.id, m.from, this.term);
    r.context = m.context;
    this.send(r);
  }

  protected handleSnapshot(m: Message): void {
    const s = m.snapshot;
    assert(s !== undefined, 'MsgSnap carries a snapshot');
    const r = newMessage(MessageType.AppResp, this.id, m.from, this.term);
    r.index = this.restore(s) ? this.log.lastIndex() : this.log.committed;
    this.send(r);
  }

  /** Installs a snapshot from the leader. Returns false when it brings nothing new. */
  private restore(s: Snapshot): boolean {
    if (s.meta.index <= this.log.committed) return false;
    assert(this.state === StateType.Follower, 'only a follower restores a snapshot');
    if (this.log.matchTerm(s.meta.index, s.meta.term)) {
      // Our log already has the snapshot's last entry: just fast-forward the commit index.
      this.log.commitTo(s.meta.index);
      return false;
    }
    this.log.restore(s);
    this.prs.clear();
    this.switchToConfig(s.meta.conf);
    return true;
  }
}
