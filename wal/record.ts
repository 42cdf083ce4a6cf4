// Record framing of the WAL (on-disk format, version 1).
//
//   offset 0  u32 LE  CRC-32C of bytes [4, 12 + length)  (the rest of the header and the payload)
//   offset 4  u32 LE  payload length in bytes (≤ RECORD_PAYLOAD_BYTES_MAX)
//   offset 8  u8      record type (RecordType)
//   offset 9  3 bytes zero (reserved: a reader refuses non-zero)
//   offset 12 payload
//
// Two record types exist. A SegmentHeader opens every segment file and carries everything needed to
// read that segment alone (its sequence number, the next entry index, the hard state and snapshot
// base at the moment it was created), so older segments can be deleted. A Batch holds a sequence of
// operations applied in order: a run of entries (which truncates a conflicting suffix when its first
// index is not past the last one), a hard state, a snapshot mark. The WAL writes exactly one record
// per write+fdatasync, so a crash can tear at most the last record of the last segment.

import type { Entry, EntryType, HardState } from '../raft/types.js';
import { crc32cUpdate } from './crc32c.js';
import { INDEX_MAX, RECORD_PAYLOAD_BYTES_MAX } from './limits.js';

export const RECORD_HEADER_BYTES = 12;

export const enum RecordType {
  SegmentHeader = 1,
  Batch = 2,
}

export const enum OpKind {
  Entries = 1,
  HardState = 2,
  SnapshotMark = 3,
}

/** The snapshot a log starts after: entries ≤ index live in the snapshot, not in the log. */
export interface SnapshotBase {
  readonly index: number;
  readonly term: number;
}

export interface SegmentHeader {
  readonly seq: number;
  /** Index the next entry written to this segment will have (last index + 1 at creation). */
  readonly firstIndex: number;
  readonly hardState: HardState;
  readonly base: SnapshotBase;
}

export type Op =
  | { readonly kind: OpKind.Entries; readonly entries: readonly Entry[] }
  | { readonly kind: OpKind.HardState; readonly hardState: HardState }
  | { readonly kind: OpKind.SnapshotMark; readonly base: SnapshotBase };

const SEGMENT_MAGIC = 0x31415758; // "XWA1" little-endian
const FORMAT_VERSION = 1;
const SEGMENT_HEADER_PAYLOAD_BYTES = 4 + 2 + 2 + 8 * 7;
/** Whole size of a segment's header record, so callers know when a segment holds nothing else. */
export const SEGMENT_HEADER_RECORD_BYTES = RECORD_HEADER_BYTES + SEGMENT_HEADER_PAYLOAD_BYTES;

export const ENTRY_OVERHEAD_BYTES = 8 + 1 + 4; // term, type, data length
export const ENTRIES_OP_OVERHEAD_BYTES = 1 + 8 + 4; // kind, first index, count
export const HARD_STATE_OP_BYTES = 1 + 24;
export const SNAPSHOT_MARK_OP_BYTES = 1 + 16;
export const BATCH_OVERHEAD_BYTES = 4; // op count

const TWO_32 = 0x1_0000_0000;
/** A batch cannot hold more ops than its payload has bytes for (each op takes ≥ 17 bytes). */
const OPS_PER_BATCH_PLAUSIBLE_MAX = Math.ceil(RECORD_PAYLOAD_BYTES_MAX / 17);

function putU64(b: Buffer, off: number, n: number): void {
  b.writeUInt32LE(n >>> 0, off);
  b.writeUInt32LE(Math.floor(n / TWO_32), off + 4);
}

/** Reads a u64 that must fit a JS number exactly; returns -1 when it does not. */
function getU64(b: Uint8Array, off: number): number {
  const lo = (b[off]! | (b[off + 1]! << 8) | (b[off + 2]! << 16) | (b[off + 3]! << 24)) >>> 0;
  const hi = (b[off + 4]! | (b[off + 5]! << 8) | (b[off + 6]! << 16) | (b[off + 7]! << 24)) >>> 0;
  const n = hi * TWO_32 + lo;
  return n > INDEX_MAX ? -1 : n;
}

