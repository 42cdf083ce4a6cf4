// The abuse benchmark (issue 19, "limits against abuse"): a legitimate client's submit latency on a
// three-controller cluster on 127.0.0.1, before and during an attack on the leader's /api of
// 2,000 idle connections (held open: the leader closes each after the auth deadline, the attacker
// opens it again at once) plus 200 unauthenticated connects a second (each sends one request
// without a token, reads the refusal and hangs up), for 30 s; and the leader's RSS. The limits are
// the defaults of xce.yaml (`api_limits`), unchanged: the attacker's sockets come from 20 loopback
// addresses (127.0.0.2 ... 127.0.0.21, 100 idle connections each, under connections_per_address
// 512) and the connects from 127.0.1.x, so the per-address limit does not refuse them all; the
// legitimate client is 127.0.0.1. The attacker runs in a worker thread, so that its own work does
// not delay the client's measurement in this process's event loop (abuse-attacker.ts).
//
//   node dist/benchmarks/abuse.bench.js [--idle 2000] [--connects 200] [--duration 30] [--before 10]
//                                       [--addresses 20] [--out FILE]

import { Worker } from 'node:worker_threads';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { TestCluster } from '../harness/cluster.js';
import { quantile } from '../harness/stats.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import type { XceClient } from '../cli/client.js';
import type { ApiAdmissionStats } from '../daemon/api-admission.js';
import type { AttackFigures, AttackPlan } from './abuse-attacker.js';

// ---------------------------------------------------------------- the client and the report

