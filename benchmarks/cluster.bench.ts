// Cluster benchmarks over real WebSocket connections to three real xcectld processes on 127.0.0.1:
//   1. durable submits/s and p50/p99 latency with 1, 16 and 256 concurrent clients;
//   2. failover: time from SIGKILL of the leader to the first acknowledged submit on the new
//      leader, over N kills (the killed node is restarted and caught up before the next kill).
// Bounded by --duration (seconds per client count) and --kills. Prints a table and writes JSON.
//
//   node dist/benchmarks/cluster.bench.js [--clients 1,16,256] [--duration 5] [--warmup S] [--kills 20] [--procs N] [--snapshot-every N] [--out FILE]

import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { quantile } from '../harness/stats.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import {
  distributionLine,
  measureSpread,
  runLoops,
  summarize,
  warmUpLine,
  type LoadResult,
  type LoadTarget,
} from './load-gen.js';

export type { LoadResult } from './load-gen.js';

/**
 * `clients` clients of alice, each submitting one job after another for `seconds` (warmed up first:
 * leader redirect, JIT), over `procs` load-generator threads (1: this thread).
 */
export async function measureLoad(
  cluster: TestCluster,
  clients: number,
  seconds: number,
  procs = 1,
): Promise<LoadResult> {
  const login = await cluster.client('alice');
  const ca = cluster.dialTls()?.ca;
  const target: LoadTarget = {
    kind: 'xce',
    controllers: cluster.addresses(),
    caPem: ca === undefined ? null : ca.toString(),
    token: login.token!,
  };
  login.close();
  return measureSpread(target, clients, seconds, procs);
}

/**
 * `clients` concurrent loops, loop `i` calling `submit(i)` one after another for `seconds`: the
 * submits per second and the latency quantiles of those that succeeded, and how many failed.
 */
export async function submitLoops(
  clients: number,
  seconds: number,
  submit: (i: number) => Promise<void>,
): Promise<LoadResult> {
  return summarize(clients, [await runLoops(clients, seconds, submit)]);
}

export async function measureFailover(
  cluster: TestCluster,
  kills: number,
  log: (s: string) => void,
): Promise<number[]> {
  const times: number[] = [];
  const writers = await Promise.all(Array.from({ length: 4 }, () => cluster.client('alice', { deadline_ms: 30_000 })));
  for (let k = 0; k < kills; k++) {
    const leader = await cluster.waitForLeader();
    let stop = false;
    let killedAt = Infinity;
    let firstAck = Infinity;
    const loops = writers.map(async (c) => {
      while (!stop) {
        const sent = performance.now();
        try {
          await c.submit({ command: ['true'] });
          const now = performance.now();
          // Only a submit sent after the kill proves the new leader serves writes.
          if (sent > killedAt && now < firstAck) firstAck = now;
        } catch {
          // retried inside the client until its deadline
        }
      }
    });
    await new Promise((r) => setTimeout(r, 300));
    killedAt = performance.now();
    await cluster.kill(leader, 'SIGKILL');
    await until('an acknowledged submit after the kill', () => firstAck < Infinity, 30_000, 5);
    stop = true;
    await Promise.all(loops);
    times.push(firstAck - killedAt);
    log(
      `kill ${k + 1}/${kills}: leader ${leader} → first acknowledged submit after ${(firstAck - killedAt).toFixed(0)} ms`,
    );
    cluster.startController(leader);
    await new Promise((r) => setTimeout(r, 1_000)); // let it rejoin and catch up
  }
  for (const c of writers) c.close();
  return times;
}

/** The failover times' min, median, p99 and max, logged in one line. */
function failoverSummary(times: readonly number[], log: (s: string) => void): Record<string, number> {
  const s = [...times].sort((a, b) => a - b);
  const summary = { min_ms: s[0]!, median_ms: quantile(s, 0.5), p99_ms: quantile(s, 0.99), max_ms: s[s.length - 1]! };
  log(
    `failover over ${s.length} kills: min ${summary.min_ms.toFixed(0)} ms, median ${summary.median_ms.toFixed(0)} ms, max ${summary.max_ms.toFixed(0)} ms`,
  );
  return summary;
}

