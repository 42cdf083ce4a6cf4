// How long a controller stops answering while it takes a snapshot of a large state.
//
// A leader that does not get to its timers for longer than the election timeout (250-500 ms with
// the default tick) is replaced: its followers stop hearing heartbeats. This starts one controller
// node in this process (real WAL and snapshot store in a temp dir), loads it with --jobs submits,
// then takes a snapshot while a probe timer runs every 5 ms and a write is proposed every 20 ms,
// and reports the longest gap between two probe runs (the event loop's longest stall) and the
// writes' latencies during the snapshot. Then it restores the snapshot it stored (read back from
// the store, as a controller starting from it does) into a fresh state --restores times and reports
// each restore's time (wall, and the process's CPU time, less sensitive to a loaded machine).
// Last, it applies --by-name submits whose dependency names one of the restored jobs by its job
// name (`-w "done(stall-123)"`, alice's, as all the bench's jobs are) to the last restored state,
// and reports each one's apply time: the first after a restore builds the name index
// (statemachine/name-index.ts), the next read it.
//
//   node dist/benchmarks/snapshot-stall.bench.js [--jobs 300000] [--restores 3] [--by-name 9]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/ports.js';
import { ControllerNode } from '../daemon/controller-node.js';
import { createLogger } from '../daemon/log.js';
import { configFact, load, submits } from './node-load.js';
import { parseCommandLine } from '../harness/cli-args.js';
import { LevelSnapshotStore } from '../daemon/controller/level-snapshot-store.js';
import { restore } from '../statemachine/snapshot.js';
import { finishedIndex } from '../statemachine/finished-index.js';
import { apply } from '../statemachine/apply.js';
import type { ControllerState } from '../statemachine/state.js';

/** The controller's job cap. */
const JOBS_MAX = 2_000_000;
const args = parseCommandLine(
  'snapshot-stall.bench',
  `npm run bench:snapshot-stall -- [--jobs N] (default 300,000; at most ${JOBS_MAX.toLocaleString('en-US')}, ` +
    'the job cap) [--restores N] (default 3) [--by-name N] (default 9; 0: none)',
  { jobs: { type: 'string' }, restores: { type: 'string' }, 'by-name': { type: 'string' } },
);
const JOBS = args.whole('jobs', 300_000, 1, JOBS_MAX);
/** Restores of the stored snapshot timed after it is taken (0: none). */
const RESTORES = args.whole('restores', 3, 0, 100);
/** Submits with a dependency by job name applied to the last restored state (0: none). */
const BY_NAME = args.whole('by-name', 9, 0, 1000);
/** The load gives up after this long (a slow disk would otherwise make the bench run for ever). */
const LOAD_LIMIT_MS = 300_000;
const WRITE_EVERY_MS = 20;
const PROBE_EVERY_MS = 5;

const submit = submits('c-stall', 'stall');

function ms(x: number): string {
  return `${x.toFixed(0)} ms`;
}

