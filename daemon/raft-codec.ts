// Raft messages as standard Cap'n Proto (schema/raft.capnp), one per binary frame on `/raft`.
// Written by hand on wire/capnp-wire.ts (the layout below is what
// `capnp compile -ocapnp schema/raft.capnp` prints) because replication is a hot path;
// raft-codec.test.ts checks the bytes against capnp-es and `capnp decode`.
//
// A MsgSnap never travels whole: the sender splits it into chunks (raft/snapshot-chunks.ts), each a
// Message of type Snap carrying snapMeta / snapOffset / snapTotal / snapData.

import { Reader, WireError, Writer, type StructRef } from '../wire/capnp-wire.js';
import type { Message } from '../raft/message.js';
import { MessageType } from '../raft/message.js';
import type { SnapshotChunk } from '../raft/snapshot-chunks.js';
import type { ConfState, Entry, EntryType, SnapshotMeta } from '../raft/types.js';

// Message: 9 data words, 4 pointers.
const M_DATA_WORDS = 9;
const M_PTRS = 4;
const M_TYPE = 0; // u8
const M_REJECT_BIT = 8;
const M_FROM = 4;
const M_TO = 8;
const M_TERM = 16;
const M_LOG_TERM = 24;
const M_INDEX = 32;
const M_COMMIT = 40;
const M_REJECT_HINT = 48;
const M_SNAP_OFFSET = 56;
const M_SNAP_TOTAL = 64;
const M_P_ENTRIES = 0;
const M_P_CONTEXT = 1;
const M_P_SNAP_META = 2;
const M_P_SNAP_DATA = 3;
// Entry: 3 data words, 1 pointer.
const E_DATA_WORDS = 3;
const E_PTRS = 1;
// SnapshotMeta: 2 data words, 1 pointer; ConfState: 0 data words, 2 pointers.

export type Frame =
  { readonly kind: 'message'; readonly message: Message } | { readonly kind: 'chunk'; readonly chunk: SnapshotChunk };

export class FrameError extends Error {
  override readonly name = 'FrameError';
}

const writer = new Writer(64 * 1024);

// List pointers for Data and List(UInt32), written through the Writer's public surface.
const LIST_POINTER = 1;
const ELEM_BYTE = 2;
const ELEM_FOUR_BYTES = 4;

function allocList(w: Writer, ptrPos: number, elemSize: number, count: number, bytes: number): number {
  const words = (bytes + 7) >>> 3;
  w.reserve(words * 8);
  const at = w.end;
  w.end += words * 8;
  w.dv.setInt32(ptrPos, (((at - ptrPos - 8) / 8) << 2) | LIST_POINTER, true);
  w.dv.setUint32(ptrPos + 4, elemSize | (count << 3), true);
  return at;
}

function writeData(w: Writer, ptrPos: number, b: Uint8Array): void {
  const at = allocList(w, ptrPos, ELEM_BYTE, b.byteLength, b.byteLength);
  w.bytes.set(b, at);
}

function writeU32List(w: Writer, ptrPos: number, values: readonly number[]): void {
  const at = allocList(w, ptrPos, ELEM_FOUR_BYTES, values.length, values.length * 4);
  for (let i = 0; i < values.length; i++) w.dv.setUint32(at + i * 4, values[i]!, true);
}

function readData(r: Reader, ptrPos: number): Uint8Array | null {
  const l = r.list(ptrPos);
  if (l === null) return null;
  if (l.elemSize !== ELEM_BYTE) throw new FrameError('expected Data (a list of bytes)');
  return r.bytes.subarray(l.start, l.start + l.count);
}

