// Property tests of the WAL against a model log: whatever the saves (appends, truncations by a new
// leader, hard states) and the segment size, reopening reads back exactly the model; and any single
// damaged byte is either refused as corruption or, only inside the very last record, cut as a torn
// tail, never served.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Entry, HardState } from '../raft/types.js';
import { WalCorruptionError } from './errors.js';
import { scanSegment } from './segment.js';
import { Wal } from './wal.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** One step: append `count` entries of `bytes` bytes, after truncating back `back` uncommitted entries. */
interface Step {
  readonly back: number;
  readonly count: number;
  readonly bytes: number;
  readonly newTerm: boolean;
}
const stepArb: fc.Arbitrary<Step> = fc.record({
  back: fc.nat({ max: 4 }),
  count: fc.integer({ min: 1, max: 5 }),
  bytes: fc.nat({ max: 700 }),
  newTerm: fc.boolean(),
});

interface Model {
  terms: number[];
  hs: HardState;
}

function data(index: number, term: number, bytes: number): Uint8Array {
  return Uint8Array.from({ length: bytes }, (_, k) => (index * 3 + term * 5 + k) & 0xff);
}

/** Runs the steps against a fresh WAL (closing and reopening every `reopenEvery` steps) and the model. */
async function run(dir: string, steps: Step[], segmentBytes: number, reopenEvery: number): Promise<Model> {
  const m: Model = { terms: [], hs: { term: 1, vote: 1, commit: 0 } };
  let { wal } = await Wal.open(dir, { segmentBytes, logger: quiet });
  for (let k = 0; k < steps.length; k++) {
    const s = steps[k]!;
    const last = m.terms.length;
    const back = Math.min(s.back, last - m.hs.commit);
    const term = back > 0 || s.newTerm ? m.hs.term + 1 : m.hs.term;
    const first = last - back + 1;
    const es: Entry[] = [];
    for (let i = first; i < first + s.count; i++) es.push({ index: i, term, type: 0, data: data(i, term, s.bytes) });
    m.terms.length = first - 1;
    for (const e of es) m.terms.push(e.term);
    m.hs = { term, vote: term === m.hs.term ? m.hs.vote : 1, commit: Math.max(m.hs.commit, m.terms.length - 6) };
    await wal.save(m.hs, es);
    if ((k + 1) % reopenEvery === 0) {
      await wal.close();
      ({ wal } = await Wal.open(dir, { segmentBytes, logger: quiet }));
    }
  }
  await wal.close();
  return m;
}

test('whatever the saves and segment size, reopening reads back exactly the model log', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(stepArb, { minLength: 1, maxLength: 40 }),
      fc.constantFrom(4096, 8192, 65536),
      fc.integer({ min: 1, max: 15 }),
      async (steps, segmentBytes, reopenEvery) => {
        const root = mkdtempSync(join(tmpdir(), 'xce-walprop-'));
        try {
          const dir = join(root, 'wal');
          const m = await run(dir, steps, segmentBytes, reopenEvery);
          const { wal, recovered } = await Wal.open(dir, { segmentBytes, logger: quiet });
          await wal.close();
          assert.deepEqual(recovered.hardState, m.hs);
          assert.equal(recovered.firstIndex, 1);
          assert.deepEqual(
            recovered.entries.map((e) => e.term),
            m.terms,
          );
          for (const e of recovered.entries) assert.deepEqual([...e.data], [...data(e.index, e.term, e.data.length)]);
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      },
    ),
    { numRuns: 25 },
  );
});

test('a single damaged byte anywhere is refused, or cut as a torn tail only inside the last record', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(stepArb, { minLength: 3, maxLength: 25 }),
      fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
      fc.integer({ min: 1, max: 255 }),
      async (steps, where, xor) => {
        const root = mkdtempSync(join(tmpdir(), 'xce-walprop-'));
        try {
          const dir = join(root, 'wal');
          await run(dir, steps, 4096, 1000);
          const files = readdirSync(dir)
            .filter((n) => n.endsWith('.wal'))
            .sort()
            .map((n) => join(dir, n));
          const sizes = files.map((f) => readFileSync(f).length);
          let pos = Math.floor(where * sizes.reduce((a, b) => a + b, 0));
          let fi = 0;
          while (pos >= sizes[fi]!) pos -= sizes[fi++]!;
          const file = files[fi]!;
          const before = readFileSync(file);
          const lastRecordAt = fi === files.length - 1 ? (scanSegment(before).batches.at(-1)?.offset ?? 0) : Infinity;
          const buf = Buffer.from(before);
          buf[pos]! ^= xor;
          writeFileSync(file, buf);
          let opened: Awaited<ReturnType<typeof Wal.open>> | undefined;
          try {
            opened = await Wal.open(dir, { segmentBytes: 4096, logger: quiet });
          } catch (e) {
            assert.ok(e instanceof WalCorruptionError, `refused with ${String(e)}`);
            assert.equal(e.file, file);
            assert.ok(e.offset <= pos, `error at ${e.offset}, damage at ${pos}`);
            return;
          }
          await opened.wal.close();
          // Served: only acceptable as a torn tail cut at the start of the last record, which held the damage.
          assert.ok(pos >= lastRecordAt, `damage at ${file}:${pos} was served (last record at ${lastRecordAt})`);
          assert.equal(opened.recovered.tornTail?.file, file);
          assert.equal(opened.recovered.tornTail?.offset, lastRecordAt);
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      },
    ),
    { numRuns: 60 },
  );
});
