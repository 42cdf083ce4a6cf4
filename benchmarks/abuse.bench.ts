// The abuse benchmark (issue 19, "limits against abuse"): a legitimate client's submit latency on a
// three-controller cluster on 127.0.0.1, before and during an attack on the leader's /api of
// 2,000 idle connections (held open: the leader closes each after the auth deadline, the attacker
// opens it again at once) plus 200 unauthenticated connects a second (each sends one request
// without a token, reads the refusal and hangs up), for 30 s; and the leader's RSS. The limits are
// the defaults of xce.yaml (`api_limits`), unchanged: the attacker's sockets come from 20 loopback
// addresses (127.0.0.2 ... 127.0.0.21, 100 idle connections each, under connections_per_address
// 512) and the connects from 127.0.1.x, so the per-address limit does not refuse them all; the
// legitimate client is 127.0.0.1. The attacker runs in a worker thread, so that its own work does
// not delay the client's measurement in this process's event loop.
//
//   node dist/benchmarks/abuse.bench.js [--idle 2000] [--connects 200] [--duration 30] [--before 10]
//                                       [--addresses 20] [--out FILE]

import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { TestCluster } from '../harness/cluster.js';
import { quantile } from '../harness/stats.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import type { XceClient } from '../cli/client.js';
import type { ApiAdmissionStats } from '../daemon/api-admission.js';

interface AttackPlan {
  readonly url: string;
  readonly idle: number;
  readonly connectsPerSecond: number;
  readonly seconds: number;
  readonly addresses: number;
}

/** What the attacker reports at the end. */
interface AttackFigures {
  /** Idle connections open at the end of the ramp, and opened in all (each reopened after the leader closed it). */
  idleOpenAfterRamp: number;
  idleOpened: number;
  idleClosedByServer: number;
  /** Close codes and reasons the leader gave (first of each). */
  closeReasons: Record<string, string>;
  connectsTried: number;
  connectsAnswered: number;
  connectsFailed: number;
  rampSeconds: number;
}

// ---------------------------------------------------------------- attacker (worker thread)

/** The idle connection `i`'s source address: 127.0.0.2 ... 127.0.0.(1 + addresses). */
function idleAddress(i: number, addresses: number): string {
  return `127.0.0.${2 + (i % addresses)}`;
}

async function attack(plan: AttackPlan): Promise<void> {
  const port = parentPort!;
  const f: AttackFigures = {
    idleOpenAfterRamp: 0,
    idleOpened: 0,
    idleClosedByServer: 0,
    closeReasons: {},
    connectsTried: 0,
    connectsAnswered: 0,
    connectsFailed: 0,
    rampSeconds: 0,
  };
  let stopping = false;
  const open = new Set<WebSocket>();
  /** Opens idle connection `i`, and opens it again whenever the server closes it, until stopping. */
  const hold = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const ws = new WebSocket(plan.url, { localAddress: idleAddress(i, plan.addresses), handshakeTimeout: 30_000 });
      let opened = false;
      ws.on('error', () => undefined);
      ws.on('open', () => {
        opened = true;
        open.add(ws);
        f.idleOpened++;
        resolve();
      });
      ws.on('close', (code, reason) => {
        open.delete(ws);
        if (opened) f.idleClosedByServer++;
        f.closeReasons[String(code)] ??= reason.toString();
        if (!opened) resolve();
        // At once after the auth deadline (an attacker's loop); later when refused (1013) or not connected.
        if (!stopping) setTimeout(() => void hold(i), opened && code !== 1013 ? 0 : 1_000);
      });
    });
  // Ramp: 100 opening at a time.
  const t0 = performance.now();
  for (let i = 0; i < plan.idle; i += 100)
    await Promise.all(Array.from({ length: Math.min(100, plan.idle - i) }, (_, k) => hold(i + k)));
  f.rampSeconds = (performance.now() - t0) / 1000;
  f.idleOpenAfterRamp = open.size;
  port.postMessage({ kind: 'ramped', idle: open.size });
  await new Promise<void>((resolve) => port.once('message', () => resolve()));
  // The connects: one every 1/rate s, from 127.0.1.1 ... 127.0.1.250 in turn.
  const every_ms = 1_000 / plan.connectsPerSecond;
  const end = performance.now() + plan.seconds * 1000;
  let n = 0;
  const inflight = new Set<Promise<void>>();
  while (performance.now() < end) {
    const due = (performance.now() - (end - plan.seconds * 1000)) / every_ms;
    while (n < due) {
      n++;
      f.connectsTried++;
      const p = new Promise<void>((resolve) => {
        const ws = new WebSocket(plan.url, { localAddress: `127.0.1.${1 + (n % 250)}`, handshakeTimeout: 10_000 });
        const timer = setTimeout(() => ws.terminate(), 10_000);
        ws.on('error', () => undefined);
        ws.on('open', () => ws.send(JSON.stringify({ id: 1, op: 'cluster.status', args: {} })));
        ws.on('message', () => {
          f.connectsAnswered++;
          ws.close();
        });
        ws.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
      }).then(() => void inflight.delete(p));
      inflight.add(p);
    }
    await new Promise((r) => setTimeout(r, Math.max(1, every_ms / 2)));
  }
  await Promise.all(inflight);
  f.connectsFailed = f.connectsTried - f.connectsAnswered;
  stopping = true;
  for (const ws of open) ws.terminate();
  port.postMessage({ kind: 'done', figures: f });
}

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
  const r = await fetch(`http://${cluster.address(id)}/healthz`, { signal: AbortSignal.timeout(10_000) });
  return (await r.json()) as { pid: number; leader: number; term: number; api: ApiAdmissionStats };
}

