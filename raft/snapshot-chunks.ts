// InstallSnapshot in chunks. The core emits one MsgSnap carrying the whole snapshot (its meta and
// data); the transport splits it into chunks of at most SNAPSHOT_CHUNK_BYTES_MAX, streams them,
// and the receiving transport reassembles them and steps the MsgSnap into its core only once every
// byte arrived. A transfer that loses a chunk or times out is abandoned; the sender then calls
// RawNode.reportSnapshot(to, false) and the leader retries later. Pure: no I/O here.
import { SNAPSHOT_CHUNK_BYTES_MAX } from './config.js';
import { assert } from './errors.js';
import type { Message } from './message.js';
import { MessageType } from './message.js';
import type { NodeId, SnapshotMeta } from './types.js';

export interface SnapshotChunk {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
  readonly meta: SnapshotMeta;
  /** Byte offset of `data` within the snapshot data. */
  readonly offset: number;
  readonly totalBytes: number;
  readonly data: Uint8Array;
}

/** Splits a MsgSnap into chunks (at least one, even for empty data). */
export function splitSnapshot(m: Message, chunkBytes: number = SNAPSHOT_CHUNK_BYTES_MAX): SnapshotChunk[] {
  assert(m.type === MessageType.Snap && m.snapshot !== undefined, 'splitSnapshot takes a MsgSnap');
  assert(chunkBytes > 0, 'chunk size is positive');
  const snap = m.snapshot;
  const total = snap.data.byteLength;
  const out: SnapshotChunk[] = [];
  let offset = 0;
  do {
    const end = Math.min(total, offset + chunkBytes);
    out.push({
      from: m.from,
      to: m.to,
      term: m.term,
      meta: snap.meta,
      offset,
      totalBytes: total,
      data: snap.data.subarray(offset, end),
    });
    offset = end;
  } while (offset < total);
  return out;
}

/** Why a chunk was refused; the transfer is then abandoned (the sender reports failure).
 * 'no-memory': the announced size is within the limit but could not be allocated now. */
export type ChunkRefusal = 'out-of-order' | 'inconsistent' | 'no-memory';

/**
 * The largest snapshot the assembler accepts, in bytes: 4 GiB. A controller's snapshot is its
 * encoded state: about 711 bytes a job, 678 MiB for 1,000,000 jobs (benchmarks/README.md), so this
 * is six times the largest state benchmarked, and it is also the largest Uint8Array Node 20
 * allocates (2^32 bytes). A chunk announcing more is refused before anything is allocated
 * (SnapshotTooLargeError). Override it with the assembler's `maxBytes`.
 */
export const SNAPSHOT_BYTES_MAX = 4 * 1024 * 1024 * 1024;

/** A chunk announced a snapshot larger than the assembler's maximum (or a size that is not a byte
 * count at all). Nothing was allocated; the transfer from `from` is abandoned. */
export class SnapshotTooLargeError extends Error {
  override readonly name = 'SnapshotTooLargeError';
  constructor(
    readonly from: NodeId,
    readonly totalBytes: number,
    readonly maxBytes: number,
  ) {
    super(`node ${from} announced a snapshot of ${totalBytes} bytes; at most ${maxBytes} bytes are accepted`);
  }
}

/**
 * Reassembles one incoming snapshot per sender. Chunks must arrive in order (the transport streams
 * them over one ordered connection); a chunk of a newer snapshot replaces an unfinished older one.
 */
export class SnapshotAssembler {
  private readonly inProgress = new Map<
    NodeId,
    { meta: SnapshotMeta; term: number; buf: Uint8Array; received: number }
  >();

  /** @param maxBytes the largest snapshot accepted (default SNAPSHOT_BYTES_MAX). */
  constructor(readonly maxBytes: number = SNAPSHOT_BYTES_MAX) {}

  /**
   * Adds a chunk; returns the complete MsgSnap when this was the last one, or a refusal. Throws
   * SnapshotTooLargeError, before allocating anything, when the chunk announces more than
   * `maxBytes` (or a total that is not a non-negative integer).
   */
  add(c: SnapshotChunk): Message | ChunkRefusal | undefined {
    if (!Number.isSafeInteger(c.totalBytes) || c.totalBytes < 0 || c.totalBytes > this.maxBytes) {
      this.inProgress.delete(c.from);
      throw new SnapshotTooLargeError(c.from, c.totalBytes, this.maxBytes);
    }
    if (!Number.isSafeInteger(c.offset) || c.offset < 0) {
      this.inProgress.delete(c.from);
      return 'inconsistent';
    }
    let t = this.inProgress.get(c.from);
    if (c.offset === 0) {
      // Drop the unfinished one first: two half-allocated transfers from one sender never coexist.
      this.inProgress.delete(c.from);
      let buf: Uint8Array;
      try {
        buf = new Uint8Array(c.totalBytes);
      } catch (err) {
        if (err instanceof RangeError) return 'no-memory';
        throw err;
      }
      t = { meta: c.meta, term: c.term, buf, received: 0 };
      this.inProgress.set(c.from, t);
    }
    if (t === undefined || c.offset !== t.received) {
      this.inProgress.delete(c.from);
      return 'out-of-order';
    }
    if (
      c.meta.index !== t.meta.index ||
      c.meta.term !== t.meta.term ||
      c.totalBytes !== t.buf.byteLength ||
      c.term !== t.term ||
      c.offset + c.data.byteLength > t.buf.byteLength
    ) {
      this.inProgress.delete(c.from);
      return 'inconsistent';
    }
    t.buf.set(c.data, c.offset);
    t.received += c.data.byteLength;
    if (t.received < t.buf.byteLength) return undefined;
    this.inProgress.delete(c.from);
    return {
      type: MessageType.Snap,
      from: c.from,
      to: c.to,
      term: t.term,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
      snapshot: { meta: t.meta, data: t.buf },
      context: '',
    };
  }

  /** Drops an unfinished transfer (the connection to `from` broke). */
  abandon(from: NodeId): void {
    this.inProgress.delete(from);
  }
}
