// The leader's step function and its handlers of followers' answers: append and heartbeat
// responses (flow control, commitment, read acknowledgements), snapshot status, unreachable peers,
// check-quorum. A layer of the Raft class (raft.ts lists them).
import type { Message } from './message.js';
import { MessageType } from './message.js';
import type { Progress } from './progress.js';
import { ProgressState } from './progress.js';
import { quorumActive } from './quorum.js';
import { RaftTransfer } from './transfer.js';
import { NONE } from './types.js';

export abstract class RaftLeader extends RaftTransfer {
  protected stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.Beat:
        this.bcastHeartbeat(this.readOnly.lastPendingCtx(), true);
        return;
      case MessageType.CheckQuorum:
        if (!quorumActive(this.conf.voters, (id) => id === this.id || this.prs.get(id)?.recentActive === true)) {
          // §6.2: a leader that cannot reach a quorum steps down so clients look elsewhere.
          this.becomeFollower(this.term, NONE);
          return;
        }
        for (const [id, pr] of this.prs) if (id !== this.id) pr.recentActive = false;
        return;
      case MessageType.ReadIndex:
        this.handleReadIndexRequest(m);
        return;
      case MessageType.TransferLeader:
        this.handleTransferLeader(m.index);
        return;
      default:
        break;
    }
    const pr = this.prs.get(m.from);
    if (pr === undefined) return;
    switch (m.type) {
      case MessageType.AppResp:
        this.handleAppendResponse(m, pr);
        return;
      case MessageType.HeartbeatResp:
        this.handleHeartbeatResponse(m, pr);
        return;
      case MessageType.SnapStatus:
        if (pr.state !== ProgressState.Snapshot) return;
        if (m.reject) pr.pendingSnapshot = 0;
        pr.becomeProbe();
        // Wait for the follower's answer (or the next heartbeat) before probing.
        pr.probeSent = true;
        return;
      case MessageType.Unreachable:
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        return;
      default:
        return;
    }
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if (m.logTerm > 0) nextProbe = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.sendAppendsTo(m.from, pr);
      }
      return;
    }
    if (!pr.maybeUpdate(m.index)) return;
    if (pr.state === ProgressState.Probe) pr.becomeReplicate();
    else if (pr.state === ProgressState.Snapshot && pr.match >= pr.pendingSnapshot) pr.becomeProbe();
    else if (pr.state === ProgressState.Replicate) pr.inflights.freeLE(m.index);
    this.maybeCommit();
    this.sendAppendsTo(m.from, pr);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirstOne();
    // A follower behind us gets a MsgApp even if it carries no new entry: if earlier ones were
    // lost, its rejection sends the leader back to probing from where the follower really is.
    // (One that holds every entry learnt the commit index from the heartbeat it answers.) While
    // replicating, only if it acknowledged nothing since its last heartbeat answer: under load
    // entries are always in flight at a heartbeat, and an empty append (and its answer) at every
    // heartbeat only repeated what the acknowledgements coming in already showed.
    const stalled = pr.match === pr.matchAtHeartbeat;
    pr.matchAtHeartbeat = pr.match;
    if (pr.match < this.log.lastIndex() && (pr.state !== ProgressState.Replicate || stalled))
      this.sendAppendsTo(m.from, pr, true);
    if (this.cfg.readOnlyOption !== 'safe' || m.context === '') return;
    const acks = this.readOnly.recvAck(m.from, m.context);
    if (acks === undefined || !quorumActive(this.conf.voters, (id) => acks.has(id))) return;
    for (const req of this.readOnly.advance(m.context)) this.answerRead(req.from, req.index, req.ctx);
  }
}
