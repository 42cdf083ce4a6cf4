import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c, crc32cUpdate } from './crc32c.js';

/** One byte at a time, straight from the definition: the reference the sliced loop must match. */
function crc32cBitwise(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

test('CRC-32C of "123456789" is the catalogue check value 0xE3069283', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
});

test('CRC-32C matches the iSCSI test vectors of RFC 3720 B.4', () => {
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c);
});

test('CRC-32C of nothing is 0', () => {
  assert.equal(crc32c(new Uint8Array(0)), 0);
});

test('the sliced CRC equals the bitwise definition for every length 0..300 and any start', () => {
  const buf = Uint8Array.from({ length: 310 }, (_, i) => (i * 131 + 7) & 0xff);
  for (let len = 0; len <= 300; len++) {
    for (const start of [0, 1, 3, 7]) {
      assert.equal(
        crc32c(buf, start, start + len),
        crc32cBitwise(buf.subarray(start, start + len)),
        `len ${len} start ${start}`,
      );
    }
  }
});

test('a CRC computed in pieces equals the CRC of the whole', () => {
  const buf = Uint8Array.from({ length: 1000 }, (_, i) => (i * 17) & 0xff);
  for (const cut of [0, 1, 9, 500, 999, 1000]) {
    assert.equal(crc32cUpdate(crc32cUpdate(0, buf, 0, cut), buf, cut), crc32c(buf));
  }
});
