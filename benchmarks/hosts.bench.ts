// Many worker hosts on one leader: three real `xcectld` on 127.0.0.1 whose hosts.yaml lists N
// simulated hosts, which a few fleet processes (host-fleet.ts) connect as real `/worker` clients.
// Phases, each bounded in time:
//   1. baseline: the cluster with no worker, `--settle-s` seconds of samples;
//   2. the N hosts register (spread over 3 s, `--connect-spread-s`) and heartbeat: leader CPU, RSS and heap per 1,000 hosts;
//   3. `--pending` jobs no connected host can take (`select[mem>100000]`): scheduler passes over them;
//   4. `--jobs` jobs `true` the hosts run (simulated runtime): jobs/s dispatched; half-way through,
//      the leader is SIGKILLed: time until every host re-registered with the new one, and whether
//      every job still finishes (a run requeued or killed across the failover is counted).
// For phases 2 and 4: the Raft terms the registrations took (elections: a leader change the storm
// caused shows as more than the kill's one) and the controllers' `busy` answers to workers
// (xce_worker_registrations_deferred_total; absent from a controller without the bound).
// Writes the figures as JSON (`--out`) and a chart of each controller's CPU and heap over time (`--svg`).
//
//   node dist/benchmarks/hosts.bench.js [--hosts 500] [--pending 0] [--jobs 2000] [--settle-s 10]

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { parseLogLevel } from '../daemon/log.js';
import { quantile } from '../harness/stats.js';
import type { XceClient } from '../cli/client.js';
import { FleetProcs, HOSTS_PER_PROC, simHostsYaml } from './fleet-procs.js';
import { STATS_EVERY_MS } from './host-fleet.js';
import { ClusterSampler, cpuSeconds, passHistogram, passesBetween, scrape } from './proc-sampler.js';
import { hostsChart, type Mark } from './hosts-chart.js';
import { answersByTarget, timelineLines, timelineReport } from './link-timeline.js';

const PREFIX = 'sim';
const SUBMITTERS = 32;
const SAMPLE_EVERY_MS = 500;

const cl = parseCommandLine(
  'hosts.bench',
  'npm run bench:hosts -- [--hosts 500] [--procs N] [--pending 0] [--jobs 2000] [--slots 8] [--settle-s 10] ' +
    '[--runtime-ms-min 500] [--runtime-ms-max 3000] [--connect-spread-s 3] [--log-level info] [--out FILE] [--svg FILE]',
  stringOptions(
    'hosts',
    'procs',
    'pending',
    'jobs',
    'slots',
    'settle-s',
    'runtime-ms-min',
    'runtime-ms-max',
    'connect-spread-s',
    'out',
    'svg',
    'log-level',
  ),
);
const HOSTS = cl.whole('hosts', 500, 1, 20_000);
const PROCS = cl.whole('procs', Math.ceil(HOSTS / HOSTS_PER_PROC), 1, 16);
const PENDING = cl.whole('pending', 0, 0, 1_000_000);
const JOBS = cl.whole('jobs', 2_000, 0, 1_000_000);
const SLOTS = cl.whole('slots', 8, 1, 1024);
const SETTLE_MS = cl.whole('settle-s', 10, 1, 600) * 1000;
const RUNTIME_MIN_MS = cl.whole('runtime-ms-min', 500, 0);
const RUNTIME_MAX_MS = cl.whole('runtime-ms-max', 3_000, RUNTIME_MIN_MS);
/** The first registration's dialling spread (the failover's is the workers' own). */
const CONNECT_SPREAD_MS = cl.whole('connect-spread-s', 3, 0, 600) * 1000;
const OUT = cl.values.out ?? 'benchmarks/results/tmp/hosts.json';
const SVG = cl.values.svg ?? 'benchmarks/results/tmp/hosts-leader.svg';

