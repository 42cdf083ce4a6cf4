// The peer-frame guard: every field of a Raft frame from a peer is range-checked here, against this
// node's own term, leader and log, before the frame reaches the snapshot assembler or the Raft core
// (issue 21, "unchecked Raft frames"). Raft trusts its peers to be correct; a peer that passed the
// `/raft` handshake but sends garbage (a bug, a corrupted or hostile process holding the cluster
// secret) must not be able to crash a controller (an allocation of 2^40 bytes, a term that is not
// a safe integer and then fails the WAL), inflate terms far ahead, or move leadership with a
// message no correct peer would send (a TimeoutNow from a non-leader).
//
// What is NOT refused, because correct Raft traffic contains it:
// - terms a little ahead of ours: a pre-vote asks for our term + 1, a new leader or a node back from
//   a partition is some terms ahead, and any response may carry a higher term (that is how a stale
//   leader learns it is stale);
// - an append or heartbeat of a LOWER term: Raft answers it with our term so that the stale leader
//   steps down (raft.ts, step()); a lower-term snapshot chunk or read answer is ignored by Raft;
// - leader-side indexes (an append's index, a commit, a snapshot's index) far beyond our own log:
//   a new, wiped or lagging member legitimately sees the leader's whole range;
// - senders outside our configuration: a joining member answers the leader before it is one.
//
// Pure: no I/O, no clock; the caller (peer-frames.ts) drops a refused frame, logs it, closes the
// link it came on, and never fails on it.

import { CAMPAIGN_TRANSFER, MessageType, isLocalMessage, type Message } from '../../raft/message.js';
import { SNAPSHOT_BYTES_MAX, type SnapshotChunk } from '../../raft/snapshot-chunks.js';
import type { Entry, NodeId } from '../../raft/types.js';
import { NONE } from '../../raft/types.js';
import type { Frame } from '../raft-codec.js';

/**
 * How far above our own term a frame's term may be. With pre-vote and check-quorum (both on) a term
 * only rises on a real election, about one per leader change, so a member cut off by a long
 * partition, or down through a long run of failovers, comes back a few hundred terms behind; 10,000
 * leaves ample room for that (days of failovers every few seconds), while one bad frame can no
 * longer move the cluster's term by millions, and walking the term up to FRAME_TERM_MAX would take
 * 2^48 / 10,000 ≈ 3·10^10 frames. A member more than 10,000 terms behind refuses the leader and must be re-added (`--join` on an empty data
 * directory); the refusal is logged with the leader's id and term. A node whose own term is 0 (new,
 * or joining: it has nothing to protect) takes an append, heartbeat or snapshot of any term up to
 * FRAME_TERM_MAX, so that a member can join a cluster of any age.
 */
export const FRAME_TERM_AHEAD_MAX = 10_000;

/**
 * The largest term accepted at all: 2^48 (2.8·10^14; one election every 10 ms would take 89 years
 * to reach it). It keeps every term, and every term + 1 Raft derives from it, far inside the safe
 * integers (2^53) that the WAL and the wire can represent exactly.
 */
export const FRAME_TERM_MAX = 2 ** 48;

/**
 * The largest log index (an append's index and its entries, a commit index, a snapshot index, a
 * reject hint) accepted: 2^48, nine years of one million entries a second; also far inside the
 * safe integers, so `index + entries` never loses precision.
 */
export const FRAME_INDEX_MAX = 2 ** 48;

/** The longest `context` (ReadIndex contexts are `<id>.<16 hex>-<n>`, a transfer's is 13 chars). */
export const FRAME_CONTEXT_CHARS_MAX = 1_024;

/** Node ids travel as UInt32 (schema/raft.capnp); 0 is "none". */
export const NODE_ID_MAX = 0xffff_ffff;

