// A hash of a Text by its UTF-8 bytes, the same whether read in place from a message (no string
// made) or computed from a string. Why: statemachine/name-index.ts keys a million restored jobs by
// their job names, which a restored state holds as bytes in the snapshot; hashing them in place
// costs no string and no garbage, where decoding each one took most of the index's build.
//
// A hash is a 30-bit number (a small integer to V8, a cheap Map key), never -1; equal texts have
// equal hashes, different ones may too (the caller compares the texts themselves).

import { WireError } from './capnp-limits.js';
import type { Reader } from './capnp-reader.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** The element size of a Text's list (Byte, the encoding spec's 2). */
const BYTE_ELEMENTS = 2;

const step = (h: number, byte: number): number => Math.imul(h ^ byte, FNV_PRIME);
const finish = (h: number): number => (h ^ (h >>> 15)) & 0x3fffffff;

/** The hash of `bytes[start, end)`, a text's UTF-8 bytes without its NUL. */
export function textBytesHash(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = step(h, bytes[i]!);
  return finish(h);
}

/**
 * The hash of `s` as UTF-8 (a lone surrogate as U+FFFD, as TextEncoder and the Writer encode it):
 * textBytesHash of its encoding, computed without encoding it.
 */
export function textHash(s: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) h = step(h, c);
    else if (c < 0x800) h = step(step(h, 0xc0 | (c >> 6)), 0x80 | (c & 63));
    else {
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d < 0xe000) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          h = step(step(h, 0xf0 | (cp >> 18)), 0x80 | ((cp >> 12) & 63));
          h = step(step(h, 0x80 | ((cp >> 6) & 63)), 0x80 | (cp & 63));
          i++;
          continue;
        }
      }
      if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      h = step(step(step(h, 0xe0 | (c >> 12)), 0x80 | ((c >> 6) & 63)), 0x80 | (c & 63));
    }
  }
  return finish(h);
}

/**
 * The hash of the Text at pointer position `ptrPos` of `r` (-1: a null pointer, or none: `ptrPos`
 * -1), read in place. Bounds and the list's kind are checked as a read of the Text checks them;
 * its UTF-8 is not (a caller that compares the texts reads them, which checks it).
 */
export function textHashAt(r: Reader, ptrPos: number): number {
  if (ptrPos < 0) return -1;
  const l = r.list(ptrPos);
  if (l === null) return -1;
  if (l.elemSize !== BYTE_ELEMENTS) throw new WireError('expected Text (a list of bytes)', ptrPos);
  if (l.count === 0 || r.bytes[l.start + l.count - 1] !== 0)
    throw new WireError('Text without its NUL terminator', ptrPos);
  return textBytesHash(r.bytes, l.start, l.start + l.count - 1);
}
