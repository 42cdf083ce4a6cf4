// A small writer of CANONICAL Cap'n Proto messages (https://capnproto.org/encoding.html,
// "Canonicalization"): one segment with no segment table, the root pointer at word 0, every object
// laid out in pre-order (a struct, then the targets of its pointers in pointer order, each fully
// before the next), no padding or unused space, and each struct's data and pointer sections cut
// after their last non-zero word. Within a struct list all elements share the largest truncated size.
// A zero-sized struct is encoded as a struct pointer with offset -1 and no content.
//
// The caller describes a message as a tree of plain nodes (profile-canonical.ts builds one for an
// AppProfile from the offsets `capnp compile -ocapnp schema/profile.capnp` prints); this file knows
// nothing of any schema. capnp-es cannot be used here: it never truncates trailing zero words.

export type CNode = CStruct | CText | CPointerList | CStructList;

export interface CStruct {
  readonly t: 'struct';
  /** The data section, a whole number of words (may end in zero words: they are cut here). */
  readonly data: Uint8Array;
  readonly ptrs: ReadonlyArray<CNode | null>;
}
export interface CText {
  readonly t: 'text';
  /** UTF-8 without the terminating NUL (added here). */
  readonly utf8: Uint8Array;
}
export interface CPointerList {
  readonly t: 'ptrlist';
  readonly items: ReadonlyArray<CNode | null>;
}
export interface CStructList {
  readonly t: 'structlist';
  readonly items: readonly CStruct[];
}

/** Largest canonical message this writer builds; profiles are a few hundred bytes. */
export const CANONICAL_MESSAGE_BYTES_MAX = 16 * 1024 * 1024;

const ELEMENT_BYTE = 2;
const ELEMENT_POINTER = 6;
const ELEMENT_COMPOSITE = 7;

class WordWriter {
  buf = new Uint8Array(512);
  view = new DataView(this.buf.buffer);
  words = 0;

  alloc(n: number): number {
    const at = this.words;
    this.words += n;
    const need = this.words * 8;
    if (need > CANONICAL_MESSAGE_BYTES_MAX)
      throw new RangeError(`canonical message larger than ${CANONICAL_MESSAGE_BYTES_MAX} bytes`);
    if (need > this.buf.length) {
      let size = this.buf.length * 2;
      while (size < need) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.buf);
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    return at;
  }

  /** A pointer word: low 32 bits (kind + offset) and high 32 bits. */
  pointer(at: number, lo: number, hi: number): void {
    this.view.setUint32(at * 8, lo >>> 0, true);
    this.view.setUint32(at * 8 + 4, hi >>> 0, true);
  }

  structPointer(at: number, target: number, dataWords: number, ptrCount: number): void {
    const offset = target - (at + 1);
    this.pointer(at, ((offset << 2) | 0) >>> 0, (dataWords & 0xffff) | ((ptrCount & 0xffff) << 16));
  }

  listPointer(at: number, target: number, elementSize: number, count: number): void {
    const offset = target - (at + 1);
    if (count >= 2 ** 29) throw new RangeError("list too long for a Cap'n Proto list pointer");
    this.pointer(at, ((offset << 2) | 1) >>> 0, (elementSize | (count << 3)) >>> 0);
  }
}

function truncatedDataWords(s: CStruct): number {
  let w = s.data.length >>> 3;
  outer: while (w > 0) {
    for (let b = (w - 1) * 8; b < w * 8; b++) if (s.data[b] !== 0) break outer;
    w--;
  }
  return w;
}

function truncatedPtrCount(s: CStruct): number {
  let n = s.ptrs.length;
  while (n > 0 && s.ptrs[n - 1] === null) n--;
  return n;
}

