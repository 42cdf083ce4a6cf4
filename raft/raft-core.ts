// The bottom layer of the Raft class: one node's state (term, vote, role, log, membership,
// followers' progress, outgoing messages), its construction from storage, configuration switches,
// the role transitions (becomeFollower/PreCandidate/Candidate/Leader) and the helpers every layer
// above uses (send, appendEntry, refuse). raft.ts lists the layers; section numbers: Raft paper.
import type { RaftConfig } from './config.js';
import { validateConfig } from './config.js';
import { assert } from './errors.js';
import { RaftLog } from './log.js';
import type { Message } from './message.js';
import type { RandomSource } from './prng.js';
import { Progress } from './progress.js';
import type { ProposalRefusal } from './proposal-error.js';
import { ProposalError } from './proposal-error.js';
import type { ReadState } from './readonly.js';
import { ReadOnly } from './readonly.js';
import type { Storage } from './storage.js';
import type { ConfState, Entry, NodeId } from './types.js';
import { EntryType, NONE } from './types.js';

export enum StateType {
  Follower = 0,
  PreCandidate = 1,
  Candidate = 2,
  Leader = 3,
}

const EMPTY_DATA = new Uint8Array(0);

export abstract class RaftCore {
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
  /** Ticks since this node last heard from the leader it follows (an append, a heartbeat or a
   * snapshot from it; hashicorp/raft's lastContact, counted in ticks); 0 on the leader. Unlike
   * electionElapsed, nothing else resets it (a vote granted, a campaign that could not start). */
  leaderSilentTicks = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  /** This term's random draw in [0, electionTicks): aimElectionTimeout places it. */
  private electionDraw = 0;
  /** Successor first: the leader's successor whose vote this node refused for a log behind its own;
   * once this node leads, it hands leadership to it (elections.ts). NONE: none, and again as soon
   * as any leader is heard from (followLeader). */
  protected successorHandoff: NodeId = NONE;
  protected readonly votes = new Map<NodeId, boolean>();
  leadTransferee: NodeId = NONE;
  /** Index of the latest membership change proposed by this leader (or its last index when it was
   * elected); no new change is accepted until `applied` reaches it. */
  pendingConfIndex = 0;
  uncommittedBytes = 0;
  protected readonly readOnly = new ReadOnly();
  /** ReadIndex requests that arrived before this leader committed an entry of its own term. */
  protected pendingReadIndex: Message[] = [];
  /** New entries or a new commit index should be broadcast (done in flush(), once per Ready, so
   * that proposals made between two Readys travel in one MsgApp: batching). */
  pendingBcast = false;
  /**
   * The commit index just passed a membership change (or the leader's first index of its term):
   * followers are told at once, by a heartbeat in the next flush(), not at the next heartbeat tick
   * (replication.ts sendAppendsTo). A leader that removed itself stops sending heartbeats once it
   * applies its removal, and the members left may need to apply it to elect a leader (a 2-node
   * cluster removing its leader).
   */
  commitNewsDue = false;

  constructor(
    cfg: RaftConfig,
    storage: Storage,
    protected readonly rng: RandomSource,
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
  protected switchToConfig(conf: ConfState): void {
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

  // ---------------------------------------------------------------- roles

  private resetRandomizedElectionTimeout(): void {
    this.electionDraw = this.rng.intBelow(this.cfg.electionTicks);
    this.aimElectionTimeout();
  }

  /**
   * The election timeout from this term's draw and the leader followed (RaftConfig.successorFirst):
   * the leader's successor times out after T + 1 ticks, T being electionTicks (one tick past the
   * others' lease, whatever the phase of their tick timers); the others in [T + 3, 2T), two ticks
   * later at the soonest, so that a busy successor whose ticks lag still campaigns first. With no
   * leader known, or T below 4 (too few ticks for the gap), anywhere in [T, 2T). The draw is never
   * redrawn, so the random sequence is the same with or without the option.
   */
  protected aimElectionTimeout(): void {
    const t = this.cfg.electionTicks;
    const u = this.electionDraw;
    if (!this.cfg.successorFirst || this.lead === NONE || this.lead === this.id || t < SUCCESSOR_FIRST_TICKS_MIN) {
      this.randomizedElectionTimeout = t + u;
      return;
    }
    this.randomizedElectionTimeout =
      successorOf(this.lead, this.conf.voters) === this.id ? t + 1 : t + 3 + Math.floor((u * (t - 3)) / t);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      assert(term > this.term, 'terms only increase');
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.leaderSilentTicks = 0;
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
    this.commitNewsDue = false;
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.state = StateType.Follower;
    this.followLeader(lead);
  }

  /**
   * `lead` is the leader now followed (NONE: none known). A leader heard from clears a refused
   * successor (nothing to hand over to), and a new one re-aims the election timeout.
   */
  protected followLeader(lead: NodeId): void {
    if (lead !== NONE) this.successorHandoff = NONE;
    if (this.lead === lead) return;
    this.lead = lead;
    this.aimElectionTimeout();
  }

  protected becomePreCandidate(): void {
    assert(this.state !== StateType.Leader, 'a leader never becomes pre-candidate');
    // Pre-vote does not change the term or the vote (thesis §9.6).
    this.state = StateType.PreCandidate;
    this.votes.clear();
    this.lead = NONE;
  }

  protected becomeCandidate(): void {
    assert(this.state !== StateType.Leader, 'a leader never becomes candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = StateType.Candidate;
  }

  protected becomeLeader(): void {
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

  // ---------------------------------------------------------------- helpers for the layers above

  protected appendEntry(type: EntryType, data: Uint8Array): Entry {
    const e: Entry = { term: this.term, index: this.log.lastIndex() + 1, type, data };
    this.log.append([e]);
    this.pendingBcast = true;
    return e;
  }

  protected send(m: Message): void {
    assert(m.to !== this.id, 'a node never sends a message to itself');
    this.msgs.push(m);
  }

  abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  /**
   * The leader this node vouches for, the one to name in a "not leader" answer: itself while it
   * leads (NONE once it removed itself), the leader it follows while it has heard from it within an
   * election timeout (`electionTicks`, the low end of the randomized timeout), else NONE. A leader
   * whose machine died stops being named one election timeout after its last message, not only
   * once this node campaigns (its own timer may be drawn up to twice as long) or hears of a new
   * term: a client or worker told "no leader" tries the other controllers instead of waiting out a
   * connection timeout against the dead one.
   */
  liveLeader(): NodeId {
    if (this.state === StateType.Leader) return this.prs.has(this.id) ? this.id : NONE;
    return this.leaderSilentTicks < this.cfg.electionTicks ? this.lead : NONE;
  }

  protected refuse(reason: ProposalRefusal, detail = ''): { ok: false; error: ProposalError } {
    return { ok: false, error: new ProposalError(reason, this.liveLeader(), detail) };
  }
}

/** The least electionTicks for which successorFirst places the timeouts (T + 1 against [T + 3, 2T)). */
export const SUCCESSOR_FIRST_TICKS_MIN = 4;

/** The voter after `lead` in id order, wrapping to the lowest (`lead` itself when it is the only one). */
export function successorOf(lead: NodeId, voters: readonly NodeId[]): NodeId {
  let next: NodeId | undefined;
  let lowest: NodeId | undefined;
  for (const v of voters) {
    if (lowest === undefined || v < lowest) lowest = v;
    if (v > lead && (next === undefined || v < next)) next = v;
  }
  return next ?? lowest ?? lead;
}
