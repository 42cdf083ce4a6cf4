// The Reader's Text decoding: the NUL terminator checked, UTF-8 validated, and short ASCII texts
// interned in one direct-mapped table shared by every Reader (a repeated user, queue or env name
// costs one comparison and no new string). The slot a text was interned in is reported to the
// Reader (`textSlot`), which the codecs key their shared decoded values on (shared-values.ts).

import { WireError } from './capnp-limits.js';

const textDecoder = new TextDecoder('utf-8', { fatal: true });

/** Texts up to this many bytes go through the intern table. */
const INTERN_CHARS_MAX = 64;
/** Slots of the direct-mapped intern table (a power of two). It caches values, never changes them. */
const INTERN_SLOTS = 8192;
const internTable = new Array<string | undefined>(INTERN_SLOTS).fill(undefined);
/** Length of each slot's string (0: empty slot) and its bytes, INTERN_CHARS_MAX bytes per slot. */
const internLengths = new Uint8Array(INTERN_SLOTS);
const internBytes = new Uint8Array(INTERN_SLOTS * INTERN_CHARS_MAX);
const internView = new DataView(internBytes.buffer);
/** 1: the slot's string was read since the slot last refused a newcomer (the second chance). */
const internUsed = new Uint8Array(INTERN_SLOTS);
/**
 * Texts up to this many bytes are built char by char when ASCII (cheaper than a decoder call).
 * Longer ones would be built as a rope of pieces (a V8 ConsString, 13 chars and up): decoded.
 */
const SHORT_ASCII_CHARS_MAX = 12;

/** Where decodeText reports the intern slot of the text it returns (-1: not interned). */
export interface TextSlotSink {
  textSlot: number;
}

/**
 * The Text of `countWithNul` bytes at `start` of `b` (`dv` views the same bytes); `at` is the
 * pointer's position, for errors. Sets `sink.textSlot`.
 */
export function decodeText(
  sink: TextSlotSink,
  b: Uint8Array,
  dv: DataView,
  start: number,
  countWithNul: number,
  at: number,
): string {
  sink.textSlot = -1;
  if (countWithNul === 0) throw new WireError('Text without its NUL terminator', at);
  const end = start + countWithNul - 1;
  if (b[end] !== 0) throw new WireError('Text without its NUL terminator', at);
  const n = end - start;
  if (n === 0) return '';
  if (n > INTERN_CHARS_MAX) return utf8(b, start, end, at);
  // Short texts (user, queue, profile, host, env names, paths...) repeat across facts: look them
  // up first, so a repeated value costs one comparison and no new string, and is stored once.
  // The hash samples the length and up to 8 bytes at each end (cheap); a hit is compared in full,
  // four bytes at a time, against the cached string's bytes (its UTF-8, which is its ASCII).
  let h = Math.imul(n, 0x9e3779b1);
  if (n >= 4) {
    h = Math.imul(h ^ dv.getUint32(start, true), 0x85ebca6b);
    h = Math.imul(h ^ dv.getUint32(end - 4, true), 0xc2b2ae35);
    if (n >= 8) {
      h = Math.imul(h ^ dv.getUint32(start + 4, true), 0x85ebca6b);
      h = Math.imul(h ^ dv.getUint32(end - 8, true), 0xc2b2ae35);
    }
  } else {
    for (let i = start; i < end; i++) h = Math.imul(h ^ b[i]!, 0x85ebca6b);
  }
  const slot = (h ^ (h >>> 15)) & (INTERN_SLOTS - 1);
  const base = slot * INTERN_CHARS_MAX;
  if (internLengths[slot] === n && sameAsInterned(b, dv, start, n, base)) {
    internUsed[slot] = 1;
    sink.textSlot = slot;
    return internTable[slot]!;
  }
  const s = n <= SHORT_ASCII_CHARS_MAX ? shortText(b, start, end, at) : utf8(b, start, end, at);
  if (s.length !== n) return s; // not ASCII: never cached (one char is then not one byte)
  // Second chance (as the CLOCK page cache): a slot whose string was read since the last miss
  // keeps it, so texts that occur once (job names) do not evict those that repeat.
  if (internUsed[slot] === 1) {
    internUsed[slot] = 0;
    return s;
  }
  internTable[slot] = s;
  internLengths[slot] = n;
  for (let i = 0; i < n; i++) internBytes[base + i] = b[start + i]!;
  sink.textSlot = slot;
  return s;
}

/** Whether the `n` bytes at `start` are those of the string interned at `base` (four at a time). */
function sameAsInterned(b: Uint8Array, dv: DataView, start: number, n: number, base: number): boolean {
  let same = true;
  if (n >= 4) {
    const last = n - 4;
    for (let i = 0; i < last; i += 4) {
      if (dv.getUint32(start + i, true) !== internView.getUint32(base + i, true)) {
        same = false;
        break;
      }
    }
    same = same && dv.getUint32(start + last, true) === internView.getUint32(base + last, true);
  } else {
    for (let i = 0; i < n; i++) if (b[start + i] !== internBytes[base + i]) same = false;
  }
  return same;
}

/** A short text: built from its bytes when ASCII (no view, no decoder call), else decoded as UTF-8. */
function shortText(b: Uint8Array, start: number, end: number, at: number): string {
  let s = '';
  let i = start;
  for (; i + 4 <= end; i += 4) {
    const c0 = b[i]!;
    const c1 = b[i + 1]!;
    const c2 = b[i + 2]!;
    const c3 = b[i + 3]!;
    if ((c0 | c1 | c2 | c3) > 0x7f) return utf8(b, start, end, at);
    s += String.fromCharCode(c0, c1, c2, c3);
  }
  for (; i < end; i++) {
    const c = b[i]!;
    if (c > 0x7f) return utf8(b, start, end, at);
    s += String.fromCharCode(c);
  }
  return s;
}

function utf8(bytes: Uint8Array, start: number, end: number, at: number): string {
  try {
    return textDecoder.decode(bytes.subarray(start, end));
  } catch {
    throw new WireError('Text is not valid UTF-8', at);
  }
}