function writeTarget(w: WordWriter, node: CNode, ptrAt: number): void {
  switch (node.t) {
    case 'struct': {
      const dw = truncatedDataWords(node);
      const pc = truncatedPtrCount(node);
      if (dw === 0 && pc === 0) {
        w.pointer(ptrAt, 0xfffffffc, 0); // zero-sized struct: offset -1
        return;
      }
      const at = w.alloc(dw + pc);
      w.structPointer(ptrAt, at, dw, pc);
      w.buf.set(node.data.subarray(0, dw * 8), at * 8);
      for (let i = 0; i < pc; i++) {
        const child = node.ptrs[i];
        if (child !== null && child !== undefined) writeTarget(w, child, at + dw + i);
      }
      return;
    }
    case 'text': {
      const count = node.utf8.length + 1;
      const at = w.alloc(Math.ceil(count / 8));
      w.listPointer(ptrAt, at, ELEMENT_BYTE, count);
      w.buf.set(node.utf8, at * 8);
      return;
    }
    case 'ptrlist': {
      const n = node.items.length;
      const at = w.alloc(n);
      w.listPointer(ptrAt, at, ELEMENT_POINTER, n);
      for (let i = 0; i < n; i++) {
        const child = node.items[i];
        if (child !== null && child !== undefined) writeTarget(w, child, at + i);
      }
      return;
    }
    case 'structlist': {
      const n = node.items.length;
      let dw = 0;
      let pc = 0;
      for (const s of node.items) {
        dw = Math.max(dw, truncatedDataWords(s));
        pc = Math.max(pc, truncatedPtrCount(s));
      }
      const size = dw + pc;
      const tag = w.alloc(1 + n * size);
      w.listPointer(ptrAt, tag, ELEMENT_COMPOSITE, n * size);
      // The tag word has a struct pointer's shape with the element count in the offset field.
      w.pointer(tag, (n << 2) >>> 0, (dw & 0xffff) | ((pc & 0xffff) << 16));
      for (let i = 0; i < n; i++) {
        const s = node.items[i] as CStruct;
        w.buf.set(s.data.subarray(0, Math.min(dw * 8, s.data.length)), (tag + 1 + i * size) * 8);
      }
      for (let i = 0; i < n; i++) {
        const s = node.items[i] as CStruct;
        for (let j = 0; j < pc; j++) {
          const child = s.ptrs[j];
          if (child !== null && child !== undefined) writeTarget(w, child, tag + 1 + i * size + dw + j);
        }
      }
      return;
    }
  }
}

/** The canonical bytes of a message whose root is `root` (what `capnp convert …:canonical` prints). */
export function canonicalMessage(root: CStruct): Uint8Array {
  const w = new WordWriter();
  w.alloc(1); // root pointer
  writeTarget(w, root, 0);
  return w.buf.slice(0, w.words * 8);
}

// ---- helpers for building nodes ----

const encoder = new TextEncoder();

/** Text, with empty and absent both meaning unset (null pointer): the hash must not tell them apart. */
export function ctext(s: string | null | undefined): CText | null {
  return s === null || s === undefined || s === '' ? null : { t: 'text', utf8: encoder.encode(s) };
}

/** Text that stays set even when empty (where empty is a value, e.g. a union member). */
export function ctextKeepEmpty(s: string): CText {
  return { t: 'text', utf8: encoder.encode(s) };
}

/** A data section of `words` words to fill with the setters below. */
export function cdata(words: number): { bytes: Uint8Array; view: DataView } {
  const bytes = new Uint8Array(words * 8);
  return { bytes, view: new DataView(bytes.buffer) };
}

// Every setter refuses a value its field cannot hold rather than wrapping it: a hash over a
// truncated value would make two different inputs one (the config checks ranges first).
function checkRange(x: number, max: number, type: string): void {
  if (!Number.isSafeInteger(x) || x < 0 || x > max)
    throw new RangeError(`${type} field needs a whole number from 0 to ${max}, got ${x}`);
}
export function setU16(v: DataView, byteOffset: number, x: number): void {
  checkRange(x, 0xffff, 'UInt16');
  v.setUint16(byteOffset, x, true);
}
export function setU32(v: DataView, byteOffset: number, x: number): void {
  checkRange(x, 0xffff_ffff, 'UInt32');
  v.setUint32(byteOffset, x, true);
}
/** A UInt64 field from a safe integer (all XCE quantities are below 2^53). */
export function setU64(v: DataView, byteOffset: number, x: number): void {
  checkRange(x, Number.MAX_SAFE_INTEGER, 'UInt64');
  v.setUint32(byteOffset, x % 2 ** 32, true);
  v.setUint32(byteOffset + 4, Math.floor(x / 2 ** 32), true);
}
export function setF64(v: DataView, byteOffset: number, x: number): void {
  v.setFloat64(byteOffset, Object.is(x, -0) ? 0 : x, true);
}
export function setBool(v: DataView, bit: number, x: boolean): void {
  if (!x) return;
  const byte = bit >>> 3;
  v.setUint8(byte, v.getUint8(byte) | (1 << (bit & 7)));
}
