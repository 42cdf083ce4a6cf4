// How long a new member takes to catch up by InstallSnapshot from a leader holding a large state.
//
// A member added to a running cluster (or a follower whose disk was replaced) gets the leader's
// whole snapshot over its `/raft` link, in chunks, then restores it. This starts a one-voter
// cluster in this process (real WAL, snapshot store and sockets on 127.0.0.1), loads it with --jobs
// submits, takes a snapshot, then adds a second controller as a learner and reports how long the
// transfer and the restore took, the snapshot's size, and the leader's longest event-loop stall
// while it sent (the election timeout is 250-500 ms).
//
//   node dist/benchmarks/snapshot-catchup.bench.js [--jobs 200000] [--limit-s 300]
//
// XCE_BENCH_LOG=1 keeps every log line of both nodes (not only the snapshot's) for the report
// printed when the newcomer does not catch up.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/ports.js';
import { ControllerNode } from '../daemon/controller-node.js';
import { ControllerPort } from '../daemon/http-server.js';
import { createLogger, type Logger } from '../daemon/log.js';
import { ConfChangeType } from '../raft/confchange.js';
import { configFact, load, submits } from './node-load.js';
import type { ControllerAddress } from '../model/config-types.js';
import { parseCommandLine } from '../harness/cli-args.js';

const cl = parseCommandLine(
  'snapshot-catchup.bench',
  'npm run bench:snapshot-catchup -- [--jobs N] [--limit-s S]\n' +
    '  --jobs N     jobs loaded before the snapshot (default 200,000; at most 2,000,000)\n' +
    '  --limit-s S  loading and catching up each give up after S seconds (default 300; at most 3,600)',
  { jobs: { type: 'string' }, 'limit-s': { type: 'string' } },
);
const JOBS = cl.whole('jobs', 200_000, 1, 2_000_000);
/** Loading and catching up each give up after this long. */
const LIMIT_MS = cl.whole('limit-s', 300, 1, 3_600) * 1000;
const PROBE_EVERY_MS = 5;
const secret = new TextEncoder().encode('snapshot-catchup-bench-secret-0123456789');

const submit = submits('c-catchup', 'catchup');

/** Lines the bench wants to see from a node's log (the rest is dropped). */
function logger(node: number, seen: string[]): Logger {
  return createLogger(
    { node },
    {
      format: 'json',
      level: 'info',
      sink: {
        write: (line: string) => {
          if (process.env['XCE_BENCH_LOG'] || /snapshot|peer link/.test(line)) seen.push(line.trim());
        },
      },
    },
  );
}

async function member(
  id: number,
  controllers: ControllerAddress[],
  dir: string,
  joining: boolean,
  seen: string[],
): Promise<{ node: ControllerNode; port: ControllerPort }> {
  const node = new ControllerNode({
    id,
    dataDir: join(dir, `n${id}`),
    bootstrapControllers: joining ? controllers : controllers.filter((c) => c.id === id),
    secret,
    log: logger(id, seen),
    join: joining,
    snapshotEveryEntries: Number.MAX_SAFE_INTEGER,
  });
  const port = new ControllerPort();
  node.transport.serveOn(port);
  await port.listen('127.0.0.1', controllers.find((c) => c.id === id)!.port);
  await node.start();
  return { node, port };
}

async function until(what: string, f: () => boolean, limit_ms: number): Promise<void> {
  const end = Date.now() + limit_ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`gave up after ${limit_ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const ms = (x: number): string => `${x.toFixed(0)} ms`;
const dir = mkdtempSync(join(tmpdir(), 'xce-catchup-'));
const controllers: ControllerAddress[] = [
  { id: 1, host: '127.0.0.1', port: await freePort() },
  { id: 2, host: '127.0.0.1', port: await freePort() },
];
const seen: string[] = [];
const members: Array<{ node: ControllerNode; port: ControllerPort }> = [];
try {
  const leader = await member(1, controllers, dir, false, seen);
  members.push(leader);
  await until('node 1 to lead', () => leader.node.isLeader(), 10_000);
  await leader.node.propose(configFact(controllers));
  await load(leader.node, submit, JOBS, LIMIT_MS);
  const index = await leader.node.snapshotNow();
  process.stdout.write(`snapshot at index ${index}\n`);

  const joiner = await member(2, controllers, dir, true, seen);
  members.push(joiner);
  let last = performance.now();
  let longestGap = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    longestGap = Math.max(longestGap, now - last);
    last = now;
  }, PROBE_EVERY_MS);
  const c0 = performance.now();
  const c0wall = Date.now();
  last = c0;
  await leader.node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 2 });
  await until(`node 2 to hold all ${JOBS} jobs`, () => joiner.node.state.jobs.size === JOBS, LIMIT_MS);
  const took = performance.now() - c0;
  clearInterval(probe);
  const sent = seen.filter((l) => l.includes('sent snapshot'));
  const bytes = sent.length > 0 ? ((JSON.parse(sent[sent.length - 1]!) as { bytes?: number }).bytes ?? 0) : 0;
  process.stdout.write(
    `node 2 caught up by snapshot in ${ms(took)} (${(bytes / 2 ** 20).toFixed(0)} MiB, ${sent.length} transfer(s) started, ${seen.filter((l) => l.includes('abandoned')).length} abandoned)\n` +
      `longest event-loop stall of this process meanwhile (both nodes): ${ms(longestGap)}\n` +
      'what the nodes said, from the membership change:\n' +
      seen
        .map(
          (l) =>
            JSON.parse(l) as {
              time: string;
              msg: string;
              node: number;
              ms?: number;
              storeMs?: number;
              restoreMs?: number;
            },
        )
        .filter((l) => Date.parse(l.time) >= c0wall)
        .map((l) => {
          const took = [
            l.ms !== undefined ? `streamed in ${l.ms} ms` : '',
            l.storeMs !== undefined ? `stored in ${l.storeMs} ms, restored in ${l.restoreMs} ms` : '',
          ]
            .filter((x) => x !== '')
            .join('');
          return `  +${String(Date.parse(l.time) - c0wall).padStart(6)} ms  node ${l.node}: ${l.msg}${took ? ` (${took})` : ''}`;
        })
        .join('\n') +
      '\n',
  );
} catch (err) {
  const where = members
    .map(
      (m) =>
        `node ${m.node.id}: ${JSON.stringify({ ...m.node.status(), conf: undefined, jobs: m.node.state.jobs.size })}`,
    )
    .join('\n');
  process.stdout.write(
    `${(err as Error).message}\n${where}\nwhat the nodes said about the transfer:\n${seen.slice(-20).join('\n')}\n`,
  );
  process.exitCode = 1;
} finally {
  for (const m of members.reverse()) {
    await m.node.stop();
    await m.port.close();
  }
  rmSync(dir, { recursive: true, force: true });
}
