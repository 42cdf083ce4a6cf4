// Raft messages to and from the other controllers, as frames of daemon/raft-codec.ts over the
// PeerPort. In: decode, reassemble snapshot chunks (SnapshotAssembler), check who sent it, step.
// Out: encode and queue; a snapshot is streamed chunk by chunk at the pace its link drains, and
// Raft is told how the transfer went (one stream per follower: Raft sends it no other snapshot
// until told). Delivery is best-effort: Raft tolerates loss.

import type { RawNode } from '../../raft/rawnode.js';
import { SnapshotAssembler, splitSnapshot } from '../../raft/snapshot-chunks.js';
import { MessageType, type Message } from '../../raft/message.js';
import { decodeFrame, encodeMessage, encodeSnapshotChunk, FrameError } from '../raft-codec.js';
import type { Logger } from '../log.js';
import type { ClockPort, PeerPort } from './ports.js';

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
}

export class PeerFrames {
  private readonly assembler = new SnapshotAssembler();

  constructor(private readonly o: PeerFramesOptions) {}

  /**
   * Decodes a frame from peer `from` and steps the message it completes. Returns whether a message
   * was stepped. A bad frame, a message that claims another sender or addressee, or one Raft refuses
   * as malformed (RangeError) is dropped with a warning; any other error from Raft (an invariant
   * broken) is thrown: the caller fail-stops.
   */
  receive(from: number, frame: Uint8Array): boolean {
    let decoded;
    try {
      decoded = decodeFrame(frame);
    } catch (err) {
      if (err instanceof FrameError) {
        this.o.log.warn('dropped a bad frame from a peer', { peer: from, error: err.message });
        return false;
      }
      throw err;
    }
    let m: Message;
    if (decoded.kind === 'chunk') {
      if (decoded.chunk.from !== from) return false;
      const r = this.assembler.add(decoded.chunk);
      if (r === undefined) return false;
      if (typeof r === 'string') {
        this.o.log.warn('abandoned a snapshot transfer', { peer: from, why: r });
        return false;
      }
      m = r;
    } else m = decoded.message;
    if (m.from !== from || m.to !== this.o.id) return false;
    try {
      this.o.raw.step(m);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      this.o.log.warn('refused a peer message', { peer: from, error: err.message });
      return false;
    }
    return true;
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
    this.o.log.info('sent snapshot', { to: m.to, index: m.snapshot?.meta.index, bytes, ok, ms: Math.round(this.o.clock.now() - t0) });
  }
}
