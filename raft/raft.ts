// The Raft state machine: one node's view of terms, votes, the log and (on a leader) followers'
// progress. Pure: everything comes in through step()/tick()/propose(), everything goes out as
// messages in `msgs` and state the RawNode turns into a Ready. One step function per role.
// Section numbers refer to the Raft paper (Ongaro & Ousterhout 2014) and Ongaro's thesis.
import type { RaftConfig } from './config.js';
import { validateConfig } from './config.js';
import type { ConfChange } from './confchange.js';
import { applyToConf, checkConfChange, decodeConfChange, encodeConfChange } from './confchange.js';
import { SnapshotTemporarilyUnavailableError, assert } from './errors.js';
import { RaftLog } from './log.js';
import type { Message } from './message.js';
import { CAMPAIGN_TRANSFER, MessageType, newMessage } from './message.js';
import type { RandomSource } from './prng.js';
import { Progress, ProgressState } from './progress.js';
import { VoteResult, committedIndex, quorumActive, voteResult } from './quorum.js';
import type { ReadState } from './readonly.js';
import { ReadOnly } from './readonly.js';
import type { Storage } from './storage.js';
import { entryBytes } from './storage.js';
import type { ConfState, Entry, NodeId, Snapshot } from './types.js';
import { EntryType, NONE } from './types.js';

export enum StateType {
  Follower = 0,
  PreCandidate = 1,
  Candidate = 2,
  Leader = 3,
}

export type ProposalRefusal =
  /** This node is not the leader; `leaderHint` is the leader it knows of (0 = none known). */
  | 'not-leader'
  /** A leadership transfer is under way; retry on the new leader. */
  | 'transfer-in-progress'
  /** A membership change is still being applied; retry after it. */
  | 'conf-change-pending'
  /** The membership change does not apply to the current configuration (see `detail`). */
  | 'invalid-conf-change'
  /** Too many uncommitted bytes (followers are slow); retry later. */
  | 'overloaded'
  /** The payload exceeds maxProposalBytes. */
  | 'too-large'
  /** Too many ReadIndex requests are waiting; retry later. */
  | 'too-many-reads'
  /** The requested transferee is not a voter of the current configuration. */
  | 'invalid-transferee';

/** A proposal, read or transfer the core refused, with what the caller can do about it. */
export class ProposalError extends Error {
  override readonly name = 'ProposalError';
  constructor(
    readonly reason: ProposalRefusal,
    readonly leaderHint: NodeId,
    detail = '',
  ) {
    super(
      reason === 'not-leader'
        ? `not the leader${leaderHint !== NONE ? `; the leader is node ${leaderHint}` : '; no leader is known yet, retry shortly'}`
        : `refused: ${reason}${detail ? ` (${detail})` : ''}`,
    );
  }
}

export type ProposeResult = { ok: true; index: number; term: number } | { ok: false; error: ProposalError };
export type RequestResult = { ok: true } | { ok: false; error: ProposalError };

const EMPTY_DATA = new Uint8Array(0);

export class Raft {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  term = 0;
  vote: NodeId = NONE;
  lead: NodeId = NONE;
  state = StateType.Follower;
  readonly log: RaftLog;
  conf: ConfState = { voters: [], learners: [] };
  /** Progress of every member (voters and learners), the leader's own included. */
  readonly prs = new Map<NodeId, Progress>();
  /** Outgoing messages, drained by RawNode.ready(). */
  msgs: Message[] = [];
  readStates: ReadState[] = [];

  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  private readonly votes = new Map<NodeId, boolean>();
  leadTransferee: NodeId = NONE;
  /** Index of the latest membership change proposed by this leader (or its last index when it was
   * elected); no new change is accepted until `applied` reaches it. */
  pendingConfIndex = 0;
  uncommittedBytes = 0;
  private readonly readOnly = new ReadOnly();
  /** ReadIndex requests that arrived before this leader committed an entry of its own term. */
  private pendingReadIndex: Message[] = [];
  /** New entries or a new commit index should be broadcast (done in flush(), once per Ready, so
   * that proposals made between two Readys travel in one MsgApp: batching). */
  pendingBcast = false;