function getU32(b: Uint8Array, off: number): number {
  return (b[off]! | (b[off + 1]! << 8) | (b[off + 2]! << 16) | (b[off + 3]! << 24)) >>> 0;
}

/** Fills the 12-byte header in front of a payload already written at `rec[12..]`. */
function seal(rec: Buffer, type: RecordType): Buffer {
  const length = rec.length - RECORD_HEADER_BYTES;
  rec.writeUInt32LE(length, 4);
  rec[8] = type;
  rec[9] = 0;
  rec[10] = 0;
  rec[11] = 0;
  rec.writeUInt32LE(crc32cUpdate(0, rec, 4, rec.length), 0);
  return rec;
}

export function encodeSegmentHeader(h: SegmentHeader): Buffer {
  const rec = Buffer.alloc(SEGMENT_HEADER_RECORD_BYTES);
  let o = RECORD_HEADER_BYTES;
  rec.writeUInt32LE(SEGMENT_MAGIC, o);
  rec.writeUInt16LE(FORMAT_VERSION, o + 4);
  o += 8;
  for (const n of [
    h.seq,
    h.firstIndex,
    h.hardState.term,
    h.hardState.vote,
    h.hardState.commit,
    h.base.index,
    h.base.term,
  ]) {
    putU64(rec, o, n);
    o += 8;
  }
  return seal(rec, RecordType.SegmentHeader);
}

/** Payload bytes one op takes in a batch. */
export function opBytes(op: Op): number {
  switch (op.kind) {
    case OpKind.HardState:
      return HARD_STATE_OP_BYTES;
    case OpKind.SnapshotMark:
      return SNAPSHOT_MARK_OP_BYTES;
    case OpKind.Entries: {
      let n = ENTRIES_OP_OVERHEAD_BYTES;
      for (const e of op.entries) n += ENTRY_OVERHEAD_BYTES + e.data.length;
      return n;
    }
  }
}

/** Encodes a batch record of `ops` whose payload is `payloadBytes` (the sum of opBytes + 4). */
export function encodeBatch(ops: readonly Op[], payloadBytes: number): Buffer {
  if (payloadBytes > RECORD_PAYLOAD_BYTES_MAX)
    throw new RangeError(`batch payload ${payloadBytes} B > ${RECORD_PAYLOAD_BYTES_MAX} B`);
  const rec = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payloadBytes);
  let o = RECORD_HEADER_BYTES;
  rec.writeUInt32LE(ops.length, o);
  o += 4;
  for (const op of ops) {
    rec[o++] = op.kind;
    switch (op.kind) {
      case OpKind.HardState:
        putU64(rec, o, op.hardState.term);
        putU64(rec, o + 8, op.hardState.vote);
        putU64(rec, o + 16, op.hardState.commit);
        o += 24;
        break;
      case OpKind.SnapshotMark:
        putU64(rec, o, op.base.index);
        putU64(rec, o + 8, op.base.term);
        o += 16;
        break;
      case OpKind.Entries: {
        const es = op.entries;
        putU64(rec, o, es[0]!.index);
        rec.writeUInt32LE(es.length, o + 8);
        o += 12;
        for (const e of es) {
          putU64(rec, o, e.term);
          rec[o + 8] = e.type;
          rec.writeUInt32LE(e.data.length, o + 9);
          o += 13;
          rec.set(e.data, o);
          o += e.data.length;
        }
        break;
      }
    }
  }
  if (o !== rec.length)
    throw new Error(`batch encoding wrote ${o - RECORD_HEADER_BYTES} B, sized for ${payloadBytes} B`);
  return seal(rec, RecordType.Batch);
}

/** A framed record found at some offset: its type and payload bounds within the buffer. */
export interface RawRecord {
  readonly type: RecordType;
  readonly payloadStart: number;
  readonly end: number;
}

/** Why the bytes at an offset are not a record: what was expected and what was found. */
export interface FrameProblem {
  readonly expected: string;
  readonly found: string;
}

export function isFrameProblem(r: RawRecord | FrameProblem): r is FrameProblem {
  return (r as FrameProblem).expected !== undefined;
}

