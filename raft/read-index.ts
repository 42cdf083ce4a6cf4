// ReadIndex reads (thesis §6.4): the leader records its commit index, confirms its leadership with
// a heartbeat round (or its lease), and hands out ReadStates; a follower forwards the request. A
// layer of the Raft class (raft.ts lists them).
import type { Message } from './message.js';
import { MessageType, newMessage } from './message.js';
import type { RequestResult } from './proposal-error.js';
import { StateType } from './raft-core.js';
import { RaftReplication } from './replication.js';
import type { NodeId } from './types.js';
import { NONE } from './types.js';

export abstract class RaftReadIndex extends RaftReplication {
  protected answerRead(from: NodeId, index: number, ctx: string): void {
    if (from === this.id) {
      this.readStates.push({ index, ctx });
      return;
    }
    const r = newMessage(MessageType.ReadIndexResp, this.id, from, this.term);
    r.index = index;
    r.context = ctx;
    this.send(r);
  }

  protected override handleReadIndexRequest(m: Message): void {
    // Until it has committed an entry of its term a new leader does not know the commit index
    // (thesis §6.4 step 1): hold the read.
    if (!this.committedInCurrentTerm()) {
      if (this.pendingReadIndex.length < this.cfg.maxPendingReadRequests) this.pendingReadIndex.push(m);
      return;
    }
    const index = this.log.committed;
    if (this.cfg.readOnlyOption === 'lease-based' || (this.conf.voters.length === 1 && this.isVoter(this.id))) {
      this.answerRead(m.from, index, m.context);
      return;
    }
    if (this.readOnly.size >= this.cfg.maxPendingReadRequests) return;
    if (this.readOnly.add(index, m.context, m.from, this.id)) this.bcastHeartbeat(m.context);
  }

  readIndex(ctx: string): RequestResult {
    if (this.state === StateType.Leader) {
      if (this.readOnly.size + this.pendingReadIndex.length >= this.cfg.maxPendingReadRequests) {
        return this.refuse('too-many-reads');
      }
      const m = newMessage(MessageType.ReadIndex, this.id, this.id, this.term);
      m.context = ctx;
      this.handleReadIndexRequest(m);
      return { ok: true };
    }
    if (this.lead === NONE || this.state !== StateType.Follower) return this.refuse('not-leader');
    const m = newMessage(MessageType.ReadIndex, this.id, this.lead, this.term);
    m.context = ctx;
    this.send(m);
    return { ok: true };
  }
}
