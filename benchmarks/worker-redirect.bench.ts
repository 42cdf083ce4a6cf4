// What a worker sent on by a follower costs (issue 14): N simulated hosts (host-fleet.ts, the real
// worker link) that know only a follower's address all dial it, are answered `not-leader` naming
// the leader, and register there. Printed: the follower's CPU, this process's (the N workers'),
// and the leader's, in CPU-seconds from the first dial until all N are registered, per host. Run
// on two builds to compare redirect paths; CPU time, not wall time, so less sensitive to a loaded
// machine than hosts.bench.ts (the controllers' idle CPU, measured for 3 s before, is taken off).
//
// `--dial leader`: the hosts know the leader's address alone (no redirect): what a registration
// costs the leader by itself.
//
//   node dist/benchmarks/worker-redirect.bench.js [--hosts 500] [--spread-ms 2000] [--dial follower|leader]

import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { createLogger } from '../daemon/log.js';
import { simHostsYaml } from './fleet-procs.js';
import { HostFleet } from './host-fleet.js';
import { cpuSeconds } from './proc-sampler.js';

const cl = parseCommandLine(
  'worker-redirect.bench',
  'node dist/benchmarks/worker-redirect.bench.js [--hosts 500] [--spread-ms 2000] [--dial follower|leader]',
  stringOptions('hosts', 'spread-ms', 'dial'),
);
const DIAL = cl.values.dial ?? 'follower';
if (DIAL !== 'follower' && DIAL !== 'leader') throw new Error(`--dial ${DIAL}: follower or leader`);
const HOSTS = cl.whole('hosts', 500, 1, 5_000);
const SPREAD_MS = cl.whole('spread-ms', 2_000, 0, 60_000);
const IDLE_MS = 3_000;

const cluster = await TestCluster.start({ controllers: 3, edit: { 'hosts.yaml': simHostsYaml('sim', HOSTS, 8) } });
let fleet: HostFleet | null = null;
try {
  const leader = await cluster.waitForLeader();
  const follower = [...cluster.controllers.keys()].find((id) => id !== leader)!;
  const pid = (id: number): number => cluster.controllers.get(id)!.proc.pid!;
  const cpu = () => ({
    follower: cpuSeconds(pid(follower)) ?? 0,
    leader: cpuSeconds(pid(leader)) ?? 0,
    workers: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
  });
  fleet = new HostFleet({
    controllers: [cluster.address(DIAL === 'leader' ? leader : follower)],
    secret: cluster.rootSecret(),
    tls: cluster.dialTls(),
    prefix: 'sim',
    from: 0,
    count: HOSTS,
    resources: { slots: 8, mem_bytes: 64 * 1024 ** 3, booleans: ['ib', 'x86_64'], numerics: { mem: 65536 } },
    runtimeMin_ms: 500,
    runtimeMax_ms: 3_000,
    connectSpread_ms: SPREAD_MS,
    log: createLogger({ component: 'redirect-bench' }, { level: 'error', format: 'json' }),
  });
  const f = fleet;
  // The controllers' idle CPU (Raft heartbeats), taken off the figures below.
  const idle0 = cpu();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idle1 = cpu();
  const idlePerS = (k: 'follower' | 'leader'): number => (idle1[k] - idle0[k]) / (IDLE_MS / 1000);
  const c0 = cpu();
  const t0 = performance.now();
  f.start();
  await until('every host registered', () => f.counts().registered === HOSTS || undefined, 120_000, 50);
  const wall_s = (performance.now() - t0) / 1000;
  const c1 = cpu();
  const per = (k: keyof typeof c0): string => {
    const idle_s = k === 'workers' ? 0 : idlePerS(k) * wall_s;
    return `${(((c1[k] - c0[k] - idle_s) / HOSTS) * 1000).toFixed(2)} ms`;
  };
  console.log(
    `${HOSTS} hosts ${DIAL === 'leader' ? 'dialling' : `sent on by follower ${follower} to`} leader ${leader}, ` +
      `all registered in ${wall_s.toFixed(1)} s; ` +
      `CPU per host: follower ${per('follower')}, leader ${per('leader')}, workers ${per('workers')}`,
  );
} finally {
  fleet?.close();
  await cluster.stop();
}