/** Reads the record framed at `off` in `buf[0, end)`, checking length, type, padding and CRC. */
export function readFrame(buf: Uint8Array, off: number, end: number): RawRecord | FrameProblem {
  const avail = end - off;
  if (avail < RECORD_HEADER_BYTES) {
    return {
      expected: `a ${RECORD_HEADER_BYTES}-byte record header`,
      found: `${avail} byte(s) before the end of the file`,
    };
  }
  const length = getU32(buf, off + 4);
  const type = buf[off + 8]!;
  if (type !== RecordType.SegmentHeader && type !== RecordType.Batch) {
    return { expected: 'record type 1 (segment header) or 2 (batch)', found: `type ${type}` };
  }
  if (buf[off + 9] !== 0 || buf[off + 10] !== 0 || buf[off + 11] !== 0) {
    return { expected: 'zero reserved header bytes', found: `${buf[off + 9]},${buf[off + 10]},${buf[off + 11]}` };
  }
  if (length > RECORD_PAYLOAD_BYTES_MAX) {
    return { expected: `a payload length ≤ ${RECORD_PAYLOAD_BYTES_MAX} B`, found: `${length} B` };
  }
  if (length > avail - RECORD_HEADER_BYTES) {
    return {
      expected: `${length} payload byte(s)`,
      found: `${avail - RECORD_HEADER_BYTES} before the end of the file`,
    };
  }
  const recEnd = off + RECORD_HEADER_BYTES + length;
  const stored = getU32(buf, off);
  const actual = crc32cUpdate(0, buf, off + 4, recEnd);
  if (stored !== actual) {
    return {
      expected: `CRC-32C 0x${actual.toString(16).padStart(8, '0')} (computed)`,
      found: `0x${stored.toString(16).padStart(8, '0')} (stored)`,
    };
  }
  return { type: type as RecordType, payloadStart: off + RECORD_HEADER_BYTES, end: recEnd };
}

/** Decodes a segment header payload, or says what is wrong with it. */
export function decodeSegmentHeader(buf: Uint8Array, rec: RawRecord): SegmentHeader | FrameProblem {
  if (rec.type !== RecordType.SegmentHeader)
    return { expected: 'a segment header record first', found: `record type ${rec.type}` };
  if (rec.end - rec.payloadStart !== SEGMENT_HEADER_PAYLOAD_BYTES) {
    return {
      expected: `a ${SEGMENT_HEADER_PAYLOAD_BYTES}-byte segment header`,
      found: `${rec.end - rec.payloadStart} bytes`,
    };
  }
  const o = rec.payloadStart;
  const magic = getU32(buf, o);
  if (magic !== SEGMENT_MAGIC)
    return { expected: `segment magic 0x${SEGMENT_MAGIC.toString(16)}`, found: `0x${magic.toString(16)}` };
  const version = buf[o + 4]! | (buf[o + 5]! << 8);
  if (version !== FORMAT_VERSION)
    return { expected: `WAL format version ${FORMAT_VERSION}`, found: `version ${version}` };
  const n: number[] = [];
  for (let k = 0; k < 7; k++) n.push(getU64(buf, o + 8 + 8 * k));
  if (n.some((x) => x < 0)) return { expected: 'u64 fields ≤ 2^53-1', found: 'a larger value' };
  return {
    seq: n[0]!,
    firstIndex: n[1]!,
    hardState: { term: n[2]!, vote: n[3]!, commit: n[4]! },
    base: { index: n[5]!, term: n[6]! },
  };
}

/**
 * Decodes a batch payload into ops. Entry data are views into `buf` (no copy): the caller keeps the
 * segment's buffer alive as long as it keeps the entries.
 */
