// WAL and snapshot store throughput, measured on the same run and the same disk:
//   - the raw fdatasync rate: append 300 bytes + fdatasync, in a loop (sync calls, and the async
//     callback calls the WAL itself uses);
//   - WAL durable appends/s (save() resolved = on disk) with 1, 16 and 256 concurrent appenders of
//     one 300-byte entry each (group commit: goal ≥ 50x raw at 256, within 10% of raw at 1);
//   - snapshot write and read of a 200 MiB snapshot in the LevelDB store (goal ≥ 200 / 400 MiB/s).
// Plain measured loops (tinybench runs one task at a time, which cannot express 256 appenders),
// ROUNDS rounds each, medians reported. Files go to a temp dir under os.tmpdir(), removed after.
// Run: node dist/benchmarks/wal.bench.js
import { closeSync, fdatasync, fdatasyncSync, mkdtempSync, openSync, rmSync, write, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Entry } from '../raft/types.js';
import { SnapshotStore } from '../wal/snapshot-store.js';
import { Wal } from '../wal/wal.js';
import { median } from '../harness/stats.js';

const ENTRY_BYTES = 300;
const ROUNDS = 9;
const ROUND_MS = 500;
const SNAPSHOT_BYTES = 200 * 1024 * 1024;
const SNAPSHOT_ROUNDS = 3;
const MiB = 1024 * 1024;
const RECOVERY_ENTRIES = 200_000;

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function rawSync(path: string): number {
  const fd = openSync(path, 'w');
  const buf = Buffer.alloc(ENTRY_BYTES, 7);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ROUND_MS) {
    writeSync(fd, buf);
    fdatasyncSync(fd);
    n++;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  closeSync(fd);
  return rate;
}

async function rawAsync(path: string): Promise<number> {
  const fd = openSync(path, 'w');
  const buf = Buffer.alloc(ENTRY_BYTES, 7);
  let n = 0;
  let pos = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ROUND_MS) {
    await new Promise<void>((res, rej) => write(fd, buf, 0, buf.length, pos, (e) => (e ? rej(e) : res())));
    await new Promise<void>((res, rej) => fdatasync(fd, (e) => (e ? rej(e) : res())));
    pos += buf.length;
    n++;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  closeSync(fd);
  return rate;
}

async function walRound(wal: Wal, appenders: number): Promise<number> {
  const data = new Uint8Array(ENTRY_BYTES).fill(9);
  let next = wal.lastIndex + 1;
  let done = 0;
  const t0 = performance.now();
  const end = t0 + ROUND_MS;
  const one = async (): Promise<void> => {
    while (performance.now() < end) {
      const e: Entry = { index: next++, term: 1, type: 0, data };
      await wal.save(undefined, [e]);
      done++;
    }
  };
  await Promise.all(Array.from({ length: appenders }, one));
  return done / ((performance.now() - t0) / 1000);
}

const logger = { info: (): void => undefined, warn: (m: string): void => console.error(m) };

/**
 * Raw fdatasync rates and WAL durable appends over APPENDERS. Rounds interleave raw and WAL
 * measurements, so that on a shared, noisy disk each ratio compares figures taken within seconds of
 * each other; the ratio reported is the median of per-round ratios.
 */
