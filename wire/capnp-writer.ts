// The writer of standard Cap'n Proto messages (encoding spec: https://capnproto.org/encoding.html):
// one segment with the standard stream framing, laid out with plain DataView arithmetic by the
// codecs (statemachine/facts-codec.ts, statemachine/snapshot.ts), which place each struct by hand.
// Re-exported by capnp-wire.ts.

import { MESSAGE_BYTES_MAX, WireError } from './capnp-limits.js';

// The encoding spec's pointer kinds and list element sizes this writer uses (capnp-reader.ts has
// the full sets). Const enums, so that their values are inlined: they cannot be shared between files.
const enum PointerKind {
  Struct = 0,
  List = 1,
}

const enum ElemSize {
  Byte = 2,
  Pointer = 6,
  Composite = 7,
}

const TWO_32 = 4294967296;

const textEncoder = new TextEncoder();

/**
 * Builds one single-segment message. Positions are byte offsets into `bytes`; the segment begins at
 * byte 8 (after the stream framing), so the root pointer sits at byte 8.
 */
export class Writer {
  bytes: Uint8Array;
  dv: DataView;
  /** End of the allocated part of the segment, as a byte offset into `bytes`. */
  end = 16;

  constructor(initialBytes = 1024) {
    this.bytes = new Uint8Array(Math.max(64, initialBytes));
    this.dv = new DataView(this.bytes.buffer);
  }

  /** Forgets the message so the buffer can be reused; the used part is zeroed (Cap'n Proto defaults). */
  reset(): void {
    this.bytes.fill(0, 0, this.end);
    this.end = 16;
  }

  /** Position of the root pointer. */
  get root(): number {
    return 8;
  }

  private alloc(words: number): number {
    const at = this.end;
    const need = at + words * 8;
    if (need > this.bytes.length) this.grow(need);
    this.end = need;
    return at;
  }

  private grow(need: number): void {
    if (need > MESSAGE_BYTES_MAX) throw new WireError(`message larger than ${MESSAGE_BYTES_MAX} bytes`, need);
    let size = this.bytes.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(Math.min(size, MESSAGE_BYTES_MAX));
    next.set(this.bytes.subarray(0, this.end));
    this.bytes = next;
    this.dv = new DataView(next.buffer);
  }

  /** Reserves at least `bytes` more bytes so that a run of small allocations does not regrow. */
  reserve(bytes: number): void {
    if (this.end + bytes > this.bytes.length) this.grow(this.end + bytes);
  }

  private pointTo(ptrPos: number, target: number, kind: PointerKind): void {
    const offsetWords = (target - ptrPos - 8) / 8;
    this.dv.setInt32(ptrPos, (offsetWords << 2) | kind, true);
  }

  /** Allocates a struct and points `ptrPos` at it; returns the struct's data section position. */
  struct(ptrPos: number, dataWords: number, ptrCount: number): number {
    const at = this.alloc(dataWords + ptrCount);
    this.pointTo(ptrPos, at, PointerKind.Struct);
    this.dv.setUint32(ptrPos + 4, dataWords | (ptrCount << 16), true);
    return at;
  }

  /** Allocates a list of `count` structs; returns the position of the first element. */
  structList(ptrPos: number, count: number, dataWords: number, ptrCount: number): number {
    const wordsEach = dataWords + ptrCount;
    const tag = this.alloc(1 + count * wordsEach);
    this.pointTo(ptrPos, tag, PointerKind.List);
    this.dv.setUint32(ptrPos + 4, ElemSize.Composite | ((count * wordsEach) << 3), true);
    this.dv.setUint32(tag, count << 2, true);
    this.dv.setUint32(tag + 4, dataWords | (ptrCount << 16), true);
    return tag + 8;
  }

  /** Allocates a list of `count` pointers (e.g. List(Text)); returns the position of the first. */
  pointerList(ptrPos: number, count: number): number {
    const at = this.alloc(count);
    this.pointTo(ptrPos, at, PointerKind.List);
    this.dv.setUint32(ptrPos + 4, ElemSize.Pointer | (count << 3), true);
    return at;
  }

  /** Allocates a list of `count` primitive elements (`elemSize` 0..5) taking `bytes` bytes; returns its position. */
  primitiveList(ptrPos: number, elemSize: number, count: number, bytes: number): number {
    const at = this.alloc((bytes + 7) >>> 3);
    this.pointTo(ptrPos, at, PointerKind.List);
    this.dv.setUint32(ptrPos + 4, elemSize | (count << 3), true);
    return at;
  }

  /** Writes a Text (null leaves the pointer null). */
  text(ptrPos: number, s: string | null): void {
    if (s === null) return;
    const n = s.length;
    // One pass for ASCII (the common case): copy while checking; start over with the UTF-8
    // encoder at the first other character.
    const at = this.alloc((n + 1 + 7) >>> 3);
    const b = this.bytes;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) {
        b.fill(0, at, at + i);
        this.end = at;
        this.utf8Text(ptrPos, s);
        return;
      }
      b[at + i] = c;
    }
    this.pointTo(ptrPos, at, PointerKind.List);
    this.dv.setUint32(ptrPos + 4, ElemSize.Byte | ((n + 1) << 3), true);
  }

  private utf8Text(ptrPos: number, s: string): void {
    const encoded = textEncoder.encode(s);
    const at = this.alloc((encoded.length + 1 + 7) >>> 3);
    this.bytes.set(encoded, at);
    this.pointTo(ptrPos, at, PointerKind.List);
    this.dv.setUint32(ptrPos + 4, ElemSize.Byte | ((encoded.length + 1) << 3), true);
  }

  u16(pos: number, v: number): void {
    this.dv.setUint16(pos, v, true);
  }
  u32(pos: number, v: number): void {
    this.dv.setUint32(pos, v, true);
  }
  i32(pos: number, v: number): void {
    this.dv.setInt32(pos, v, true);
  }
  /** An unsigned 64-bit field from a non-negative safe integer. */
  u64(pos: number, v: number): void {
    this.dv.setUint32(pos, v >>> 0, true);
    this.dv.setUint32(pos + 4, Math.floor(v / TWO_32), true);
  }
  /** A signed 64-bit field from a safe integer. */
  i64(pos: number, v: number): void {
    const hi = Math.floor(v / TWO_32);
    this.dv.setUint32(pos, (v - hi * TWO_32) >>> 0, true);
    this.dv.setInt32(pos + 4, hi, true);
  }
  f64(pos: number, v: number): void {
    this.dv.setFloat64(pos, v, true);
  }
  bool(pos: number, bit: number, v: boolean): void {
    if (v) this.bytes[pos + (bit >>> 3)]! |= 1 << (bit & 7);
  }

  /** The finished message (a copy when `copy`, else a view of the writer's buffer). */
  finish(copy = true): Uint8Array {
    const segWords = (this.end - 8) / 8;
    this.dv.setUint32(0, 0, true); // segment count - 1
    this.dv.setUint32(4, segWords, true);
    return copy ? this.bytes.slice(0, this.end) : this.bytes.subarray(0, this.end);
  }
}
