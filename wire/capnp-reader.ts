// The reader of standard Cap'n Proto messages (encoding spec: https://capnproto.org/encoding.html).
// It accepts any standard message: several segments, far pointers (single and double), and structs
// written by an older or newer schema (a missing field reads as its default). It is defensive:
// every pointer is bounds-checked and the words read are limited (capnp-limits.ts). Texts: capnp-text.ts.

import { NESTING_DEPTH_MAX, TRAVERSAL_FACTOR_MAX, WireError } from './capnp-limits.js';
import { decodeText } from './capnp-text.js';
import type { Writer } from './capnp-writer.js';
import { copyBytes, ListRef, StructRef } from './capnp-refs.js';

export { ListRef, StructRef } from './capnp-refs.js';

const enum PointerKind {
  Struct = 0,
  List = 1,
  Far = 2,
  Other = 3,
}

const enum ElemSize {
  Void = 0,
  Bit = 1,
  Byte = 2,
  TwoBytes = 3,
  FourBytes = 4,
  EightBytes = 5,
  Pointer = 6,
  Composite = 7,
}

const TWO_32 = 4294967296;

export class Reader {
  readonly bytes: Uint8Array;
  private readonly dv: DataView;
  private readonly segStarts: number[];
  private readonly segEnds: number[];
  /** segStarts[0]: where the first segment (and the root pointer) begins. */
  private readonly seg0Start: number;
  private budgetWords: number;
  private readonly budgetWordsMax: number;
  /** Current nesting depth, maintained by callers of enter/leave (recursive structures). */
  private depth = 0;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes.byteLength < 8) throw new WireError('message shorter than its segment table', 0);
    const segCount = this.dv.getUint32(0, true) + 1;
    if (segCount > 512) throw new WireError(`segment count ${segCount} is implausible`, 0);
    const tableBytes = 4 + segCount * 4;
    let at = tableBytes + ((8 - (tableBytes % 8)) % 8);
    let totalWords = 0;
    this.seg0Start = at;
    this.segStarts = new Array<number>(segCount);
    this.segEnds = new Array<number>(segCount);
    for (let i = 0; i < segCount; i++) {
      if (4 + i * 4 + 4 > bytes.byteLength) throw new WireError('truncated segment table', 4 + i * 4);
      const words = this.dv.getUint32(4 + i * 4, true);
      this.segStarts[i] = at;
      at += words * 8;
      this.segEnds[i] = at;
      totalWords += words;
    }
    if (at > bytes.byteLength)
      throw new WireError(`message truncated: needs ${at} bytes, has ${bytes.byteLength}`, bytes.byteLength);
    if (totalWords === 0) throw new WireError('empty message (no root pointer)', 0);
    this.budgetWordsMax = Math.max(64, totalWords * TRAVERSAL_FACTOR_MAX);
    this.budgetWords = this.budgetWordsMax;
  }

  /** Position of the root pointer. */
  get root(): number {
    return this.seg0Start;
  }

  private charge(words: number, at: number): void {
    this.budgetWords -= words;
    if (this.budgetWords < 0) throw new WireError('traversal limit exceeded (message amplification?)', at);
  }

  /**
   * Gives the traversal budget back in full. For a reader kept over a message that is read again
   * and again (snapshot.ts keeps finished jobs encoded and decodes a field when it is read): the
   * limit then bounds each read, not the reader's whole life.
   */
  resetBudget(): void {
    this.budgetWords = this.budgetWordsMax;
  }

  /** One level deeper; refused past NESTING_DEPTH_MAX, leaving the depth as it was (a reader is read again). */
  enter(at: number): void {
    if (this.depth >= NESTING_DEPTH_MAX) throw new WireError(`nesting deeper than ${NESTING_DEPTH_MAX}`, at);
    this.depth++;
  }
  leave(): void {
    this.depth--;
  }

  private inBounds(start: number, bytes: number, at: number): void {
    if (start < this.seg0Start || start + bytes > this.bytes.byteLength) {
      throw new WireError('pointer out of bounds', at);
    }
  }

  /** Where the last `resolve` found the pointer word describing the object, and the object. */
  private tagPos = 0;
  private target = 0;

  /**
   * Follows far pointers: sets `tagPos` (the pointer word describing the object) and `target`
   * (where the object starts). For a near pointer `tagPos` is `ptrPos`. No allocation: this runs
   * once per struct and list read.
   */
  private resolve(ptrPos: number): void {
    const dv = this.dv;
    const lo = dv.getUint32(ptrPos, true);
    if ((lo & 3) !== PointerKind.Far) {
      this.tagPos = ptrPos;
      this.target = ptrPos + 8 + (dv.getInt32(ptrPos, true) >> 2) * 8;
      return;
    }
    const seg = dv.getUint32(ptrPos + 4, true);
    if (seg >= this.segStarts.length) throw new WireError(`far pointer to missing segment ${seg}`, ptrPos);
    const padPos = this.segStarts[seg]! + (lo >>> 3) * 8;
    const doubleFar = (lo & 4) !== 0;
    if (padPos + (doubleFar ? 16 : 8) > this.segEnds[seg]!)
      throw new WireError('far pointer landing pad out of bounds', ptrPos);
    if (!doubleFar) {
      const padLo = dv.getUint32(padPos, true);
      if ((padLo & 3) === PointerKind.Far) throw new WireError('far pointer lands on a far pointer', padPos);
      this.tagPos = padPos;
      this.target = padPos + 8 + (dv.getInt32(padPos, true) >> 2) * 8;
      return;
    }
    const farLo = dv.getUint32(padPos, true);
    const seg2 = dv.getUint32(padPos + 4, true);
    if ((farLo & 7) !== PointerKind.Far || seg2 >= this.segStarts.length)
      throw new WireError('bad double-far landing pad', padPos);
    this.tagPos = padPos + 8;
    this.target = this.segStarts[seg2]! + (farLo >>> 3) * 8;
  }

  isNull(ptrPos: number): boolean {
    return this.dv.getUint32(ptrPos, true) === 0 && this.dv.getUint32(ptrPos + 4, true) === 0;
  }

  /** Resolves `ptrPos` (`tagPos`, `target`): its second word (sizes, or element size and count), -1 for null. */
  private follow(ptrPos: number, kind: PointerKind, error: string): number {
    if (this.isNull(ptrPos)) return -1;
    this.resolve(ptrPos);
    if ((this.dv.getUint32(this.tagPos, true) & 3) !== kind) throw new WireError(error, ptrPos);
    return this.dv.getUint32(this.tagPos + 4, true);
  }

  /** The struct `ptrPos` points at, or null for a null pointer. */
  struct(ptrPos: number): StructRef | null {
    const hi = this.follow(ptrPos, PointerKind.Struct, 'expected a struct pointer');
    if (hi < 0) return null;
    const dataWords = hi & 0xffff;
    const ptrCount = hi >>> 16;
    const target = this.target;
    this.inBounds(target, (dataWords + ptrCount) * 8, ptrPos);
    this.charge(dataWords + ptrCount + 1, ptrPos);
    return new StructRef(target, dataWords * 8, target + dataWords * 8, ptrCount);
  }

  /** The list at `ptrPos` (null pointer: null); one whose elements are not `size` is refused as not `what`. */
  private listOf(ptrPos: number, size: ElemSize, what: string): ListRef | null {
    const l = this.list(ptrPos);
    if (l !== null && l.elemSize !== size) throw new WireError(`expected ${what}`, ptrPos);
    return l;
  }

  /** The list `ptrPos` points at, or null for a null pointer. */
  list(ptrPos: number): ListRef | null {
    const hi = this.follow(ptrPos, PointerKind.List, 'expected a list pointer');
    if (hi < 0) return null;
    const target = this.target;
    const elemSize = hi & 7;
    const count = hi >>> 3;
    if (elemSize === ElemSize.Composite) {
      this.inBounds(target, 8 + count * 8, ptrPos);
      const tagLo = this.dv.getUint32(target, true);
      if ((tagLo & 3) !== PointerKind.Struct) throw new WireError('composite list tag is not a struct tag', target);
      const n = tagLo >>> 2;
      const dataWords = this.dv.getUint16(target + 4, true);
      const ptrCount = this.dv.getUint16(target + 6, true);
      const wordsEach = dataWords + ptrCount;
      if (n * wordsEach > count) throw new WireError('composite list elements overrun the list', target);
      this.charge(1 + Math.max(count, n), ptrPos);
      return new ListRef(target + 8, n, elemSize, wordsEach * 8, dataWords * 8, ptrCount);
    }
    const bitsEach = [0, 1, 8, 16, 32, 64, 64, 0][elemSize]!;
    const bytes = Math.ceil((count * bitsEach) / 8);
    this.inBounds(target, bytes, ptrPos);
    this.charge(Math.max(1, Math.ceil(bytes / 8)), ptrPos);
    if (elemSize === ElemSize.Pointer) return new ListRef(target, count, elemSize, 8, 0, 1);
    return new ListRef(target, count, elemSize, bitsEach / 8, bitsEach / 8, 0);
  }

  /**
   * Copies the object `srcPtr` points at, and everything under it, into `w` at the pointer
   * `dstPtr` (a deep copy, as Cap'n Proto's `setRoot(reader)`): far pointers are followed and the
   * copy is one segment. Pointers are copied in order, each subtree before the next, which is the
   * order facts-codec.ts writes them in, so a copy of a struct that codec wrote is byte-identical
   * to writing the decoded value again. Bounds, nesting and the traversal limit are checked as in
   * any read.
   */
  copyTo(w: Writer, dstPtr: number, srcPtr: number): void {
    if (this.isNull(srcPtr)) return;
    if (this.copyNearBytes(w, dstPtr, srcPtr)) return;
    this.resolve(srcPtr);
    const kind = this.dv.getUint32(this.tagPos, true) & 3;
    this.enter(srcPtr);
    try {
      if (kind === PointerKind.Struct) {
        const s = this.struct(srcPtr)!;
        const d = w.struct(dstPtr, s.dataBytes >>> 3, s.ptrCount);
        copyBytes(w.bytes, d, this.bytes, s.data, s.dataBytes);
        for (let i = 0; i < s.ptrCount; i++) this.copyTo(w, d + s.dataBytes + i * 8, s.ptrs + i * 8);
      } else if (kind === PointerKind.List) {
        const l = this.list(srcPtr)!;
        if (l.elemSize === ElemSize.Composite) {
          const at = w.structList(dstPtr, l.count, l.dataBytes >>> 3, l.ptrCount);
          for (let i = 0; i < l.count; i++)
            copyBytes(w.bytes, at + i * l.step, this.bytes, l.start + i * l.step, l.dataBytes);
          for (let i = 0; i < l.count; i++) {
            const src = l.start + i * l.step + l.dataBytes;
            const dst = at + i * l.step + l.dataBytes;
            for (let j = 0; j < l.ptrCount; j++) this.copyTo(w, dst + j * 8, src + j * 8);
          }
        } else if (l.elemSize === ElemSize.Pointer) {
          const at = w.pointerList(dstPtr, l.count);
          for (let i = 0; i < l.count; i++) this.copyTo(w, at + i * 8, l.start + i * 8);
        } else {
          const bytes = l.elemSize === ElemSize.Bit ? (l.count + 7) >>> 3 : l.count * l.step;
          const at = w.primitiveList(dstPtr, l.elemSize, l.count, bytes);
          copyBytes(w.bytes, at, this.bytes, l.start, bytes);
        }
      } else {
        throw new WireError('expected a struct or list pointer (capabilities are not supported)', srcPtr);
      }
    } finally {
      this.leave();
    }
  }

  /**
   * copyTo of the commonest leaf, a Text (or Data) a near pointer points at, with no object
   * allocated: the same checks as `list` (bounds, traversal limit) and `enter` (nesting). False:
   * `srcPtr` is something else, for the general path.
   */
  private copyNearBytes(w: Writer, dstPtr: number, srcPtr: number): boolean {
    const dv = this.dv;
    const hi = dv.getUint32(srcPtr + 4, true);
    if ((dv.getUint32(srcPtr, true) & 3) !== PointerKind.List || (hi & 7) !== ElemSize.Byte) return false;
    const start = srcPtr + 8 + (dv.getInt32(srcPtr, true) >> 2) * 8;
    const count = hi >>> 3;
    this.enter(srcPtr);
    this.leave();
    this.inBounds(start, count, srcPtr);
    this.charge(Math.max(1, (count + 7) >>> 3), srcPtr);
    const at = w.primitiveList(dstPtr, ElemSize.Byte, count, count); // may regrow w.bytes: read it after
    copyBytes(w.bytes, at, this.bytes, start, count);
    return true;
  }

  /** Element `i` of a composite list (or a pointer-list element read as a struct is not supported). */
  elem(list: ListRef, i: number): StructRef {
    if (list.elemSize !== ElemSize.Composite) throw new WireError('expected a list of structs', list.start);
    const at = list.start + i * list.step;
    return new StructRef(at, list.dataBytes, at + list.dataBytes, list.ptrCount);
  }

  /** Pointer `i` of a struct, as a position; -1 when the struct (an older schema) has no such pointer. */
  ptr(s: StructRef, i: number): number {
    return i < s.ptrCount ? s.ptrs + i * 8 : -1;
  }

  /** Text at pointer `i` of `s`; null for a null pointer or a pointer the struct does not have. */
  text(s: StructRef, i: number): string | null {
    if (i < s.ptrCount) return this.textAt(s.ptrs + i * 8);
    this.textSlot = -1;
    return null;
  }

  textAt(ptrPos: number): string | null {
    const dv = this.dv;
    const lo = dv.getUint32(ptrPos, true);
    const hi = dv.getUint32(ptrPos + 4, true);
    if (lo === 0 && hi === 0) {
      this.textSlot = -1;
      return null;
    }
    let start: number;
    if ((lo & 3) === PointerKind.List) {
      start = ptrPos + 8 + (dv.getInt32(ptrPos, true) >> 2) * 8;
    } else {
      const l = this.listOf(ptrPos, ElemSize.Byte, 'Text (a list of bytes)');
      if (l === null) return null;
      return decodeText(this, this.bytes, this.dv, l.start, l.count, ptrPos);
    }
    if ((hi & 7) !== ElemSize.Byte) throw new WireError('expected Text (a list of bytes)', ptrPos);
    const count = hi >>> 3;
    if (start < this.seg0Start || start + count > this.bytes.byteLength)
      throw new WireError('Text out of bounds', ptrPos);
    this.charge((count + 7) >>> 3, ptrPos);
    return decodeText(this, this.bytes, this.dv, start, count, ptrPos);
  }

  /**
   * The intern slot of the text the last `text`/`textAt` call returned, or -1 when that text is not
   * interned (null, empty, long, non-ASCII, or not admitted). Two texts read with the same slot
   * that compare equal are the same string: the facts codec (statemachine/shared-values-codec.ts)
   * keys its caches of small decoded values (an env list, an argv) on these slots.
   */
  textSlot = -1;

  /** A List(UInt32) at pointer position `ptrPos` (null pointer: null). */
  u32ListAt(ptrPos: number): number[] | null {
    const l = this.listOf(ptrPos, ElemSize.FourBytes, 'List(UInt32)');
    if (l === null) return null;
    const out = new Array<number>(l.count);
    for (let i = 0; i < l.count; i++) out[i] = this.dv.getUint32(l.start + i * 4, true);
    return out;
  }

  /** A List(UInt64) at pointer position `ptrPos` (null pointer: null); values as u64() reads them. */
  u64ListAt(ptrPos: number): number[] | null {
    const l = this.listOf(ptrPos, ElemSize.EightBytes, 'List(UInt64)');
    if (l === null) return null;
    const out = new Array<number>(l.count);
    for (let i = 0; i < l.count; i++)
      out[i] = this.word64(l.start + i * 8, this.dv.getUint32(l.start + i * 8 + 4, true));
    return out;
  }

  /** Data (List(UInt8)) at pointer position `ptrPos`, as a view into the message (null pointer: null). */
  dataAt(ptrPos: number): Uint8Array | null {
    const l = this.listOf(ptrPos, ElemSize.Byte, 'Data (a list of bytes)');
    if (l === null) return null;
    return this.bytes.subarray(l.start, l.start + l.count);
  }

  /** A List(Text) at `ptrPos`, located but not read (its texts: textAt(start + 8 i)); null pointer: null. */
  textListRef(ptrPos: number): ListRef | null {
    return this.listOf(ptrPos, ElemSize.Pointer, 'List(Text)');
  }

  /** Texts of a List(Text) at pointer position `ptrPos` (null pointer: null). */
  textList(ptrPos: number): string[] | null {
    const l = this.textListRef(ptrPos);
    if (l === null) return null;
    const out = new Array<string>(l.count);
    for (let i = 0; i < l.count; i++) out[i] = this.textAt(l.start + i * 8) ?? '';
    return out;
  }

  // Data-section reads: `off` is the field's byte offset; a struct too small to hold it (written by
  // an older schema) yields the default, 0.
  u16(s: StructRef, off: number): number {
    return off + 2 <= s.dataBytes ? this.dv.getUint16(s.data + off, true) : 0;
  }
  u32(s: StructRef, off: number): number {
    return off + 4 <= s.dataBytes ? this.dv.getUint32(s.data + off, true) : 0;
  }
  i32(s: StructRef, off: number): number {
    return off + 4 <= s.dataBytes ? this.dv.getInt32(s.data + off, true) : 0;
  }
  u64(s: StructRef, off: number): number {
    return off + 8 <= s.dataBytes ? this.word64(s.data + off, this.dv.getUint32(s.data + off + 4, true)) : 0;
  }
  i64(s: StructRef, off: number): number {
    return off + 8 <= s.dataBytes ? this.word64(s.data + off, this.dv.getInt32(s.data + off + 4, true)) : 0;
  }
  // The 64-bit value at `pos` whose high half is `hi` (read signed or not by the caller). One that
  // fits in 31 bits is returned as an int32 (`| 0`): V8 then keeps it a small integer, where
  // `lo + hi * 2^32` is a double that a job id, a zero time or a Map key would each box in a heap
  // object of its own.
  private word64(pos: number, hi: number): number {
    const lo = this.dv.getUint32(pos, true);
    return hi === 0 && lo <= 0x7fffffff ? lo | 0 : lo + hi * TWO_32;
  }
  f64(s: StructRef, off: number): number {
    return off + 8 <= s.dataBytes ? this.dv.getFloat64(s.data + off, true) : 0;
  }
  bool(s: StructRef, bit: number): boolean {
    const off = bit >>> 3;
    return off < s.dataBytes ? (this.bytes[s.data + off]! & (1 << (bit & 7))) !== 0 : false;
  }
}
