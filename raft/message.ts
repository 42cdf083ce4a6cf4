// The messages the core exchanges with its peers (and the few local ones the caller steps in).
import type { Entry, NodeId, Snapshot } from './types.js';
import { NONE } from './types.js';

export enum MessageType {
  /** Local: start an election now (the caller may step it, e.g. to bootstrap a single node). */
  Hup = 0,
  /** Local: the leader broadcasts heartbeats (driven by tick()). */
  Beat = 1,
  /** Leader → follower: entries after (index, logTerm), plus the leader's commit index. */
  App = 2,
  /** Follower → leader: accept (index = last matching index) or reject with a conflict hint. */
  AppResp = 3,
  Vote = 4,
  VoteResp = 5,
  PreVote = 6,
  PreVoteResp = 7,
  /** Leader → follower: InstallSnapshot. The snapshot travels whole through the core; the
   * transport streams it in chunks (snapshot-chunks.ts). */
  Snap = 8,
  Heartbeat = 9,
  HeartbeatResp = 10,
  /** Local: the transport could not reach a peer (the leader falls back to probing it). */
  Unreachable = 11,
  /** Local: the transport finished (or failed) streaming a snapshot to a peer. */
  SnapStatus = 12,
  /** Local: a leader's periodic quorum check (driven by tick()). */
  CheckQuorum = 13,
  /** To the leader: please hand leadership to `from`. */
  TransferLeader = 14,
  /** Leader → transferee: campaign now, skipping pre-vote and the leader lease. */
  TimeoutNow = 15,
  /** Follower → leader: a ReadIndex request with the caller's context. */
  ReadIndex = 16,
  ReadIndexResp = 17,
}

/** `context` value that marks a vote request caused by a leadership transfer. */
export const CAMPAIGN_TRANSFER = 'raft:transfer';

/** One message. Every field is always present (empty/zero when unused) so that objects share a
 * shape; `snapshot` only on Snap, `context` only where it means something. */
export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  term: number;
  /** App: term of the entry at `index`. Vote/PreVote: the candidate's last log term.
   * AppResp reject: the follower's term at `rejectHint`. */
  logTerm: number;
  /** App: index preceding `entries`. AppResp: matched index (or the rejected index).
   * Vote: the candidate's last index. ReadIndexResp: the read index. */
  index: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  rejectHint: number;
  snapshot: Snapshot | undefined;
  /** ReadIndex context (Heartbeat, HeartbeatResp, ReadIndex, ReadIndexResp), CAMPAIGN_TRANSFER on
   * a transfer's Vote, or '' when unused. */
  context: string;
}

const NO_ENTRIES: Entry[] = [];

export function newMessage(type: MessageType, from: NodeId, to: NodeId, term: number): Message {
  return {
    type,
    from,
    to,
    term,
    logTerm: 0,
    index: 0,
    entries: NO_ENTRIES,
    commit: 0,
    reject: false,
    rejectHint: 0,
    snapshot: undefined,
    context: '',
  };
}

const { Hup, Beat, Unreachable, SnapStatus, CheckQuorum } = MessageType;
const LOCAL: ReadonlySet<MessageType> = new Set([Hup, Beat, Unreachable, SnapStatus, CheckQuorum]);
const { AppResp, VoteResp, PreVoteResp, HeartbeatResp, ReadIndexResp } = MessageType;
const RESPONSES: ReadonlySet<MessageType> = new Set([AppResp, VoteResp, PreVoteResp, HeartbeatResp, ReadIndexResp]);

/** Messages that only ever come from the local caller, never from the network. */
export function isLocalMessage(t: MessageType): boolean {
  return LOCAL.has(t);
}

export function isResponseMessage(t: MessageType): boolean {
  return RESPONSES.has(t);
}

/** A one-line human description, for traces and logs. */
export function describeMessage(m: Message): string {
  let s = `${MessageType[m.type]} ${m.from}->${m.to} t${m.term}`;
  switch (m.type) {
    case MessageType.App:
      s += ` prev=${m.index}/t${m.logTerm} n=${m.entries.length} commit=${m.commit}`;
      if (m.entries.length > 0) s += ` [${m.entries[0]!.index}..${m.entries[m.entries.length - 1]!.index}]`;
      break;
    case MessageType.AppResp:
      s += m.reject ? ` REJECT ${m.index} hint=${m.rejectHint}/t${m.logTerm}` : ` ok ${m.index}`;
      break;
    case MessageType.Vote:
    case MessageType.PreVote:
      s += ` last=${m.index}/t${m.logTerm}${m.context === CAMPAIGN_TRANSFER ? ' transfer' : ''}`;
      break;
    case MessageType.VoteResp:
    case MessageType.PreVoteResp:
      s += m.reject ? ' REJECT' : ' grant';
      break;
    case MessageType.Snap:
      s += ` snap=${m.snapshot?.meta.index}/t${m.snapshot?.meta.term}`;
      break;
    case MessageType.Heartbeat:
      s += ` commit=${m.commit}${m.context ? ` ctx=${m.context}` : ''}`;
      break;
    case MessageType.ReadIndex:
    case MessageType.ReadIndexResp:
    case MessageType.HeartbeatResp:
      if (m.context) s += ` ctx=${m.context} idx=${m.index}`;
      break;
    default:
      break;
  }
  return s;
}

export { NONE };