async function main(): Promise<void> {
  const cl = parseCommandLine(
    'cluster.bench',
    'npm run bench:cluster -- [--clients 1,16,256] [--duration 5] [--warmup S] [--kills 20] [--procs N] [--insecure] [--snapshot-every N] [--out FILE]\n' +
      '  --clients N,...  concurrent client counts, one load run each (default 1,16,256)\n' +
      '  --duration S     seconds per client count (default 5)\n' +
      '  --warmup S       run each client count S s before its measured run, not counted\n' +
      '                   (default 0: the first run measures controllers whose code V8 has not compiled yet)\n' +
      '  --kills N        leader kills for the failover times (default 20; 0: none)\n' +
      "  --procs N        spread the clients over N load-generator threads (default 1: the bench's own)\n" +
      '  --insecure       plain ws between every process (insecure_dev), to see what TLS costs\n' +
      "  --snapshot-every N  the controllers' fixed snapshot threshold (default: theirs, max(10,000, jobs))\n" +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/cluster.json, ignored by git)',
    {
      ...stringOptions('clients', 'duration', 'warmup', 'kills', 'procs', 'out', 'snapshot-every'),
      insecure: { type: 'boolean' },
    },
  );
  const clientCounts = cl.wholes('clients', '1,16,256');
  const seconds = cl.whole('duration', 5);
  const warmup = cl.whole('warmup', 0, 0);
  const kills = cl.whole('kills', 20, 0);
  const procs = cl.whole('procs', 1);
  const out = cl.values.out ?? 'benchmarks/results/tmp/cluster.json';
  const log = (s: string) => process.stdout.write(`${s}\n`);
  const snapshotEvery = cl.values['snapshot-every'] === undefined ? undefined : cl.whole('snapshot-every', 0);
  const cluster = await TestCluster.start({
    controllers: 3,
    insecure: cl.values.insecure === true,
    ...(snapshotEvery === undefined ? {} : { snapshotEvery }),
  });
  const result: { warmup_s: number; load: LoadResult[]; failover_ms: number[]; failover?: Record<string, number> } = {
    warmup_s: warmup,
    load: [],
    failover_ms: [],
  };
  try {
    for (const n of clientCounts) {
      if (warmup > 0) log(warmUpLine(await measureLoad(cluster, n, warmup, procs), 'submits'));
      const r = await measureLoad(cluster, n, seconds, procs);
      result.load.push(r);
      log(
        `${String(n).padStart(4)} clients: ${r.perSecond.toFixed(0).padStart(6)} submits/s   p50 ${r.p50_ms.toFixed(2)} ms   p99 ${r.p99_ms.toFixed(2)} ms   (${r.submits} in ${r.seconds.toFixed(1)} s, ${r.errors} errors, ${procs} load thread(s))`,
      );
      log(`      ${distributionLine(r)}`);
    }
    if (kills > 0) {
      result.failover_ms = await measureFailover(cluster, kills, log);
      result.failover = failoverSummary(result.failover_ms, log);
    }
  } finally {
    // With XCE_BENCH_TIMELINE (load-gen.ts), the controllers' last log lines too (snapshots, elections),
    // to set the submits' latencies against.
    const timeline = process.env['XCE_BENCH_TIMELINE'];
    if (timeline !== undefined && timeline !== '')
      writeFileSync(
        `${timeline}.snap`,
        [...cluster.controllers].flatMap(([id, p]) => p.log.map((l) => `c${id} ${l}\n`)).join(''),
      );
    await cluster.stop();
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2));
  log(`wrote ${out}`);
}

// Run as a script (run.ts imports measureLoad and measureFailover without running it).
if (process.argv[1]?.endsWith('cluster.bench.js')) await main();
