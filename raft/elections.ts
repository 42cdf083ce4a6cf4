// Elections (§5.2, pre-vote thesis §9.6): the election timer, campaigns, vote requests and their
// answers, and the (pre-)candidate's step function that tallies them. A layer of the Raft class
// (raft.ts lists them).
import type { Message } from './message.js';
import { CAMPAIGN_TRANSFER, MessageType, newMessage } from './message.js';
import { VoteResult, voteResult } from './quorum.js';
import { StateType, successorOf } from './raft-core.js';
import { RaftFollower } from './step-follower.js';
import type { NodeId } from './types.js';
import { EntryType, NONE } from './types.js';

export abstract class RaftElections extends RaftFollower {
  protected tickElection(): void {
    this.electionElapsed++;
    this.leaderSilentTicks++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  /** Whether committed-but-unapplied entries hold a membership change (then we must not campaign:
   * our configuration may be stale). */
  private hasUnappliedConfChange(): boolean {
    if (this.log.committed <= this.log.applied) return false;
    const ents = this.log.slice(
      Math.max(this.log.applied + 1, this.log.firstIndex()),
      this.log.committed + 1,
      Infinity,
    );
    if (ents === undefined) return false;
    for (const e of ents) if (e.type === EntryType.ConfChange) return true;
    return false;
  }

  protected override hup(transfer: boolean): void {
    if (this.state === StateType.Leader) return;
    if (!this.promotable()) return;
    if (this.hasUnappliedConfChange()) return;
    if (this.cfg.preVote && !transfer) this.campaign('pre');
    else this.campaign(transfer ? 'transfer' : 'election');
  }

  private campaign(kind: 'pre' | 'election' | 'transfer'): void {
    let voteTerm: number;
    let type: MessageType;
    if (kind === 'pre') {
      this.becomePreCandidate();
      type = MessageType.PreVote;
      // Ask as if for the next term, without raising ours.
      voteTerm = this.term + 1;
    } else {
      this.becomeCandidate();
      type = MessageType.Vote;
      voteTerm = this.term;
    }
    const respType = type === MessageType.PreVote ? MessageType.PreVoteResp : MessageType.VoteResp;
    if (this.poll(this.id, respType, true) === VoteResult.Won) {
      // A single-voter configuration wins at once.
      if (kind === 'pre') this.campaign('election');
      else this.becomeLeader();
      return;
    }
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const id of this.conf.voters) {
      if (id === this.id) continue;
      const m = newMessage(type, this.id, id, voteTerm);
      m.index = lastIndex;
      m.logTerm = lastTerm;
      if (kind === 'transfer') m.context = CAMPAIGN_TRANSFER;
      this.send(m);
    }
  }

  private poll(id: NodeId, _type: MessageType, granted: boolean): VoteResult {
    if (!this.votes.has(id)) this.votes.set(id, granted);
    return voteResult(this.conf.voters, this.votes);
  }

  protected handleVoteRequest(m: Message): void {
    const pre = m.type === MessageType.PreVote;
    // We can vote for m.from if we already did this term, or have not voted and know no leader;
    // a pre-vote for a future term is granted on the log alone.
    const canVote = this.vote === m.from || (this.vote === NONE && this.lead === NONE) || (pre && m.term > this.term);
    const respType = pre ? MessageType.PreVoteResp : MessageType.VoteResp;
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      // Answer in the candidate's term: a pre-vote grant must carry the future term so the
      // pre-candidate counts it.
      this.send(newMessage(respType, this.id, m.from, m.term));
      if (!pre) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      // The successor of the leader this node follows lost its place by a shorter log (successor
      // first): if this node wins instead, it catches the successor up and hands over (handOffToSuccessor).
      if (
        canVote &&
        this.cfg.successorFirst &&
        this.lead !== NONE &&
        m.from === successorOf(this.lead, this.conf.voters)
      )
        this.successorHandoff = m.from;
      const r = newMessage(respType, this.id, m.from, this.term);
      r.reject = true;
      this.send(r);
    }
  }

  /**
   * A leader just elected in place of the dead leader's successor, which lost only by a shorter log,
   * hands leadership to it (a transfer, thesis §3.10: the successor is caught up, then told to
   * campaign at once), so the leader is where the hosts and clients were told to expect it (the
   * controller after the dead one; raft/README.md "Who leads next"). A transfer that does not finish
   * within an election timeout is abandoned, and this node stays leader.
   */
  private handOffToSuccessor(): void {
    const to = this.successorHandoff;
    this.successorHandoff = NONE;
    if (to === NONE || to === this.id || !this.isVoter(to)) return;
    this.handleTransferLeader(to);
  }

  protected stepCandidate(m: Message): void {
    const myResp = this.state === StateType.PreCandidate ? MessageType.PreVoteResp : MessageType.VoteResp;
    switch (m.type) {
      case MessageType.App:
        this.becomeFollower(m.term, m.from);
        this.handleAppendEntries(m);
        return;
      case MessageType.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case MessageType.PreVoteResp:
      case MessageType.VoteResp: {
        if (m.type !== myResp) return;
        const res = this.poll(m.from, m.type, !m.reject);
        if (res === VoteResult.Won) {
          if (this.state === StateType.PreCandidate) this.campaign('election');
          else {
            this.becomeLeader();
            this.bcastAppend();
            this.handOffToSuccessor();
          }
        } else if (res === VoteResult.Lost) {
          // A rejection carries our own term (or a higher one handled above).
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      default:
        return;
    }
  }
}