export function decodeBatch(buf: Uint8Array, rec: RawRecord): Op[] | FrameProblem {
  if (rec.type !== RecordType.Batch) return { expected: 'a batch record', found: `record type ${rec.type}` };
  const end = rec.end;
  let o = rec.payloadStart;
  const need = (k: number, what: string): FrameProblem | undefined =>
    o + k > end ? { expected: `${k} more byte(s) for ${what}`, found: `${end - o} left in the record` } : undefined;
  let p = need(4, 'the op count');
  if (p) return p;
  const count = getU32(buf, o);
  o += 4;
  const ops: Op[] = [];
  for (let i = 0; i < count; i++) {
    if ((p = need(1, 'an op kind'))) return p;
    const kind = buf[o++]!;
    if (kind === OpKind.HardState) {
      if ((p = need(24, 'a hard state'))) return p;
      const term = getU64(buf, o),
        vote = getU64(buf, o + 8),
        commit = getU64(buf, o + 16);
      if (term < 0 || vote < 0 || commit < 0)
        return { expected: 'hard state fields ≤ 2^53-1', found: 'a larger value' };
      ops.push({ kind, hardState: { term, vote, commit } });
      o += 24;
    } else if (kind === OpKind.SnapshotMark) {
      if ((p = need(16, 'a snapshot mark'))) return p;
      const index = getU64(buf, o),
        term = getU64(buf, o + 8);
      if (index < 0 || term < 0) return { expected: 'snapshot mark fields ≤ 2^53-1', found: 'a larger value' };
      ops.push({ kind, base: { index, term } });
      o += 16;
    } else if (kind === OpKind.Entries) {
      if ((p = need(12, 'an entry run header'))) return p;
      const first = getU64(buf, o);
      const n = getU32(buf, o + 8);
      o += 12;
      if (first < 1 || n === 0 || first + n - 1 > INDEX_MAX)
        return { expected: 'an entry run with index ≥ 1 and ≥ 1 entry', found: `first index ${first}, ${n} entries` };
      const entries: Entry[] = new Array(n);
      for (let k = 0; k < n; k++) {
        if ((p = need(13, `entry ${first + k}`))) return p;
        const term = getU64(buf, o);
        const type = buf[o + 8]! as EntryType;
        const len = getU32(buf, o + 9);
        o += 13;
        if ((p = need(len, `the data of entry ${first + k}`))) return p;
        if (term < 0) return { expected: `entry ${first + k} term ≤ 2^53-1`, found: 'a larger value' };
        entries[k] = { index: first + k, term, type, data: buf.subarray(o, o + len) };
        o += len;
      }
      ops.push({ kind, entries });
    } else {
      return { expected: 'op kind 1 (entries), 2 (hard state) or 3 (snapshot mark)', found: `kind ${kind}` };
    }
  }
  if (o !== end) return { expected: `the batch to end after ${count} op(s)`, found: `${end - o} trailing byte(s)` };
  return ops;
}

/**
 * True when a valid record starts anywhere in `buf(from, end)`. Used to tell a torn tail (nothing
 * valid follows the bad bytes: the last write was cut short) from corruption (valid records follow,
 * so the bad bytes had been written, synced and acknowledged before them).
 */
export function anyValidRecordAfter(buf: Uint8Array, from: number, end: number): number | undefined {
  for (let off = from + 1; off + RECORD_HEADER_BYTES <= end; off++) {
    const t = buf[off + 8];
    if (t !== RecordType.SegmentHeader && t !== RecordType.Batch) continue;
    if (buf[off + 9] !== 0 || buf[off + 10] !== 0 || buf[off + 11] !== 0) continue;
    // Cheap structural checks first, so that data which merely looks like a header (Cap'n Proto is
    // full of small integers and zeros) does not cost a CRC over up to RECORD_PAYLOAD_BYTES_MAX.
    const p = off + RECORD_HEADER_BYTES;
    if (p + 5 > end) continue;
    if (t === RecordType.SegmentHeader) {
      if (getU32(buf, p) !== SEGMENT_MAGIC) continue;
    } else {
      const ops = getU32(buf, p);
      const kind = buf[p + 4];
      if (
        ops === 0 ||
        ops > OPS_PER_BATCH_PLAUSIBLE_MAX ||
        (kind !== OpKind.Entries && kind !== OpKind.HardState && kind !== OpKind.SnapshotMark)
      )
        continue;
    }
    if (!isFrameProblem(readFrame(buf, off, end))) return off;
  }
  return undefined;
}