function readU32List(r: Reader, ptrPos: number): number[] {
  const l = r.list(ptrPos);
  if (l === null) return [];
  if (l.elemSize !== ELEM_FOUR_BYTES) throw new FrameError('expected List(UInt32)');
  const dv = new DataView(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
  const out = new Array<number>(l.count);
  for (let i = 0; i < l.count; i++) out[i] = dv.getUint32(l.start + i * 4, true);
  return out;
}

function header(w: Writer, type: MessageType, from: number, to: number, term: number): number {
  w.reset();
  const m = w.struct(w.root, M_DATA_WORDS, M_PTRS);
  w.dv.setUint8(m + M_TYPE, type);
  w.u32(m + M_FROM, from);
  w.u32(m + M_TO, to);
  w.u64(m + M_TERM, term);
  return m;
}

/** Encodes any message except a whole MsgSnap (send its chunks with encodeSnapshotChunk). */
export function encodeMessage(msg: Message): Uint8Array {
  if (msg.type === MessageType.Snap) throw new FrameError('a MsgSnap is sent as chunks (encodeSnapshotChunk)');
  const w = writer;
  let payload = 0;
  for (const e of msg.entries) payload += e.data.byteLength + 40;
  w.reserve(payload + 256);
  const m = header(w, msg.type, msg.from, msg.to, msg.term);
  w.u64(m + M_LOG_TERM, msg.logTerm);
  w.u64(m + M_INDEX, msg.index);
  w.u64(m + M_COMMIT, msg.commit);
  w.bool(m, M_REJECT_BIT, msg.reject);
  w.u64(m + M_REJECT_HINT, msg.rejectHint);
  const ptrs = m + M_DATA_WORDS * 8;
  if (msg.entries.length > 0) {
    const first = w.structList(ptrs + M_P_ENTRIES * 8, msg.entries.length, E_DATA_WORDS, E_PTRS);
    const step = (E_DATA_WORDS + E_PTRS) * 8;
    for (let i = 0; i < msg.entries.length; i++) {
      const e = msg.entries[i]!;
      const at = first + i * step;
      w.u64(at, e.term);
      w.u64(at + 8, e.index);
      w.dv.setUint8(at + 16, e.type);
      if (e.data.byteLength > 0) writeData(w, at + E_DATA_WORDS * 8, e.data);
    }
  }
  if (msg.context !== '') w.text(ptrs + M_P_CONTEXT * 8, msg.context);
  return w.finish(true);
}

export function encodeSnapshotChunk(c: SnapshotChunk): Uint8Array {
  const w = writer;
  w.reserve(c.data.byteLength + 512);
  const m = header(w, MessageType.Snap, c.from, c.to, c.term);
  w.u64(m + M_SNAP_OFFSET, c.offset);
  w.u64(m + M_SNAP_TOTAL, c.totalBytes);
  const ptrs = m + M_DATA_WORDS * 8;
  const meta = w.struct(ptrs + M_P_SNAP_META * 8, 2, 1);
  w.u64(meta, c.meta.index);
  w.u64(meta + 8, c.meta.term);
  const conf = w.struct(meta + 16, 0, 2);
  writeU32List(w, conf, c.meta.conf.voters);
  writeU32List(w, conf + 8, c.meta.conf.learners);
  writeData(w, ptrs + M_P_SNAP_DATA * 8, c.data);
  return w.finish(true);
}

function readConf(r: Reader, meta: StructRef): ConfState {
  const p = r.ptr(meta, 0);
  const conf = p < 0 ? null : r.struct(p);
  if (conf === null) return { voters: [], learners: [] };
  const v = r.ptr(conf, 0);
  const l = r.ptr(conf, 1);
  return { voters: v < 0 ? [] : readU32List(r, v), learners: l < 0 ? [] : readU32List(r, l) };
}

const NO_ENTRIES: Entry[] = [];

/** Decodes one frame; throws FrameError naming what is wrong (the peer's frame is then dropped). */
export function decodeFrame(bytes: Uint8Array): Frame {
  try {
    const r = new Reader(bytes);
    const m = r.struct(r.root);
    if (m === null) throw new FrameError('frame has no root struct');
    const type = r.bytes[m.data + M_TYPE] ?? 0;
    if (m.dataBytes < 1 || !(type in MessageType)) throw new FrameError(`unknown message type ${type}`);
    const head: FrameHead = { from: r.u32(m, M_FROM), to: r.u32(m, M_TO), term: r.u64(m, M_TERM) };
    if (type === MessageType.Snap) return { kind: 'chunk', chunk: readChunk(r, m, head) };
    return { kind: 'message', message: readMessage(r, m, type as MessageType, head) };
  } catch (err) {
    if (err instanceof FrameError) throw err;
    if (err instanceof WireError) throw new FrameError(`not a valid Raft frame: ${err.message}`);
    throw err;
  }
}

/** What every frame starts with: sender, addressee, term. */
interface FrameHead {
  readonly from: number;
  readonly to: number;
  readonly term: number;
}

function readChunk(r: Reader, m: StructRef, head: FrameHead): SnapshotChunk {
  const mp = r.ptr(m, M_P_SNAP_META);
  const meta = mp < 0 ? null : r.struct(mp);
  if (meta === null) throw new FrameError('snapshot chunk without snapshot metadata');
  const dp = r.ptr(m, M_P_SNAP_DATA);
  const data = dp < 0 ? new Uint8Array(0) : (readData(r, dp) ?? new Uint8Array(0));
  const snapMeta: SnapshotMeta = { index: r.u64(meta, 0), term: r.u64(meta, 8), conf: readConf(r, meta) };
  // Copy: the chunk outlives the frame buffer (the assembler keeps it until the last chunk).
  return {
    from: head.from,
    to: head.to,
    term: head.term,
    meta: snapMeta,
    offset: r.u64(m, M_SNAP_OFFSET),
    totalBytes: r.u64(m, M_SNAP_TOTAL),
    data: data.slice(),
  };
}

function readMessage(r: Reader, m: StructRef, type: MessageType, head: FrameHead): Message {
  const cp = r.ptr(m, M_P_CONTEXT);
  return {
    type,
    from: head.from,
    to: head.to,
    term: head.term,
    logTerm: r.u64(m, M_LOG_TERM),
    index: r.u64(m, M_INDEX),
    entries: readEntries(r, m),
    commit: r.u64(m, M_COMMIT),
    reject: r.bool(m, M_REJECT_BIT),
    rejectHint: r.u64(m, M_REJECT_HINT),
    snapshot: undefined,
    context: cp < 0 ? '' : (r.textAt(cp) ?? ''),
  };
}

function readEntries(r: Reader, m: StructRef): Entry[] {
  const ep = r.ptr(m, M_P_ENTRIES);
  const list = ep < 0 ? null : r.list(ep);
  if (list === null) return NO_ENTRIES;
  const entries = new Array<Entry>(list.count);
  for (let i = 0; i < list.count; i++) {
    const e = r.elem(list, i);
    const dp = r.ptr(e, 0);
    const data = dp < 0 ? null : readData(r, dp);
    entries[i] = {
      term: r.u64(e, 0),
      index: r.u64(e, 8),
      type: (e.dataBytes > 16 ? (r.bytes[e.data + 16] ?? 0) : 0) as EntryType,
      // Copy out of the frame: entries live on in the log long after the frame is gone.
      data: data === null ? new Uint8Array(0) : data.slice(),
    };
  }
  return entries;
}
