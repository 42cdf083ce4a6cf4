// A Text's hash is the same from its string and from its UTF-8 bytes (wire/text-hash.ts), for any
// string: surrogate pairs, lone surrogates (encoded as U+FFFD), and every code unit in between.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';

import { Reader } from './capnp-reader.js';
import { Writer } from './capnp-writer.js';
import { textBytesHash, textHash, textHashAt } from './text-hash.js';

const encoder = new TextEncoder();
/** Any sequence of UTF-16 code units, lone surrogates included. */
const anyString = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 40 })
  .map((u) => String.fromCharCode(...u));

test("a string's hash is its UTF-8 bytes' hash", () => {
  fc.assert(
    fc.property(fc.oneof(anyString, fc.string({ unit: 'binary' })), (s) => {
      const b = encoder.encode(s);
      assert.equal(textHash(s), textBytesHash(b, 0, b.length));
    }),
    { numRuns: 2000 },
  );
});

test('a hash read in place from a message is the hash of the string written there', () => {
  fc.assert(
    fc.property(anyString, (s) => {
      const w = new Writer();
      const at = w.struct(w.root, 0, 1); // a struct of no data and one pointer: the Text
      w.text(at, s);
      const r = new Reader(w.finish());
      const s2 = r.struct(r.root)!;
      assert.equal(textHashAt(r, r.ptr(s2, 0)), textHash(s));
      assert.equal(textHashAt(r, -1), -1);
    }),
  );
});
