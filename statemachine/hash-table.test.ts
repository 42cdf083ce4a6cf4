// The typed-array hash table (hash-table.ts) holds what a Map holds after any sets and deletes,
// through its growing and shrinking, with keys that share home slots and probes that wrap around.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';

import { HashTable } from './hash-table.js';

type Op = { set: boolean; key: number; value: number };

const arbOps = (keys: fc.Arbitrary<number>): fc.Arbitrary<Op[]> =>
  fc.array(
    fc.record({ set: fc.boolean(), key: keys, value: fc.integer({ min: -1e9, max: 1e9 }).filter((v) => v !== 0) }),
    {
      maxLength: 400,
    },
  );

test('a hash table holds what a Map holds after any sets and deletes', () => {
  // Few distinct keys (many deletes of present keys) and any 30-bit keys.
  for (const keys of [fc.nat(40), fc.nat(0x3fffffff)])
    fc.assert(
      fc.property(arbOps(keys), fc.nat(100), (ops, sized) => {
        const t = new HashTable(sized);
        const m = new Map<number, number>();
        for (const o of ops) {
          if (o.set) {
            t.set(o.key, o.value);
            m.set(o.key, o.value);
          } else {
            t.delete(o.key);
            m.delete(o.key);
          }
          assert.equal(t.size, m.size);
        }
        for (const [k, v] of m) assert.equal(t.get(k), v);
        assert.deepEqual(
          [...t.entries()].sort((a, b) => a[0] - b[0]),
          [...m.entries()].sort((a, b) => a[0] - b[0]),
        );
        for (let k = 0; k <= 40; k++) if (!m.has(k)) assert.equal(t.get(k), 0);
      }),
      { numRuns: 300 },
    );
});

test('a table of a thousand keys emptied one by one holds none and answers 0', () => {
  const t = new HashTable();
  for (let k = 0; k < 1000; k++) t.set(k * 7919, k + 1);
  for (let k = 0; k < 1000; k++) assert.equal(t.get(k * 7919), k + 1);
  for (let k = 999; k >= 0; k--) t.delete(k * 7919);
  assert.equal(t.size, 0);
  assert.equal(t.get(7919), 0);
});