export interface Phase {
  submits: number;
  errors: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

/** Serial submits by `client` for `seconds`: their latency quantiles. */
async function submitFor(client: XceClient, seconds: number, rssSample: () => void): Promise<Phase> {
  const lat: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  let nextSample = performance.now();
  while (performance.now() < end) {
    const t = performance.now();
    try {
      await client.submit({ command: ['true'] });
      lat.push(performance.now() - t);
    } catch {
      errors++;
    }
    if (performance.now() >= nextSample) {
      rssSample();
      nextSample += 1_000;
    }
  }
  lat.sort((a, b) => a - b);
  const q = (p: number) => (lat.length === 0 ? NaN : quantile(lat, p));
  return { submits: lat.length, errors, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: lat.at(-1) ?? NaN };
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function health(
  cluster: TestCluster,
  id: number,
): Promise<{ pid: number; leader: number; term: number; api: ApiAdmissionStats }> {
  return cluster.getJson<{ pid: number; leader: number; term: number; api: ApiAdmissionStats }>(id, '/healthz', 10_000);
}

interface BenchOptions {
  readonly idle: number;
  readonly connects: number;
  readonly seconds: number;
  readonly before: number;
  readonly addresses: number;
  readonly out: string;
}

function benchOptions(): BenchOptions {
  const cl = parseCommandLine(
    'abuse.bench',
    'node dist/benchmarks/abuse.bench.js [--idle 2000] [--connects 200] [--duration 30] [--before 10] [--addresses 20] [--out FILE]\n' +
      '  --idle N         idle connections held open on the leader (default 2000)\n' +
      '  --connects N     unauthenticated connects a second during the attack (default 200)\n' +
      '  --duration S     seconds of attack (default 30)\n' +
      '  --before S       seconds of submits before the attack (default 10)\n' +
      '  --addresses N    loopback source addresses of the idle connections, 127.0.0.2... (default 20;\n' +
      '                   keep idle/addresses under api_limits.connections_per_address, 512)\n' +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/abuse.json, ignored by git)',
    stringOptions('idle', 'connects', 'duration', 'before', 'addresses', 'out'),
  );
  return {
    idle: cl.whole('idle', 2000, 0),
    connects: cl.whole('connects', 200, 1),
    seconds: cl.whole('duration', 30, 1),
    before: cl.whole('before', 10, 1),
    addresses: cl.whole('addresses', 20, 1, 250),
    out: cl.values.out ?? 'benchmarks/results/tmp/abuse.json',
  };
}

const log = (s: string) => process.stdout.write(`${s}\n`);
const fmt = (p: Phase) =>
  `${p.submits} submits, p50 ${p.p50_ms.toFixed(1)} ms, p99 ${p.p99_ms.toFixed(1)} ms, max ${p.max_ms.toFixed(1)} ms, ${p.errors} errors`;

type Health = Awaited<ReturnType<typeof health>>;

/** The cluster as set up: its leader, the leader's health before the attack, the client, the RSS samples. */
interface Bench {
  readonly cluster: TestCluster;
  readonly leader: number;
  readonly h0: Health;
  readonly pid: number;
  readonly alice: XceClient;
  readonly rss: Array<{ phase: string; mib: number }>;
  /** Worker thread of the attacker, once started (terminated at the end). */
  worker: Worker | null;
}

/** The leader found, its health, the legitimate client connected and warmed up. */
async function setUp(cluster: TestCluster): Promise<Bench> {
  const leader = await cluster.waitForLeader();
  const h0 = await health(cluster, leader);
  const alice = await cluster.client('alice', { controllers: [cluster.address(leader)] });
  await alice.submit({ command: ['true'] }); // warm: connected, authenticated, JIT
  return { cluster, leader, h0, pid: h0.pid, alice, rss: [], worker: null };
}

function sampler(b: Bench, phase: string): () => void {
  return () => b.rss.push({ phase, mib: rssMiB(b.pid) });
}

/** The submits before the attack. */
async function beforeAttack(b: Bench, o: BenchOptions): Promise<Phase> {
  log(
    `leader ${b.leader} (pid ${b.pid}), RSS ${rssMiB(b.pid).toFixed(0)} MiB; ${o.before} s of submits before the attack`,
  );
  const calm = await submitFor(b.alice, o.before, sampler(b, 'before'));
  log(`before: ${fmt(calm)}`);
  return calm;
}

type AttackMessage = { kind: string; idle?: number; figures?: AttackFigures };

/** The attacker's messages, each awaited by its kind. */
function messagesOf(w: Worker): (kind: string) => Promise<AttackMessage> {
  const messages: AttackMessage[] = [];
  let wake: (() => void) | null = null;
  w.on('message', (m: AttackMessage) => {
    messages.push(m);
    wake?.();
  });
  w.on('error', (e) => log(`attacker failed: ${e.message}`));
  return async (kind: string) => {
    for (;;) {
      const m = messages.find((x) => x.kind === kind);
      if (m !== undefined) return m;
      await new Promise<void>((r) => (wake = r));
    }
  };
}

interface UnderAttack {
  readonly rssRamped: number;
  readonly during: Phase;
  readonly figures: AttackFigures;
  /** The leader's health after the attack. */
  readonly h1: Health;
}

/** The attacker started and ramped up, then the submits during its connect flood. */
async function underAttack(b: Bench, o: BenchOptions): Promise<UnderAttack> {
  const plan: AttackPlan = {
    // Over TLS like every client of the dev cluster (the attacker verifies the throw-away CA).
    url: `${b.cluster.tls !== null ? 'wss' : 'ws'}://${b.cluster.address(b.leader)}/api`,
    ca: b.cluster.tls !== null ? readFileSync(b.cluster.tls.caFile, 'utf8') : null,
    idle: o.idle,
    connectsPerSecond: o.connects,
    seconds: o.seconds,
    addresses: o.addresses,
  };
  const w = new Worker(fileURLToPath(new URL('./abuse-attacker.js', import.meta.url)), { workerData: plan });
  b.worker = w;
  const next = messagesOf(w);
  const ramped = await next('ramped');
  const rssRamped = rssMiB(b.pid);
  log(
    `attack: ${ramped.idle} idle connections open on the leader (RSS ${rssRamped.toFixed(0)} MiB); ${o.connects} connects/s for ${o.seconds} s`,
  );
  w.postMessage('go');
  const during = await submitFor(b.alice, o.seconds, sampler(b, 'during'));
  log(`during: ${fmt(during)}`);
  const figures = (await next('done')).figures!;
  const h1 = await health(b.cluster, b.leader);
  return { rssRamped, during, figures, h1 };
}

/** The result as JSON to `o.out`, and its figures on stdout. */
function report(b: Bench, o: BenchOptions, calm: Phase, a: UnderAttack, load: number[][]): void {
  const { h0 } = b;
  const { h1, figures: attackFigures, rssRamped } = a;
  const rssDuring = b.rss.filter((r) => r.phase === 'during').map((r) => r.mib);
  const rssBefore = b.rss.filter((r) => r.phase === 'before').map((r) => r.mib);
  const result = {
    node: process.version,
    plan: { idle: o.idle, connects: o.connects, seconds: o.seconds, before: o.before, addresses: o.addresses },
    leader: b.leader,
    termBefore: h0.term,
    termAfter: h1.term,
    leaderAfter: h1.leader,
    before: calm,
    during: a.during,
    rss_mib: {
      before_median: quantile(
        [...rssBefore].sort((x, y) => x - y),
        0.5,
      ),
      afterRamp: rssRamped,
      during_median: quantile(
        [...rssDuring].sort((x, y) => x - y),
        0.5,
      ),
      during_max: Math.max(...rssDuring),
    },
    attacker: attackFigures,
    leaderAdmission: h1.api,
    loadavg: load,
    // When the leadership changed: what the controllers said about it (to tell the attack from the machine's load).
    ...(h1.term !== h0.term
      ? {
          leadershipLog: b.cluster
            .dumpLogs()
            .split('\n')
            .filter((l) => /^---|leader|following|silent|election|campaign|term/i.test(l)),
        }
      : {}),
  };
  log(
    `leader RSS: before ${result.rss_mib.before_median.toFixed(0)} MiB, after the ramp ${rssRamped.toFixed(0)} MiB, during median ${result.rss_mib.during_median.toFixed(0)} MiB (max ${result.rss_mib.during_max.toFixed(0)})`,
  );
  log(
    `attacker: ${attackFigures.idleOpened} idle opens (${attackFigures.idleClosedByServer} closed by the leader), ${attackFigures.connectsTried} connects (${attackFigures.connectsAnswered} answered); leader ${h0.leader} term ${h0.term} -> leader ${h1.leader} term ${h1.term}`,
  );
  log(`close reasons: ${JSON.stringify(attackFigures.closeReasons)}`);
  log(`load average: ${load.map((l) => l.map((x) => x.toFixed(1)).join(' ')).join(' -> ')}`);
  mkdirSync(dirname(o.out), { recursive: true });
  writeFileSync(o.out, JSON.stringify(result, null, 2));
  log(`wrote ${o.out}`);
}

async function main(): Promise<void> {
  const o = benchOptions();
  const load = [loadavg()];
  const cluster = await TestCluster.start({ controllers: 3 });
  let bench: Bench | null = null;
  try {
    bench = await setUp(cluster);
    const calm = await beforeAttack(bench, o);
    const attacked = await underAttack(bench, o);
    load.push(loadavg());
    report(bench, o, calm, attacked, load);
  } finally {
    await bench?.worker?.terminate();
    await cluster.stop();
  }
}

if (process.argv[1]?.endsWith('abuse.bench.js')) await main();