  constructor(
    cfg: RaftConfig,
    storage: Storage,
    private readonly rng: RandomSource,
  ) {
    validateConfig(cfg);
    this.id = cfg.id;
    this.cfg = cfg;
    this.log = new RaftLog(storage, cfg.applied);
    const { hardState, conf } = storage.initialState();
    this.switchToConfig(conf);
    if (hardState.term !== 0 || hardState.vote !== NONE || hardState.commit !== 0) {
      assert(
        hardState.commit >= this.log.committed && hardState.commit <= this.log.lastIndex(),
        'persisted commit index lies within the persisted log',
      );
      this.term = hardState.term;
      this.vote = hardState.vote;
      this.log.committed = hardState.commit;
    }
    assert(this.log.applied <= this.log.committed, 'config.applied <= persisted commit index');
    this.becomeFollower(this.term, NONE);
  }

  // ---------------------------------------------------------------- membership

  isVoter(id: NodeId): boolean {
    return this.conf.voters.includes(id);
  }

  /** Only a voter of the current configuration may campaign. */
  promotable(): boolean {
    return this.isVoter(this.id);
  }

  /** Installs a configuration: keeps the progress of members that stay, creates it for new ones. */
  private switchToConfig(conf: ConfState): void {
    this.conf = conf;
    const members = new Set<NodeId>([...conf.voters, ...conf.learners]);
    for (const id of [...this.prs.keys()]) if (!members.has(id)) this.prs.delete(id);
    for (const id of members) {
      const learner = conf.learners.includes(id);
      const pr = this.prs.get(id);
      if (pr !== undefined) {
        pr.isLearner = learner;
        continue;
      }
      const np = new Progress(this.log.lastIndex() + 1, learner, this.cfg.maxInflightMsgs, this.cfg.maxInflightBytes);
      // A new member counts as active so that check-quorum does not trip before it answers.
      np.recentActive = true;
      if (id === this.id) np.match = this.log.lastStableIndex();
      this.prs.set(id, np);
    }
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

  // ---------------------------------------------------------------- roles

  private resetRandomizedElectionTimeout(): void {
    this.randomizedElectionTimeout = this.cfg.electionTicks + this.rng.intBelow(this.cfg.electionTicks);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      assert(term > this.term, 'terms only increase');
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.abortLeaderTransfer();
    this.votes.clear();
    const last = this.log.lastIndex();
    for (const [id, pr] of this.prs) {
      const np = new Progress(last + 1, pr.isLearner, this.cfg.maxInflightMsgs, this.cfg.maxInflightBytes);
      if (id === this.id) np.match = this.log.lastStableIndex();
      this.prs.set(id, np);
    }
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.readOnly.reset();
    this.pendingReadIndex = [];
    this.pendingBcast = false;
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.state = StateType.Follower;
    this.lead = lead;
  }

  private becomePreCandidate(): void {
    assert(this.state !== StateType.Leader, 'a leader never becomes pre-candidate');
    // Pre-vote does not change the term or the vote (thesis §9.6).
    this.state = StateType.PreCandidate;
    this.votes.clear();
    this.lead = NONE;
  }

  private becomeCandidate(): void {
    assert(this.state !== StateType.Leader, 'a leader never becomes candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = StateType.Candidate;
  }

  private becomeLeader(): void {
    assert(this.state === StateType.Candidate, 'only a candidate becomes leader');
    this.reset(this.term);
    this.lead = this.id;
    this.state = StateType.Leader;
    const self = this.prs.get(this.id);
    if (self !== undefined) self.becomeReplicate();
    // No membership change until everything up to the election is applied (the single-server
    // change fix: the new leader must first commit an entry of its own term).
    this.pendingConfIndex = this.log.lastIndex();
    // §5.4.2 / §8: a no-op of the new term lets the leader commit earlier entries and learn the
    // commit index (needed before serving ReadIndex).
    this.appendEntry(EntryType.Normal, EMPTY_DATA);
  }

  // ---------------------------------------------------------------- ticks

  tick(): void {
    if (this.state === StateType.Leader) this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
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

  // ---------------------------------------------------------------- elections

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

  private hup(transfer: boolean): void {
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

  // ---------------------------------------------------------------- step

  private send(m: Message): void {
    assert(m.to !== this.id, 'a node never sends a message to itself');
    this.msgs.push(m);
  }

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

    switch (m.type) {
      case MessageType.Hup:
        this.hup(false);
        return;
      case MessageType.Vote:
      case MessageType.PreVote:
        this.handleVoteRequest(m);
        return;
      default:
        break;
    }
    switch (this.state) {
      case StateType.Leader:
        this.stepLeader(m);
        return;
      case StateType.Candidate:
      case StateType.PreCandidate:
        this.stepCandidate(m);
        return;
      default:
        this.stepFollower(m);
    }
  }

  private handleVoteRequest(m: Message): void {
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
      const r = newMessage(respType, this.id, m.from, this.term);
      r.reject = true;
      this.send(r);
    }
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.Beat:
        this.bcastHeartbeat(this.readOnly.lastPendingCtx());
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

  private stepCandidate(m: Message): void {
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

  private stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.App:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppendEntries(m);
        return;
      case MessageType.Heartbeat:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
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

  // ---------------------------------------------------------------- follower handlers

  private handleAppendEntries(m: Message): void {
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

  private handleHeartbeat(m: Message): void {
    // The leader sends commit ≤ what it believes we match. A commit past our last index means we
    // lost persisted state (a wiped data directory): commit nothing, answer, and let the leader's
    // next append be refused so that it probes back and sends a snapshot (etcd panics here).
    if (m.commit <= this.log.lastIndex()) this.log.commitTo(m.commit);
    const r = newMessage(MessageType.HeartbeatResp, this.id, m.from, this.term);
    r.context = m.context;
    this.send(r);
  }

  private handleSnapshot(m: Message): void {
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

  // ---------------------------------------------------------------- leader

  private appendEntry(type: EntryType, data: Uint8Array): Entry {
    const e: Entry = { term: this.term, index: this.log.lastIndex() + 1, type, data };
    this.log.append([e]);
    this.pendingBcast = true;
    return e;
  }

  /** The Figure 8 rule (§5.4.2): commit by counting replicas only for an entry of the current term. */
  maybeCommit(): boolean {
    const mci = committedIndex(this.conf.voters, (id) => this.prs.get(id)?.match ?? 0);
    if (mci <= this.log.committed) return false;
    if (this.log.term(mci) !== this.term) return false;
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

  private committedInCurrentTerm(): boolean {
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
    pr.sentCommit = Math.max(pr.sentCommit, Math.min(this.log.committed, last));
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

  /** Sends to one follower until its pipeline is full or it has everything. */
  private sendAppendsTo(to: NodeId, pr: Progress, sendIfEmpty = false): void {
    let sent = this.maybeSendAppend(to, pr, sendIfEmpty || pr.sentCommit < this.log.committed);
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
  }

  private bcastHeartbeat(ctx: string): void {
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const m = newMessage(MessageType.Heartbeat, this.id, id, this.term);
      // Never tell a follower to commit beyond what it is known to hold.
      m.commit = Math.min(pr.match, this.log.committed);
      m.context = ctx;
      this.send(m);
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
    if (pr.match < this.log.lastIndex() || pr.sentCommit < this.log.committed) this.sendAppendsTo(m.from, pr, true);
    if (this.cfg.readOnlyOption !== 'safe' || m.context === '') return;
    const acks = this.readOnly.recvAck(m.from, m.context);
    if (acks === undefined || !quorumActive(this.conf.voters, (id) => acks.has(id))) return;
    for (const req of this.readOnly.advance(m.context)) this.answerRead(req.from, req.index, req.ctx);
  }

  private answerRead(from: NodeId, index: number, ctx: string): void {
    if (from === this.id) {
      this.readStates.push({ index, ctx });
      return;
    }
    const r = newMessage(MessageType.ReadIndexResp, this.id, from, this.term);
    r.index = index;
    r.context = ctx;
    this.send(r);
  }

  private handleReadIndexRequest(m: Message): void {
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

  private handleTransferLeader(transferee: NodeId): void {
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

  private sendTimeoutNow(to: NodeId): void {
    this.send(newMessage(MessageType.TimeoutNow, this.id, to, this.term));
  }

  abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  // ---------------------------------------------------------------- the caller's requests

  private refuse(reason: ProposalRefusal, detail = ''): { ok: false; error: ProposalError } {
    // A leader that removed itself knows no leader to point to.
    const hint = this.state === StateType.Leader ? (this.prs.has(this.id) ? this.id : NONE) : this.lead;
    return { ok: false, error: new ProposalError(reason, hint, detail) };
  }

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