/** Why a frame was refused; logged with the peer id, one line per peer and reason at most. */
export type FrameRefusal =
  /** The frame is not a Raft message (raft-codec.ts refused it). */
  | 'undecodable'
  /** A message type that only the node itself steps (Hup, Beat, Unreachable, SnapStatus, CheckQuorum). */
  | 'local-type'
  /** `from` is not the peer the link was authenticated as. */
  | 'sender-mismatch'
  /** `from` is this node: Raft would answer itself, which it must never do. */
  | 'sender-is-self'
  /** `to` is not this node. */
  | 'wrong-addressee'
  /** A term, index or size that is not a non-negative safe integer. */
  | 'not-a-count'
  /** Term 0 on a message that always carries a term (only a refused pre-vote of a brand-new node may have term 0). */
  | 'term-zero'
  /** A term above FRAME_TERM_MAX. */
  | 'term-out-of-range'
  /** A term more than FRAME_TERM_AHEAD_MAX above ours. */
  | 'term-too-far-ahead'
  /** A request (ReadIndex, TransferLeader) or read answer from a term we have not reached: never sent by a correct peer. */
  | 'term-ahead-not-allowed'
  /** A log term above the message's own term (no entry has a term above its leader's). */
  | 'log-term-ahead'
  /** An index above FRAME_INDEX_MAX. */
  | 'index-out-of-range'
  /** A response claiming a log position beyond our (the leader's) own log. */
  | 'index-beyond-our-log'
  /** An append's entries are not contiguous after its index, their terms decrease or exceed the message's, or a non-append carries entries. */
  | 'bad-entries'
  /** A leader's message (append, heartbeat, snapshot, read answer) in our term from a node that is not the leader we follow in it. */
  | 'not-the-leader'
  /** A TimeoutNow not from the leader of our current term. */
  | 'timeout-now-not-from-leader'
  /** A context too long, or a transfer context on anything but a vote request. */
  | 'bad-context'
  /** A TransferLeader naming no node. */
  | 'bad-node-id'
  /** A snapshot's metadata is impossible (index 0, a term above the sender's, an empty or repeated membership). */
  | 'bad-snapshot-meta'
  /** A snapshot chunk announcing more than the configured maximum. */
  | 'snapshot-too-large'
  /** A chunk's bytes fall outside the snapshot it announces (or a chunk of a non-empty snapshot is empty). */
  | 'chunk-out-of-bounds';

export type GuardResult =
  { readonly ok: true } | { readonly ok: false; readonly reason: FrameRefusal; readonly detail: string };

/** What the guard needs to know of this node (read from Raft at the moment the frame arrives). */
export interface NodeView {
  readonly id: NodeId;
  readonly term: number;
  /** The leader this node knows in its term (itself when it leads), NONE when none. */
  readonly lead: NodeId;
  /** This node's last log index. */
  readonly lastIndex: number;
}

export interface GuardLimits {
  /** The largest snapshot accepted (default SNAPSHOT_BYTES_MAX). */
  readonly snapshotBytesMax: number;
}

export const DEFAULT_GUARD_LIMITS: GuardLimits = { snapshotBytesMax: SNAPSHOT_BYTES_MAX };

const OK: GuardResult = { ok: true };

function refuse(reason: FrameRefusal, detail: string): GuardResult {
  return { ok: false, reason, detail };
}

function isCount(v: number): boolean {
  return Number.isSafeInteger(v) && v >= 0;
}

/** Checks a decoded frame (a message or a snapshot chunk) from authenticated peer `peer`. */
export function checkFrame(
  own: NodeView,
  peer: NodeId,
  frame: Frame,
  limits: GuardLimits = DEFAULT_GUARD_LIMITS,
): GuardResult {
  return frame.kind === 'chunk' ? checkChunk(own, peer, frame.chunk, limits) : checkMessage(own, peer, frame.message);
}

/** Messages only a leader sends, which make their receiver follow the sender. */
function leaderOnly(t: MessageType): boolean {
  return t === MessageType.App || t === MessageType.Heartbeat || t === MessageType.Snap;
}

function checkAddressing(own: NodeView, peer: NodeId, from: NodeId, to: NodeId): GuardResult {
  if (from !== peer) return refuse('sender-mismatch', `from ${from} on the link of peer ${peer}`);
  if (from === own.id) return refuse('sender-is-self', `from ${from}, which is this node`);
  if (to !== own.id) return refuse('wrong-addressee', `to ${to}, but this is node ${own.id}`);
  return OK;
}

/** The term rules every frame obeys: a count, at most FRAME_TERM_MAX, within reach of ours. */
function checkTerm(own: NodeView, type: MessageType, term: number): GuardResult {
  if (!isCount(term)) return refuse('not-a-count', `term ${term}`);
  if (term > FRAME_TERM_MAX) return refuse('term-out-of-range', `term ${term} > ${FRAME_TERM_MAX}`);
  const fresh = own.term === 0 && leaderOnly(type);
  if (!fresh && term > own.term + FRAME_TERM_AHEAD_MAX) {
    return refuse(
      'term-too-far-ahead',
      `term ${term} is ${term - own.term} above ours (${own.term}); at most ${FRAME_TERM_AHEAD_MAX} is accepted`,
    );
  }
  return OK;
}

/** A leader's message in our own term must come from the leader we follow in it (Election Safety:
 * one leader per term), when we know one. */
