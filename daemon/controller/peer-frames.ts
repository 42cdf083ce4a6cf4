// Raft messages to and from the other controllers, as frames of daemon/raft-codec.ts over the
// PeerPort. In: decode, check every field against this node's own term, leader and log
// (frame-guard.ts), reassemble snapshot chunks (SnapshotAssembler), step. A frame the guard refuses
// is dropped, logged (once per peer and reason, then at most once a minute with a count), counted,
// and the link it came on is closed (the peer may redial); it is never fatal.
// Out: encode and queue; a snapshot is streamed chunk by chunk at the pace its link drains, and
// Raft is told how the transfer went (one stream per follower: Raft sends it no other snapshot
// until told). Delivery is best-effort: Raft tolerates loss.

import type { RawNode } from '../../raft/rawnode.js';
import {
  SNAPSHOT_BYTES_MAX,
  SnapshotAssembler,
  SnapshotTooLargeError,
  splitSnapshot,
} from '../../raft/snapshot-chunks.js';
import { MessageType, type Message } from '../../raft/message.js';
import { decodeFrame, encodeMessage, encodeSnapshotChunk, FrameError } from '../raft-codec.js';
import type { Logger } from '../log.js';
import { checkFrame, type FrameRefusal, type GuardLimits, type NodeView } from './frame-guard.js';
import type { ClockPort, PeerPort, TracePort } from './ports.js';

/** A refusal already logged for a peer and reason is logged again at most this often (with the
 * number refused since), so that a peer sending bad frames cannot flood the log. */
export const FRAME_REFUSAL_LOG_MS = 60_000;
/** Distinct (peer, reason) pairs remembered for rate limiting; the oldest is forgotten past this. */
const REFUSAL_KEYS_MAX = 1_024;

/** Why a frame from a peer was dropped: the guard's reasons, plus Raft refusing one itself. */
export type PeerFrameRefusal = FrameRefusal | 'refused-by-raft';

export interface PeerFramesOptions {
  readonly id: number;
  readonly raw: RawNode;
  readonly peers: PeerPort;
  readonly clock: ClockPort;
  readonly log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** False once the core stopped (for good or not): late results of a stream are dropped. */
  readonly live: () => boolean;
  /** Runs the Ready loop (something changed in Raft). */
  readonly kick: () => void;
  /** The largest snapshot accepted from a leader (default SNAPSHOT_BYTES_MAX, 4 GiB). */
  readonly snapshotBytesMax?: number;
  /** Opt-in per-hop timestamps (ports.ts TracePort). */
  readonly trace?: TracePort;
}

export class PeerFrames {
  private readonly assembler: SnapshotAssembler;
  private readonly limits: GuardLimits;
  /** Rate limiting of refusal lines, by `${peer}/${reason}`. */
  private readonly logged = new Map<string, { at: number; since: number }>();
  private readonly refusedCounts = new Map<PeerFrameRefusal, number>();

  constructor(private readonly o: PeerFramesOptions) {
    const max = o.snapshotBytesMax ?? SNAPSHOT_BYTES_MAX;
    this.assembler = new SnapshotAssembler(max);
    this.limits = { snapshotBytesMax: max };
  }

  /** Frames refused since start, by reason. */
  get refused(): ReadonlyMap<PeerFrameRefusal, number> {
    return this.refusedCounts;
  }

  /**
   * Decodes a frame from peer `from`, checks it (frame-guard.ts) and steps the message it
   * completes. Returns whether a message was stepped. A frame that does not decode or that the
   * guard refuses is dropped, logged and counted, and its link is closed; one Raft itself refuses as
   * malformed (RangeError) is dropped and logged. Any other error from Raft (an invariant broken)
   * is thrown: the caller fail-stops.
   */
  receive(from: number, frame: Uint8Array): boolean {
    let decoded;
    try {
      decoded = decodeFrame(frame);
    } catch (err) {
      if (err instanceof FrameError) return this.bad(from, 'undecodable', err.message);
      throw err;
    }
    const g = checkFrame(this.view(), from, decoded, this.limits);
    if (!g.ok) return this.bad(from, g.reason, g.detail);
    let m: Message;
    if (decoded.kind === 'chunk') {
      let r;
      try {
        r = this.assembler.add(decoded.chunk);
      } catch (err) {
        // The guard checks the same limit first; this is the assembler refusing on its own.
        if (err instanceof SnapshotTooLargeError) return this.bad(from, 'snapshot-too-large', err.message);
        throw err;
      }
      if (r === undefined) return false;
      if (typeof r === 'string') {
        // A gap or a mix of two transfers (a lost chunk, a link replaced half-way): the leader retries.
        this.note(from, `snapshot-${r}`, 'abandoned a snapshot transfer', { why: r });
        return false;
      }
      m = r;
    } else m = decoded.message;
    if (this.o.trace !== undefined) traceReceived(this.o.trace, m);
    try {
      this.o.raw.step(m);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      this.count('refused-by-raft');
      this.note(from, 'refused-by-raft', 'refused a peer message', { error: err.message });
      return false;
    }
    return true;
  }