async function benchAppends(dir: string): Promise<void> {
  const { wal } = await Wal.open(join(dir, 'wal'), { logger });
  const { wal: walInline } = await Wal.open(join(dir, 'wal-inline'), { logger, syncOnEventLoop: true });
  const inlineRates: number[] = [];
  const inlineRatios: number[] = [];
  const APPENDERS = [1, 16, 256];
  const rawS: number[] = [];
  const rawA: number[] = [];
  const walRates = new Map<number, number[]>(APPENDERS.map((a) => [a, []]));
  const ratios = new Map<number, number[]>(APPENDERS.map((a) => [a, []]));
  const ratiosAsync = new Map<number, number[]>(APPENDERS.map((a) => [a, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const rs = rawSync(join(dir, `raw-sync-${r}`));
    rawS.push(rs);
    const ra = await rawAsync(join(dir, `raw-async-${r}`));
    rawA.push(ra);
    for (const a of APPENDERS) {
      const m = await walRound(wal, a);
      walRates.get(a)!.push(m);
      ratios.get(a)!.push(m / rs);
      ratiosAsync.get(a)!.push(m / ra);
      await wal.compact(wal.lastIndex); // keep the disk footprint bounded between rounds
    }
    const mi = await walRound(walInline, 1);
    inlineRates.push(mi);
    inlineRatios.push(mi / rs);
    await walInline.compact(walInline.lastIndex);
  }
  await wal.close();
  await walInline.close();
  console.log(
    `raw 300 B write + fdatasync (sync calls):  median ${fmt(median(rawS))}/s   rounds ${rawS.map(fmt).join(' ')}`,
  );
  console.log(
    `raw 300 B write + fdatasync (async calls): median ${fmt(median(rawA))}/s   rounds ${rawA.map(fmt).join(' ')}`,
  );
  for (const a of APPENDERS) {
    const rates = walRates.get(a)!;
    console.log(
      `WAL durable appends, ${String(a).padStart(3)} appender(s): median ${fmt(median(rates))}/s, ` +
        `median ratio to raw: ${median(ratios.get(a)!).toFixed(2)}x (sync), ${median(ratiosAsync.get(a)!).toFixed(2)}x (async)   rounds ${rates.map(fmt).join(' ')}`,
    );
  }
  console.log(
    `WAL durable appends,   1 appender, syncOnEventLoop: median ${fmt(median(inlineRates))}/s, median ratio to raw (sync) ` +
      `${median(inlineRatios).toFixed(2)}x   rounds ${inlineRates.map(fmt).join(' ')}`,
  );
}

/** Start-up: reading back (every CRC checked, the index rebuilt) a log of RECOVERY_ENTRIES entries. */
async function benchRecovery(dir: string): Promise<void> {
  const recDir = join(dir, 'wal-recovery');
  let { wal: w2 } = await Wal.open(recDir, { logger });
  const payload = new Uint8Array(ENTRY_BYTES).fill(3);
  for (let i = 1; i <= RECOVERY_ENTRIES; i += 1000) {
    const es: Entry[] = [];
    for (let k = i; k < i + 1000; k++) es.push({ index: k, term: 1, type: 0, data: payload });
    await w2.save({ term: 1, vote: 1, commit: i - 1 }, es);
  }
  await w2.close();
  const recMs: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    const o = await Wal.open(recDir, { logger });
    recMs.push(performance.now() - t0);
    if (o.recovered.lastIndex !== RECOVERY_ENTRIES) throw new Error(`recovered ${o.recovered.lastIndex} entries`);
    w2 = o.wal;
    await w2.close();
  }
  console.log(
    `WAL start-up reading ${fmt(RECOVERY_ENTRIES)} entries of ${ENTRY_BYTES} B: median ${median(recMs).toFixed(0)} ms   rounds ${recMs.map((x) => x.toFixed(0)).join(' ')}`,
  );
}

/** Writing and reading back a SNAPSHOT_BYTES snapshot in the LevelDB store. */
async function benchSnapshotStore(dir: string): Promise<void> {
  const store = await SnapshotStore.open(join(dir, 'snap'));
  const data = Buffer.allocUnsafe(SNAPSHOT_BYTES);
  for (let k = 0; k < data.length; k += 4) data.writeUInt32LE((k * 2654435761) >>> 0, k);
  const w: number[] = [];
  const rd: number[] = [];
  for (let r = 0; r < SNAPSHOT_ROUNDS; r++) {
    let t0 = performance.now();
    await store.save({ index: 1000 * (r + 1), term: 1, conf: { voters: [1, 2, 3], learners: [] } }, data);
    w.push(SNAPSHOT_BYTES / MiB / ((performance.now() - t0) / 1000));
    t0 = performance.now();
    let n = 0;
    for await (const c of store.read()) n += c.data.length;
    if (n !== SNAPSHOT_BYTES) throw new Error(`read ${n} B of ${SNAPSHOT_BYTES}`);
    rd.push(SNAPSHOT_BYTES / MiB / ((performance.now() - t0) / 1000));
  }
  await store.close();
  console.log(
    `snapshot write 200 MiB (1 MiB chunks, synced switch): median ${median(w).toFixed(0)} MiB/s   rounds ${w.map((x) => x.toFixed(0)).join(' ')}`,
  );
  console.log(
    `snapshot read 200 MiB (chunks checked by SHA-256):    median ${median(rd).toFixed(0)} MiB/s   rounds ${rd.map((x) => x.toFixed(0)).join(' ')}`,
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'xce-bench-wal-'));
  try {
    await benchAppends(dir);
    await benchRecovery(dir);
    await benchSnapshotStore(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