function checkLeader(own: NodeView, type: MessageType, from: NodeId, term: number): GuardResult {
  if (term === own.term && own.lead !== NONE && own.lead !== from) {
    return refuse(
      'not-the-leader',
      `${MessageType[type]} from ${from} in term ${term}, whose leader is ${own.lead === own.id ? 'this node' : `node ${own.lead}`}`,
    );
  }
  return OK;
}

function checkEntries(m: Message): GuardResult {
  const ents: readonly Entry[] = m.entries;
  if (ents.length === 0) return OK;
  if (m.type !== MessageType.App) return refuse('bad-entries', `${MessageType[m.type]} carries ${ents.length} entries`);
  if (m.index + ents.length > FRAME_INDEX_MAX)
    return refuse('index-out-of-range', `entries up to ${m.index + ents.length} > ${FRAME_INDEX_MAX}`);
  let prevTerm = m.logTerm;
  for (let i = 0; i < ents.length; i++) {
    const e = ents[i]!;
    if (e.index !== m.index + 1 + i)
      return refuse('bad-entries', `entry ${i} has index ${e.index}, expected ${m.index + 1 + i}`);
    if (!isCount(e.term) || e.term < 1 || e.term > m.term || e.term < prevTerm) {
      return refuse(
        'bad-entries',
        `entry ${e.index} has term ${e.term} (after term ${prevTerm}, in a message of term ${m.term})`,
      );
    }
    if (e.type !== 0 && e.type !== 1)
      return refuse('bad-entries', `entry ${e.index} has unknown type ${String(e.type)}`);
    prevTerm = e.term;
  }
  return OK;
}

/** Checks a message (anything but a snapshot chunk) from authenticated peer `peer`. */
export function checkMessage(own: NodeView, peer: NodeId, m: Message): GuardResult {
  if (MessageType[m.type] === undefined || isLocalMessage(m.type))
    return refuse('local-type', `message type ${MessageType[m.type] ?? m.type}`);
  if (m.type === MessageType.Snap) return refuse('bad-snapshot-meta', 'a whole MsgSnap; snapshots travel as chunks');
  let r = checkAddressing(own, peer, m.from, m.to);
  if (!r.ok) return r;
  r = checkCounts(m);
  if (!r.ok) return r;
  r = checkTerm(own, m.type, m.term);
  if (!r.ok) return r;
  r = checkBounds(m);
  if (!r.ok) return r;
  r = checkEntries(m);
  if (!r.ok) return r;
  return checkByType(own, m);
}

/** Every position in a message is a count. */
function checkCounts(m: Message): GuardResult {
  for (const [field, v] of [
    ['logTerm', m.logTerm],
    ['index', m.index],
    ['commit', m.commit],
    ['rejectHint', m.rejectHint],
  ] as const) {
    if (!isCount(v)) return refuse('not-a-count', `${field} ${v}`);
  }
  return OK;
}

/** Term 0 only on a refused vote, the log term within the term, indexes and the context within limits. */
function checkBounds(m: Message): GuardResult {
  if (m.term === 0 && !((m.type === MessageType.PreVoteResp || m.type === MessageType.VoteResp) && m.reject)) {
    return refuse('term-zero', `${MessageType[m.type]} with term 0`);
  }
  if (m.logTerm > m.term) return refuse('log-term-ahead', `logTerm ${m.logTerm} > term ${m.term}`);
  for (const [field, v] of [
    ['index', m.index],
    ['commit', m.commit],
    ['rejectHint', m.rejectHint],
  ] as const) {
    if (v > FRAME_INDEX_MAX) return refuse('index-out-of-range', `${field} ${v} > ${FRAME_INDEX_MAX}`);
  }
  if (m.context.length > FRAME_CONTEXT_CHARS_MAX)
    return refuse('bad-context', `context of ${m.context.length} chars > ${FRAME_CONTEXT_CHARS_MAX}`);
  if (m.context === CAMPAIGN_TRANSFER && m.type !== MessageType.Vote)
    return refuse('bad-context', `transfer context on ${MessageType[m.type]}`);
  return OK;
}

