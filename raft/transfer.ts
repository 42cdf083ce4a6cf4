// Leadership transfer (thesis §3.10): the leader catches the transferee up and sends it
// TimeoutNow; a follower forwards the request to its leader. A layer of the Raft class (raft.ts
// lists them); the abandonment after an election timeout is in raft.ts's tickHeartbeat.
import { MessageType, newMessage } from './message.js';
import type { RequestResult } from './proposal-error.js';
import { StateType } from './raft-core.js';
import { RaftReadIndex } from './read-index.js';
import type { NodeId } from './types.js';
import { NONE } from './types.js';

export abstract class RaftTransfer extends RaftReadIndex {
  protected handleTransferLeader(transferee: NodeId): void {
    const pr = this.prs.get(transferee);
    if (pr === undefined || pr.isLearner || transferee === this.id) return;
    if (this.leadTransferee === transferee) return;
    this.abortLeaderTransfer();
    this.leadTransferee = transferee;
    // The transfer must finish within one election timeout (checked in tickHeartbeat).
    this.electionElapsed = 0;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(transferee);
    else this.sendAppendsTo(transferee, pr, true);
  }

  protected sendTimeoutNow(to: NodeId): void {
    this.send(newMessage(MessageType.TimeoutNow, this.id, to, this.term));
  }

  transferLeader(to: NodeId): RequestResult {
    if (!this.isVoter(to)) return this.refuse('invalid-transferee', `node ${to} is not a voter`);
    if (this.state === StateType.Leader) {
      this.handleTransferLeader(to);
      return { ok: true };
    }
    if (this.lead === NONE) return this.refuse('not-leader');
    const m = newMessage(MessageType.TransferLeader, this.id, this.lead, this.term);
    m.index = to;
    this.send(m);
    return { ok: true };
  }
}