const log = (s: string): void => void process.stdout.write(`${s}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A metric's value (summed over its label sets) in /metrics text; 0 when absent. */
function metricValue(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

/** The highest Raft term among the live controllers, and each one's `busy` answers to workers so far. */
async function raftFigures(): Promise<{ term: number; deferred: Map<number, number> }> {
  let term = 0;
  const deferred = new Map<number, number>();
  for (const id of cluster.controllers.keys()) {
    const text = await scrape(cluster, id);
    if (text === null) continue;
    term = Math.max(term, metricValue(text, 'xce_raft_term'));
    deferred.set(id, metricValue(text, 'xce_worker_registrations_deferred_total'));
  }
  return { term, deferred };
}

/** Elections (term increments) and busy answers from `a` to `b`, on the controllers alive at `b`. */
function raftDelta(
  a: Awaited<ReturnType<typeof raftFigures>>,
  b: Awaited<ReturnType<typeof raftFigures>>,
): { elections: number; busy: number } {
  let busy = 0;
  for (const [id, n] of b.deferred) busy += n - (a.deferred.get(id) ?? 0);
  return { elections: b.term - a.term, busy };
}

/** Submits `n` jobs with `resreq` from SUBMITTERS clients; returns the submits per second. */
async function submitJobs(clients: readonly XceClient[], n: number, resreq: string, cwd: string): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      while (next < n) {
        next++;
        await c.submit({ command: ['true'], resreq, cwd });
      }
    }),
  );
  return n / ((performance.now() - t0) / 1000);
}

const cluster = await TestCluster.start({
  controllers: 3,
  schedulerGrace_ms: 2_000,
  ...(cl.values['log-level'] !== undefined
    ? { controllerLogLevel: parseLogLevel(cl.values['log-level'], 'info') }
    : {}),
  edit: { 'hosts.yaml': simHostsYaml(PREFIX, HOSTS, SLOTS) },
});
const sampler = new ClusterSampler(cluster, SAMPLE_EVERY_MS);
const marks: Mark[] = [];
let fleet: FleetProcs | null = null;
const result: Record<string, unknown> = { hosts: HOSTS, procs: PROCS, pending: PENDING, jobs: JOBS, slots: SLOTS };
try {
  sampler.start();
  const leader0 = await cluster.waitForLeader();
  await sleep(SETTLE_MS);
  const base = sampler.mean(sampler.now() - SETTLE_MS);
  log(
    `baseline, no worker: leader ${leader0} CPU ${base.cpu.toFixed(1)} %, RSS ${base.rss_mib.toFixed(0)} MiB, heap ${base.heap_mib.toFixed(0)} MiB`,
  );

  // 2. The hosts register and heartbeat.
  const raft0 = await raftFigures();
  const tFleet = sampler.now();
  marks.push({ name: `${HOSTS} hosts dial`, t_ms: tFleet });
  fleet = new FleetProcs(cluster, {
    prefix: PREFIX,
    hosts: HOSTS,
    procs: PROCS,
    slots: SLOTS,
    runtimeMin_ms: RUNTIME_MIN_MS,
    runtimeMax_ms: RUNTIME_MAX_MS,
    connectSpread_ms: CONNECT_SPREAD_MS,
  });
  const f = fleet;
  await until('every simulated host registered', () => f.total().registered === HOSTS || undefined, 120_000, 100).catch(
    async (err: Error) => {
      const d = raftDelta(raft0, await raftFigures());
      log(`${f.total().registered} of ${HOSTS} registered; elections ${d.elections}, busy answers ${d.busy}`);
      mkdirSync(dirname(OUT), { recursive: true });
      writeFileSync(`${OUT}.controllers.log`, cluster.dumpLogs());
      throw err;
    },
  );
  const regInitial_ms = sampler.now() - tFleet;
  const regRaft = raftDelta(raft0, await raftFigures());
  log(
    `${HOSTS} hosts registered ${(regInitial_ms / 1000).toFixed(1)} s after they started dialling (spread over ${CONNECT_SPREAD_MS / 1000} s); ` +
      `elections meanwhile ${regRaft.elections}, busy answers ${regRaft.busy}`,
  );
  await sleep(SETTLE_MS);
  const idle = sampler.mean(sampler.now() - SETTLE_MS);
  const per1000 = (x: number, b: number): number => ((x - b) / HOSTS) * 1000;
  result['idle'] = { base, withHosts: idle, regInitial_ms, registration: regRaft };
  log(
    `${HOSTS} hosts idle: leader CPU ${idle.cpu.toFixed(1)} % (+${per1000(idle.cpu, base.cpu).toFixed(1)} % per 1,000 hosts), ` +
      `RSS ${idle.rss_mib.toFixed(0)} MiB (+${per1000(idle.rss_mib, base.rss_mib).toFixed(1)} MiB per 1,000), ` +
      `heap ${idle.heap_mib.toFixed(0)} MiB (+${per1000(idle.heap_mib, base.heap_mib).toFixed(1)} MiB per 1,000)`,
  );

  const clients = await Promise.all(Array.from({ length: SUBMITTERS }, () => cluster.client('alice')));

  // 3. Jobs that no connected host can take: every pass looks at all of them and places none.
  if (PENDING > 0) {
    const rate = await submitJobs(clients, PENDING, 'select[mem>100000]', cluster.dir);
    log(`${PENDING} unplaceable jobs submitted at ${rate.toFixed(0)}/s`);
    marks.push({ name: `${PENDING} pending`, t_ms: sampler.now() });
    const h0 = passHistogram((await scrape(cluster, await cluster.waitForLeader())) ?? '');
    await sleep(SETTLE_MS);
    const passes = passesBetween(h0, passHistogram((await scrape(cluster, await cluster.waitForLeader())) ?? ''));
    const busy = sampler.mean(sampler.now() - SETTLE_MS);
    result['pendingPasses'] = { submitRate: rate, passes, leader: busy };
    log(
      `${HOSTS} hosts, ${PENDING} pending: ${passes.passes} passes in ${SETTLE_MS / 1000} s, mean ${passes.mean_ms.toFixed(1)} ms, ` +
        `p50 <= ${passes.quantiles_ms[0]} ms, p99 <= ${passes.quantiles_ms[1]} ms; leader CPU ${busy.cpu.toFixed(1)} %`,
    );
  }

  // 4. Jobs the hosts run, with a leader kill half-way.
  const before = f.total();
  const h1 = passHistogram((await scrape(cluster, await cluster.waitForLeader())) ?? '');
  const tJobs = performance.now();
  const submitting = submitJobs(clients, JOBS, 'select[ib]', cluster.dir);
  await until('half of the jobs started', () => f.total().starts - before.starts >= JOBS / 2 || undefined, 600_000, 50);
  const tHalf = performance.now();
  const passesRun = passesBetween(h1, passHistogram((await scrape(cluster, await cluster.waitForLeader())) ?? ''));
  const startedHalf = f.total().starts - before.starts;
  const dispatchRate = startedHalf / ((tHalf - tJobs) / 1000);
  log(
    `dispatched ${startedHalf} jobs at ${dispatchRate.toFixed(0)}/s (from the first submit); passes meanwhile: ` +
      `${passesRun.passes}, mean ${passesRun.mean_ms.toFixed(1)} ms, p99 <= ${passesRun.quantiles_ms[1]} ms`,
  );

  const killed = await cluster.waitForLeader();
  const raftKill = await raftFigures();
  const tKill = Date.now();
  marks.push({ name: 'leader SIGKILL', t_ms: sampler.now() });
  const runningAtKill = f.total().running;
  const fleetCpu = (): number => f.pids().reduce((a, pid) => a + (cpuSeconds(pid) ?? 0), 0);
  const fleetCpu0_s = fleetCpu();
  // The live controllers' own CPU over the storm (from /proc), and the monotonic clock at its ends
  // (microseconds, the clock of a `--cpu-prof` profile's timestamps: a profile can be cut to the window).
  const controllerCpu = (): Map<number, number> =>
    new Map(
      [...cluster.controllers]
        .filter(([id]) => id !== killed)
        .map(([id, p]) => [id, p.proc.pid === undefined ? 0 : (cpuSeconds(p.proc.pid) ?? 0)]),
    );
  const controllerCpu0 = controllerCpu();
  const counts0 = f.total();
  const mono0_us = process.hrtime.bigint() / 1000n;
  await cluster.kill(killed);
  const reg = await until(
    'every host re-registered after the leader kill',
    async () => {
      const at = await f.registeredAt();
      return at.every((t) => t > tKill) ? at.map((t) => t - tKill).sort((a, b) => a - b) : undefined;
    },
    120_000,
    250,
  );
  const fleetCpu_s = fleetCpu() - fleetCpu0_s;
  const mono1_us = process.hrtime.bigint() / 1000n;
  const controllerCpu1 = controllerCpu();
  const leader1 = await cluster.waitForLeader();
  const killRaft = raftDelta(raftKill, await raftFigures());
  log(
    `leader ${killed} killed with ${runningAtKill} jobs running: all ${HOSTS} hosts re-registered with leader ${leader1} ` +
      `after ${reg[reg.length - 1]} ms (p50 ${quantile(reg, 0.5)} ms, p90 ${quantile(reg, 0.9)} ms, first ${reg[0]} ms); ` +
      `elections ${killRaft.elections} (1 is the kill's), busy answers ${killRaft.busy}`,
  );
  await sleep(STATS_EVERY_MS * 2); // the fleet's counts, reported every STATS_EVERY_MS, are then current
  const counts1 = f.total();
  log(
    `  re-registrations after the kill: ${counts1.registrations - counts0.registrations}, of which ` +
      `${counts1.resumedRegistrations - counts0.resumedRegistrations} resumed a TLS session (daemon/tls-resumption.ts)`,
  );
  const timelines = await f.timelines();
  const timeline = timelineReport(timelines, await f.registeredAt(), tKill);
  for (const line of timelineLines(timeline, reg)) log(line);
  // Which controller each answer came from: the killed leader, the new one, or the other follower.
  const roles = new Map(
    [...cluster.controllers.keys()].map((id) => [
      cluster.address(id),
      id === killed ? 'killed' : id === leader1 ? 'new leader' : 'follower',
    ]),
  );
  const byTarget = answersByTarget(timelines, tKill, (url) => roles.get(new URL(url).host) ?? url);
  log(
    `  answers by the controller dialled: ${Object.entries(byTarget)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(`${OUT}.timelines.json`, JSON.stringify({ tKill, roles: Object.fromEntries(roles), timelines }));
  log(`  the fleet processes' CPU from the kill to the last re-registration: ${fleetCpu_s.toFixed(2)} s`);
  const controllersCpu_s = Object.fromEntries(
    [...controllerCpu1].map(([id, s]) => [id, Number((s - (controllerCpu0.get(id) ?? s)).toFixed(2))]),
  );
  const leaderCpu_s = controllersCpu_s[leader1] ?? 0;
  log(
    `  the controllers' CPU from the kill to the last re-registration: ` +
      Object.entries(controllersCpu_s)
        .map(([id, s]) => `${Number(id) === leader1 ? 'new leader' : 'follower'} ${id} ${s.toFixed(2)} s`)
        .join(', ') +
      ` (new leader ${((leaderCpu_s / HOSTS) * 1000).toFixed(2)} ms per host); monotonic clock ${mono0_us}-${mono1_us} us`,
  );
  const tLast = tKill + (reg[reg.length - 1] ?? 0);
  const stalls = (await f.stalls()).map((s) => s.filter(([end, ms]) => end - ms >= tKill && end <= tLast + 1_000));
  log(
    `  the fleet processes' event-loop stalls (>= 50 ms) from the kill to the last re-registration: ` +
      stalls
        .map(
          (s) =>
            `${s.length} stalls, ${s.reduce((a, [, ms]) => a + ms, 0)} ms in all, longest ${Math.max(0, ...s.map(([, ms]) => ms))} ms`,
        )
        .join('; '),
  );
  result['failover'] = {
    runningAtKill,
    timeline,
    answersByTarget: byTarget,
    fleetCpu_s,
    controllersCpu_s,
    leaderCpuPerHost_ms: (leaderCpu_s / HOSTS) * 1000,
    ...killRaft,
    reregister_ms: { first: reg[0], p50: quantile(reg, 0.5), p90: quantile(reg, 0.9), last: reg[reg.length - 1] },
  };

  await submitting;
  await until(
    'every job finished and its statuses acked',
    () => (f.total().finished - before.finished >= JOBS && f.total().unacked === 0) || undefined,
    600_000,
    200,
  );
  const done = f.total();
  const all_s = (performance.now() - tJobs) / 1000;
  result['run'] = {
    dispatchRate,
    passesBeforeKill: passesRun,
    endToEnd_perSecond: JOBS / all_s,
    starts: done.starts - before.starts,
    duplicates: done.duplicates - before.duplicates,
    killed: done.kills - before.kills,
  };
  log(
    `${JOBS} jobs finished and acked in ${all_s.toFixed(1)} s (${(JOBS / all_s).toFixed(0)}/s through the failover); ` +
      `starts ${done.starts - before.starts}, duplicate starts ${done.duplicates - before.duplicates}, runs killed ${done.kills - before.kills}`,
  );
  await sleep(Math.min(SETTLE_MS, 5_000));
} finally {
  sampler.stop();
  fleet?.stop();
  await cluster.stop();
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify({ ...result, marks, samples: sampler.samples }, null, 2));
mkdirSync(dirname(SVG), { recursive: true });
writeFileSync(SVG, hostsChart(`Controllers with ${HOSTS} worker hosts`, sampler.samples, [1, 2, 3], marks));
log(`wrote ${OUT} and ${SVG}`);
