// How long a controller stops answering while it takes a snapshot of a large state.
//
// A leader that does not get to its timers for longer than the election timeout (250-500 ms with
// the default tick) is replaced: its followers stop hearing heartbeats. This starts one controller
// node in this process (real WAL and snapshot store in a temp dir), loads it with --jobs submits,
// then takes a snapshot while a probe timer runs every 5 ms and a write is proposed every 20 ms,
// and reports the longest gap between two probe runs (the event loop's longest stall) and the
// writes' latencies during the snapshot.
//
//   node dist/benchmarks/snapshot-stall.bench.js [--jobs 300000]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/ports.js';
import { ControllerNode } from '../daemon/controller-node.js';
import { createLogger } from '../daemon/log.js';
import { configFact, load, submits } from './node-load.js';
import { parseCommandLine } from '../harness/cli-args.js';

/** The controller's job cap. */
const JOBS_MAX = 2_000_000;
const JOBS = parseCommandLine(
  'snapshot-stall.bench',
  `npm run bench:snapshot-stall -- [--jobs N] (default 300,000; at most ${JOBS_MAX.toLocaleString('en-US')}, the job cap)`,
  { jobs: { type: 'string' } },
).whole('jobs', 300_000, 1, JOBS_MAX);
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
} finally {
  await node.stop();
  rmSync(dir, { recursive: true, force: true });
}
