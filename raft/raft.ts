// The Raft state machine: one node's view of terms, votes, the log and (on a leader) followers'
// progress. Pure: everything comes in through step()/tick()/propose(), everything goes out as
// messages in `msgs` and state the RawNode turns into a Ready. One step function per role.
// Section numbers refer to the Raft paper (Ongaro & Ousterhout 2014) and Ongaro's thesis.
//
// The class is built in layers, one concept per file, each extending the one before:
//   raft-core.ts (state, roles) → replication.ts (leader → followers) → read-index.ts →
//   transfer.ts (leadership transfer) → step-leader.ts → step-follower.ts (append handling) →
//   elections.ts (campaigns, votes, candidate step) → proposals.ts (proposals, conf changes) →
//   this file: `Raft`, with tick() and step() (term checks, dispatch by role) and the invariants.
import { decodeConfChange } from './confchange.js';
import type { ConfChange } from './confchange.js';
import { assert } from './errors.js';
import type { Message } from './message.js';
import { CAMPAIGN_TRANSFER, MessageType, newMessage } from './message.js';
import { RaftProposals } from './proposals.js';
import { StateType } from './raft-core.js';
import type { Entry } from './types.js';
import { EntryType, NONE } from './types.js';

export { StateType } from './raft-core.js';
export { ProposalError } from './proposal-error.js';
export type { ProposalRefusal, ProposeResult, RequestResult } from './proposal-error.js';

export class Raft extends RaftProposals {
  // ---------------------------------------------------------------- ticks

  tick(): void {
    if (this.state === StateType.Leader) this.tickHeartbeat();
    else this.tickElection();
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTicks) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum) this.step(newMessage(MessageType.CheckQuorum, this.id, this.id, 0));
      // A transfer that did not finish within an election timeout is abandoned (thesis §3.10).
      if (this.state === StateType.Leader && this.leadTransferee !== NONE) this.abortLeaderTransfer();
    }
    if (this.state !== StateType.Leader) return;
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.step(newMessage(MessageType.Beat, this.id, this.id, 0));
    }
  }

  // ---------------------------------------------------------------- step

  step(m: Message): void {
    if (m.term === 0) {
      // Local message.
    } else if (m.term > this.term) {
      if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
        const force = m.context === CAMPAIGN_TRANSFER;
        const inLease = this.cfg.checkQuorum && this.lead !== NONE && this.electionElapsed < this.cfg.electionTicks;
        // Leader lease (thesis §4.2.3): while we hear from a leader, a disruptive candidate (a
        // removed node, or one back from a partition) is ignored, term and all.
        if (inLease && !force) return;
      }
      if (m.type === MessageType.PreVote) {
        // A pre-vote never changes our term.
      } else if (m.type === MessageType.PreVoteResp && !m.reject) {
        // A granted pre-vote carries the future term; we raise ours only when the campaign starts.
      } else if (m.type === MessageType.App || m.type === MessageType.Heartbeat || m.type === MessageType.Snap) {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if (
        (this.cfg.checkQuorum || this.cfg.preVote) &&
        (m.type === MessageType.Heartbeat || m.type === MessageType.App)
      ) {
        // A stale leader (e.g. one whose partition healed) learns the new term from this answer;
        // otherwise, with check-quorum, it would never hear of it and the two would not converge.
        this.send(newMessage(MessageType.AppResp, this.id, m.from, this.term));
      } else if (m.type === MessageType.PreVote) {
        const r = newMessage(MessageType.PreVoteResp, this.id, m.from, this.term);
        r.reject = true;
        this.send(r);
      }
      return;
    }

    // Messages any state handles alike, then the state's own step.
    if (m.type === MessageType.Hup) this.hup(false);
    else if (m.type === MessageType.Vote || m.type === MessageType.PreVote) this.handleVoteRequest(m);
    else if (this.state === StateType.Leader) this.stepLeader(m);
    else if (this.state === StateType.Candidate || this.state === StateType.PreCandidate) this.stepCandidate(m);
    else this.stepFollower(m);
  }

  // ---------------------------------------------------------------- helpers

  /** Decodes a ConfChange entry (helper for callers). */
  static confChangeOf(e: Entry): ConfChange {
    assert(e.type === EntryType.ConfChange, 'confChangeOf on a ConfChange entry');
    return decodeConfChange(e.data);
  }

  // ---------------------------------------------------------------- invariants

  /** Checks the node's internal invariants (LogCabin style); the simulator calls it after every
   * step. Throws RaftInvariantError. */
  checkInvariants(): void {
    const last = this.log.lastIndex();
    assert(this.log.committed <= last, 'committed <= lastIndex');
    assert(this.log.applied <= this.log.committed, 'applied <= committed');
    assert(this.log.firstIndex() - 1 <= this.log.committed, 'compaction never passes the commit index');
    assert(this.log.lastTerm() <= this.term, 'no entry has a term above the current term');
    if (this.state === StateType.Leader) {
      assert(this.lead === this.id && this.vote === this.id, 'a leader voted for itself and leads');
      assert(this.leaderSilentTicks === 0, "a leader's leaderSilentTicks stay 0");
      for (const [, pr] of this.prs) {
        assert(pr.match < pr.next, 'progress: match < next');
        assert(pr.match <= last, 'progress: match <= leader lastIndex');
      }
    } else {
      assert(this.leadTransferee === NONE, 'only a leader transfers leadership');
    }
    if (this.state === StateType.Candidate) assert(this.vote === this.id, 'a candidate voted for itself');
  }
}