async function main(): Promise<void> {
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
  const idle = cl.whole('idle', 2000, 0);
  const connects = cl.whole('connects', 200, 1);
  const seconds = cl.whole('duration', 30, 1);
  const before = cl.whole('before', 10, 1);
  const addresses = cl.whole('addresses', 20, 1, 250);
  const out = cl.values.out ?? 'benchmarks/results/tmp/abuse.json';
  const log = (s: string) => process.stdout.write(`${s}\n`);
  const fmt = (p: Phase) =>
    `${p.submits} submits, p50 ${p.p50_ms.toFixed(1)} ms, p99 ${p.p99_ms.toFixed(1)} ms, max ${p.max_ms.toFixed(1)} ms, ${p.errors} errors`;
  const load = [loadavg()];
  const cluster = await TestCluster.start({ controllers: 3 });
  let worker: Worker | null = null;
  try {
    const leader = await cluster.waitForLeader();
    const h0 = await health(cluster, leader);
    const pid = h0.pid;
    const alice = await cluster.client('alice', { controllers: [cluster.address(leader)] });
    await alice.submit({ command: ['true'] }); // warm: connected, authenticated, JIT
    const rss: Array<{ phase: string; mib: number }> = [];
    const sample = (phase: string) => () => rss.push({ phase, mib: rssMiB(pid) });
    log(`leader ${leader} (pid ${pid}), RSS ${rssMiB(pid).toFixed(0)} MiB; ${before} s of submits before the attack`);
    const calm = await submitFor(alice, before, sample('before'));
    log(`before: ${fmt(calm)}`);
    const plan: AttackPlan = {
      url: `ws://${cluster.address(leader)}/api`,
      idle,
      connectsPerSecond: connects,
      seconds,
      addresses,
    };
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: plan });
    worker = w;
    const messages: Array<{ kind: string; idle?: number; figures?: AttackFigures }> = [];
    let wake: (() => void) | null = null;
    w.on('message', (m: (typeof messages)[number]) => {
      messages.push(m);
      wake?.();
    });
    w.on('error', (e) => log(`attacker failed: ${e.message}`));
    const next = async (kind: string) => {
      for (;;) {
        const m = messages.find((x) => x.kind === kind);
        if (m !== undefined) return m;
        await new Promise<void>((r) => (wake = r));
      }
    };
    const ramped = await next('ramped');
    const rssRamped = rssMiB(pid);
    log(
      `attack: ${ramped.idle} idle connections open on the leader (RSS ${rssRamped.toFixed(0)} MiB); ${connects} connects/s for ${seconds} s`,
    );
    w.postMessage('go');
    const during = await submitFor(alice, seconds, sample('during'));
    log(`during: ${fmt(during)}`);
    const attackFigures = (await next('done')).figures!;
    const h1 = await health(cluster, leader);
    const rssDuring = rss.filter((r) => r.phase === 'during').map((r) => r.mib);
    const rssBefore = rss.filter((r) => r.phase === 'before').map((r) => r.mib);
    load.push(loadavg());
    const result = {
      node: process.version,
      plan: { idle, connects, seconds, before, addresses },
      leader,
      termBefore: h0.term,
      termAfter: h1.term,
      leaderAfter: h1.leader,
      before: calm,
      during,
      rss_mib: {
        before_median: quantile(
          [...rssBefore].sort((a, b) => a - b),
          0.5,
        ),
        afterRamp: rssRamped,
        during_median: quantile(
          [...rssDuring].sort((a, b) => a - b),
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
            leadershipLog: cluster
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
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(result, null, 2));
    log(`wrote ${out}`);
  } finally {
    await worker?.terminate();
    await cluster.stop();
  }
}

if (!isMainThread) await attack(workerData as AttackPlan);
else if (process.argv[1]?.endsWith('abuse.bench.js')) await main();