  /** What the guard compares a frame with: this node's term, leader and last index right now. */
  private view(): NodeView {
    const r = this.o.raw.raft;
    return { id: this.o.id, term: r.term, lead: r.lead, lastIndex: r.log.lastIndex() };
  }

  /** A refused frame: drop it, forget the peer's unfinished snapshot, log, count, close its link. */
  private bad(from: number, reason: FrameRefusal, detail: string): false {
    this.assembler.abandon(from);
    this.count(reason);
    this.note(from, reason, 'refused a bad frame from a peer; closing its link', { reason, detail });
    this.o.peers.closeInbound(from, reason);
    return false;
  }

  private count(reason: PeerFrameRefusal): void {
    this.refusedCounts.set(reason, (this.refusedCounts.get(reason) ?? 0) + 1);
  }

  /** Logs a warning for (peer, key) the first time, then at most once per FRAME_REFUSAL_LOG_MS. */
  private note(peer: number, key: string, msg: string, fields: Record<string, unknown>): void {
    const k = `${peer}/${key}`;
    const now = this.o.clock.now();
    const seen = this.logged.get(k);
    if (seen !== undefined) {
      seen.since++;
      if (now - seen.at < FRAME_REFUSAL_LOG_MS) return;
      this.o.log.warn(msg, { peer, ...fields, refused_since_last_line: seen.since });
      seen.at = now;
      seen.since = 0;
      return;
    }
    if (this.logged.size >= REFUSAL_KEYS_MAX) this.logged.delete(this.logged.keys().next().value!);
    this.logged.set(k, { at: now, since: 0 });
    this.o.log.warn(msg, { peer, ...fields });
  }

  /** Sends one message of a Ready. */
  send(m: Message): void {
    if (m.type === MessageType.Snap) {
      this.sendSnapshot(m).catch((err: Error) => {
        // Not expected (encoding a chunk of bytes we hold); the follower is retried as after a loss.
        this.o.log.error('could not send a snapshot', { to: m.to, error: err.message });
        if (this.o.live()) this.o.raw.reportSnapshot(m.to, false);
      });
      return;
    }
    if (!this.o.peers.send(m.to, encodeMessage(m)) && m.type === MessageType.App) this.o.raw.reportUnreachable(m.to);
  }

  /**
   * Streams a MsgSnap's chunks to its follower as its link drains (a snapshot is often larger than
   * a socket may queue), encoding each chunk as it goes, then tells Raft how it went.
   */
  private async sendSnapshot(m: Message): Promise<void> {
    const t0 = this.o.clock.now();
    const bytes = m.snapshot?.data.byteLength ?? 0;
    this.o.log.info('sending snapshot', { to: m.to, index: m.snapshot?.meta.index, bytes });
    const chunks = splitSnapshot(m);
    const frames = (function* () {
      for (const c of chunks) yield encodeSnapshotChunk(c);
    })();
    const ok = await this.o.peers.stream(m.to, frames);
    if (!this.o.live()) return;
    this.o.raw.reportSnapshot(m.to, ok);
    this.o.kick();
    this.o.log.info('sent snapshot', {
      to: m.to,
      index: m.snapshot?.meta.index,
      bytes,
      ok,
      ms: Math.round(this.o.clock.now() - t0),
    });
  }
}

/** A follower receiving entries, or a leader hearing that a follower holds them (the trace). */
function traceReceived(trace: TracePort, m: Message): void {
  if (m.type === MessageType.App && m.entries.length > 0)
    trace.hop('recv-app', m.entries[0]!.index, m.entries[m.entries.length - 1]!.index, m.from);
  else if (m.type === MessageType.AppResp && !m.reject) trace.hop('recv-resp', m.index, m.index, m.from);
}