/** The rules of one message type: who may send it, in which term, and what it may point at. */
function checkByType(own: NodeView, m: Message): GuardResult {
  switch (m.type) {
    case MessageType.App:
    case MessageType.Heartbeat:
      return checkLeader(own, m.type, m.from, m.term);
    case MessageType.TimeoutNow:
      // Only the leader hands over leadership, to a follower of its own term (thesis §3.10). One of
      // an earlier term (sent before our term moved on) is let through: Raft ignores it.
      if (m.term < own.term) return OK;
      if (m.term !== own.term || own.lead === NONE || own.lead === own.id || own.lead !== m.from) {
        return refuse(
          'timeout-now-not-from-leader',
          `TimeoutNow from ${m.from} in term ${m.term}; our term is ${own.term}, our leader ${own.lead === NONE ? 'unknown' : own.lead === own.id ? 'this node' : `node ${own.lead}`}`,
        );
      }
      return OK;
    case MessageType.ReadIndexResp:
      // The answer to our ReadIndex, from the leader of our term (a stale one Raft ignores).
      if (m.term > own.term)
        return refuse('term-ahead-not-allowed', `ReadIndexResp of term ${m.term} > ours (${own.term})`);
      return checkLeader(own, m.type, m.from, m.term);
    case MessageType.ReadIndex:
      // A follower asks the leader of its term: never of a term the leader has not reached.
      if (m.term > own.term)
        return refuse('term-ahead-not-allowed', `ReadIndex of term ${m.term} > ours (${own.term})`);
      return OK;
    case MessageType.TransferLeader:
      if (m.term > own.term)
        return refuse('term-ahead-not-allowed', `TransferLeader of term ${m.term} > ours (${own.term})`);
      if (m.index < 1 || m.index > NODE_ID_MAX) return refuse('bad-node-id', `transferee ${m.index}`);
      return OK;
    case MessageType.AppResp:
      // A follower matches (or rejects at) positions of the leader's log: never beyond it.
      if (own.lead === own.id && m.term === own.term && (m.index > own.lastIndex || m.rejectHint > own.lastIndex)) {
        return refuse(
          'index-beyond-our-log',
          `AppResp index ${m.index} hint ${m.rejectHint}, our last index is ${own.lastIndex}`,
        );
      }
      return OK;
    default:
      // Vote, PreVote (the candidate's term, + 1 for a pre-vote), and the vote and heartbeat
      // responses: Raft handles any term within reach.
      return OK;
  }
}

/** Checks a snapshot chunk from authenticated peer `peer`, before the assembler allocates. */
export function checkChunk(
  own: NodeView,
  peer: NodeId,
  c: SnapshotChunk,
  limits: GuardLimits = DEFAULT_GUARD_LIMITS,
): GuardResult {
  let r = checkAddressing(own, peer, c.from, c.to);
  if (!r.ok) return r;
  r = checkTerm(own, MessageType.Snap, c.term);
  if (!r.ok) return r;
  if (c.term === 0) return refuse('term-zero', 'snapshot chunk with term 0');
  if (!isCount(c.totalBytes)) return refuse('not-a-count', `totalBytes ${c.totalBytes}`);
  if (!isCount(c.offset)) return refuse('not-a-count', `offset ${c.offset}`);
  if (c.totalBytes > limits.snapshotBytesMax)
    return refuse(
      'snapshot-too-large',
      `a snapshot of ${c.totalBytes} bytes; at most ${limits.snapshotBytesMax} are accepted`,
    );
  if (c.offset + c.data.byteLength > c.totalBytes)
    return refuse(
      'chunk-out-of-bounds',
      `bytes [${c.offset}, ${c.offset + c.data.byteLength}) of a ${c.totalBytes}-byte snapshot`,
    );
  if (c.data.byteLength === 0 && c.totalBytes > 0)
    return refuse('chunk-out-of-bounds', `an empty chunk at ${c.offset} of a ${c.totalBytes}-byte snapshot`);
  r = checkLeader(own, MessageType.Snap, c.from, c.term);
  if (!r.ok) return r;
  const meta = c.meta;
  if (!isCount(meta.index) || !isCount(meta.term))
    return refuse('not-a-count', `snapshot index ${meta.index} term ${meta.term}`);
  if (meta.index < 1 || meta.index > FRAME_INDEX_MAX)
    return refuse('bad-snapshot-meta', `snapshot index ${meta.index}`);
  if (meta.term < 1 || meta.term > c.term)
    return refuse('bad-snapshot-meta', `snapshot term ${meta.term} in a chunk of term ${c.term}`);
  const { voters, learners } = meta.conf;
  if (voters.length === 0) return refuse('bad-snapshot-meta', 'a membership without voters');
  const seen = new Set<number>();
  for (const id of [...voters, ...learners]) {
    if (!Number.isInteger(id) || id < 1 || id > NODE_ID_MAX || seen.has(id))
      return refuse('bad-snapshot-meta', `membership voters [${voters.join(', ')}] learners [${learners.join(', ')}]`);
    seen.add(id);
  }
  return OK;
}