const dir = mkdtempSync(join(tmpdir(), 'xce-stall-'));
const port = await freePort();
const controllers = [{ id: 1, host: '127.0.0.1', port }];
const node = new ControllerNode({
  id: 1,
  dataDir: join(dir, 'n1'),
  bootstrapControllers: controllers,
  secret: new TextEncoder().encode('snapshot-stall-bench-secret-0123456789'),
  log: createLogger({ node: 1 }, { sink: { write: () => undefined } }),
  // Only the snapshot this bench asks for.
  snapshotEveryEntries: Number.MAX_SAFE_INTEGER,
});
let stopped = false;
try {
  await node.start();
  const deadline = Date.now() + 10_000;
  while (!node.isLeader()) {
    if (Date.now() > deadline) throw new Error('the node did not become leader within 10 s');
    await new Promise((r) => setTimeout(r, 10));
  }
  await node.propose(configFact(controllers));
  let next = await load(node, submit, JOBS, LOAD_LIMIT_MS);

  // The snapshot, with the probe and a trickle of writes.
  let last = performance.now();
  let longestGap = 0;
  let encodedAt = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
    if (encodedAt === 0 && node.status().snapshotJobsLeft === null) encodedAt = now;
  }, PROBE_EVERY_MS);
  const latencies: number[] = [];
  const writes: Promise<void>[] = [];
  let snapshotting = true;
  const writer = setInterval(() => {
    if (!snapshotting) return;
    const at = performance.now();
    writes.push(
      node.propose(submit(next++)).then((r) => {
        if (r.kind !== 'submitted')
          throw new Error(`a write during the snapshot was not accepted: ${JSON.stringify(r)}`);
        latencies.push(performance.now() - at);
      }),
    );
  }, WRITE_EVERY_MS);
  const s0 = performance.now();
  last = s0;
  const taking = node.snapshotNow();
  encodedAt = node.status().snapshotJobsLeft === null ? performance.now() : 0;
  const index = await taking;
  const took = performance.now() - s0;
  snapshotting = false;
  clearInterval(writer);
  await Promise.all(writes);
  clearInterval(probe);
  latencies.sort((a, b) => a - b);
  const pick = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  process.stdout.write(
    `snapshot at index ${index} of ${node.state.jobs.size.toLocaleString('en-US')} jobs: ${ms(took)} in all, of which encoding ${ms(encodedAt - s0)} and storing the rest\n` +
      `longest event-loop stall during it: ${ms(longestGap)} (the election timeout is 250-500 ms)\n` +
      `writes proposed during it: ${latencies.length}, latency median ${ms(pick(0.5))}, max ${ms(pick(1))}\n`,
  );
  await node.stop();
  stopped = true;
  await timeRestores(join(dir, 'n1'), index);
} finally {
  if (!stopped) await node.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** Reads the stored snapshot back and restores it RESTORES times, each into a fresh state. */
async function timeRestores(dataDir: string, index: number): Promise<void> {
  if (RESTORES === 0) return;
  const store = await LevelSnapshotStore.open(dataDir);
  let data: Uint8Array;
  try {
    const read = await store.readAll();
    if (read.meta.index !== index) throw new Error(`the stored snapshot is at ${read.meta.index}, not ${index}`);
    data = read.data;
  } finally {
    await store.close();
  }
  const took: number[] = [];
  const cpu: number[] = [];
  const indexed: number[] = [];
  let jobs = 0;
  let state: ControllerState | null = null;
  for (let i = 0; i < RESTORES; i++) {
    state = null; // the previous one dropped first, as a controller holds one state
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    state = restore(data);
    const t1 = performance.now();
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    // What the leader's first retention scan builds from the restored jobs (finished-index.ts).
    finishedIndex(state);
    took.push(t1 - t0);
    indexed.push(performance.now() - t1);
    jobs = state.jobs.size;
  }
  const median = (xs: number[]): string => ms([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);
  process.stdout.write(
    `restore of the stored snapshot (${jobs.toLocaleString('en-US')} jobs, ` +
      `${(data.byteLength / 2 ** 20).toFixed(0)} MiB), ${RESTORES} times: ${took.map(ms).join(', ')}; ` +
      `median ${median(took)}; then the end-time index: median ${median(indexed)}\n` +
      `the process's CPU time during each restore (every thread, the garbage collector's too): ` +
      `${cpu.map(ms).join(', ')}; median ${median(cpu)}\n`,
  );
  if (state !== null && BY_NAME > 0) byNameSubmits(state, jobs);
}

/**
 * Applies BY_NAME submits with `-w "done(stall-I)"` (I spread over the restored jobs) to `state`
 * and reports each apply's time: what a controller's apply of such a submit costs after a restore.
 */
function byNameSubmits(state: ControllerState, jobs: number): void {
  const submit = submits('c-by-name', 'by-name', (i) => `done(stall-${Math.floor((i * jobs) / BY_NAME)})`);
  // With `node --expose-gc`: the memory the submits leave held (the name index, once built: its
  // table is a typed array, outside the JS heap, so both are counted).
  const gc = (globalThis as { gc?: () => void }).gc;
  const held = (): number => {
    gc?.();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const held0 = held();
  const took: number[] = [];
  let firstCpu = 0;
  for (let i = 0; i < BY_NAME; i++) {
    const fact = submit(i);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const r = apply(state, fact, state.appliedIndex + 1);
    took.push(performance.now() - t0);
    if (i === 0) {
      const c = process.cpuUsage(c0);
      firstCpu = (c.user + c.system) / 1000;
    }
    if (r.kind !== 'submitted') throw new Error(`a submit with a dependency by name was refused: ${JSON.stringify(r)}`);
  }
  const heldMiB =
    gc === undefined
      ? ''
      : `; memory held after them (heap and array buffers) +${((held() - held0) / 2 ** 20).toFixed(0)} MiB`;
  const rest = took.slice(1).sort((a, b) => a - b);
  const median = rest.length === 0 ? 'none' : `${rest[Math.floor(rest.length / 2)]!.toFixed(3)} ms`;
  process.stdout.write(
    `submits with a dependency by job name on the restored state (${BY_NAME}, apply each): ` +
      `the first ${took[0]!.toFixed(1)} ms (CPU ${firstCpu.toFixed(0)} ms), the next ${rest.length} median ${median} ` +
      `(${took.map((t) => t.toFixed(3)).join(', ')})${heldMiB}\n`,
  );
}
