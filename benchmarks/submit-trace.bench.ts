// Where the time of one durable submit goes, hop by hop: three real xcectld processes on 127.0.0.1
// started with the opt-in trace on (XCE_TRACE_DIR, daemon/submit-trace.ts), N clients submitting
// `true` in a loop for a few seconds, then every submit's hops matched across the client, the leader
// and the followers by its Raft index (CLOCK_MONOTONIC microseconds, one clock for every process).
// Prints, per client count, the median of each hop over the submits of that run, and over the slowest
// 1 % of them (where the p99's time goes); writes JSON.
//
//   node dist/benchmarks/submit-trace.bench.js [--clients 1,256] [--duration 5] [--out FILE]

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { XceClient } from '../cli/client.js';
import { TestCluster } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { median, quantile } from '../harness/stats.js';
import { TRACE_DIR_ENV, traceNow_us } from '../daemon/submit-trace.js';

/** One submit as the client saw it. */
interface ClientSubmit {
  readonly jobId: number;
  readonly send_us: number;
  readonly recv_us: number;
}

/** The hops of the table, in path order: [key, what it measures]. */
export const HOPS: readonly (readonly [string, string])[] = [
  ['client→leader', 'client sends the frame → the leader reads it (ws)'],
  ['admission queue', 'frame read → request started (api-admission fair scheduling)'],
  ['decode', 'request started → frame parsed and validated (JSON + zod)'],
  ['serve→propose', 'parsed → proposed to Raft (token, session, admission, encode)'],
  ['propose→ready', 'proposed → the Ready carrying it is taken (one event-loop turn)'],
  ['ready→send', 'Ready taken → MsgApp handed to the peer link (first follower; < 0: sent before, takeAppends)'],
  ['propose→send', 'proposed → MsgApp handed to the peer link (first follower)'],
  ['leader wal', "Ready taken → the leader's save resolved (group commit + fdatasync)"],
  ['leader fdatasync', "the leader's save started → resolved"],
  ['app→follower', 'MsgApp sent → the (first acking) follower read it'],
  ['follower recv→wal', 'follower read it → its save started'],
  ['follower fdatasync', "the follower's save started → resolved"],
  ['follower wal→ack', "the follower's save resolved → its MsgAppResp sent"],
  ['ack→leader', 'MsgAppResp sent → the leader read it'],
  ['ready→ack back', "Ready taken → the first follower's MsgAppResp read (vs leader wal: the longer is on the path)"],
  ['quorum→commit', 'a majority has it (2 of 3) → the Ready carrying it as committed is taken'],
  ['commit→applied', 'that Ready taken → applied here (what the Ready persists first included)'],
  ['applied→answer', 'applied → the answer frame written (waiter, result, JSON)'],
  ['answer→client', 'the answer written → the client has it'],
  ['total', 'client send → client has the answer'],
];

interface NodeTrace {
  id: number;
  /** hop → index → first time (µs). */
  firsts: Map<string, Map<number, number>>;
  /** 'send-resp' / 'recv-resp': per peer, [index, t] in time order. */
  acks: Map<string, Map<number, [number, number][]>>;
  /** 'send-app' per peer: index → first time. */
  sendApp: Map<number, Map<number, number>>;
  /** api lines: index → times. */
  api: Map<number, { recv: number; start: number; parsed: number; proposed: number; answer: number; jobId: number }>;
}

function readTrace(file: string, wanted: (index: number) => boolean): NodeTrace {
  const t: NodeTrace = { id: 0, firsts: new Map(), acks: new Map(), sendApp: new Map(), api: new Map() };
  const first = (hop: string, i: number, at: number) => {
    let m = t.firsts.get(hop);
    if (m === undefined) t.firsts.set(hop, (m = new Map()));
    if (!m.has(i)) m.set(i, at);
  };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    const f = line.split(' ');
    if (f[0] === 'node') {
      t.id = Number(f[1]);
      continue;
    }
    if (f[0] === 'api') {
      const [, index, recv, start, parsed, proposed, answer, jobId] = f.map(Number);
      t.api.set(index!, {
        recv: recv!,
        start: start!,
        parsed: parsed!,
        proposed: proposed!,
        answer: answer!,
        jobId: jobId!,
      });
      continue;
    }
    const [hop, a, b, p, at] = [f[0]!, Number(f[1]), Number(f[2]), Number(f[3]), Number(f[4])];
    if (hop === 'send-resp' || hop === 'recv-resp') {
      let byPeer = t.acks.get(hop);
      if (byPeer === undefined) t.acks.set(hop, (byPeer = new Map()));
      let l = byPeer.get(p);
      if (l === undefined) byPeer.set(p, (l = []));
      l.push([b, at]);
      continue;
    }
    for (let i = a; i <= b; i++) {
      if (!wanted(i)) continue;
      if (hop === 'send-app') {
        let m = t.sendApp.get(p);
        if (m === undefined) t.sendApp.set(p, (m = new Map()));
        if (!m.has(i)) m.set(i, at);
      } else first(hop, i, at);
    }
  }
  return t;
}

/** The first ack at or after `after` covering `index` (acks in time order). */
function firstAck(acks: [number, number][] | undefined, index: number, after: number): number | undefined {
  if (acks === undefined) return undefined;
  // Binary search the first ack at or after `after`, then scan forward.
  let lo = 0;
  let hi = acks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (acks[mid]![1] < after) lo = mid + 1;
    else hi = mid;
  }
  for (let k = lo; k < acks.length && k < lo + 100_000; k++) if (acks[k]![0] >= index) return acks[k]![1];
  return undefined;
}

/** Each hop's duration (ms) for every submit in `subs`. */
function hopsOf(
  subs: readonly ClientSubmit[],
  traces: readonly NodeTrace[],
  byJob: ReadonlyMap<number, { index: number; leader: number }>,
) {
  const out = new Map<string, number[]>(HOPS.map(([k]) => [k, []]));
  const add = (k: string, from: number | undefined, to: number | undefined) => {
    if (from !== undefined && to !== undefined) out.get(k)!.push((to - from) / 1000);
  };
  for (const s of subs) {
    const at = byJob.get(s.jobId);
    if (at === undefined) continue;
    const i = at.index;
    const leader = traces[at.leader]!;
    const followers = traces.filter((t) => t !== leader);
    const L = (hop: string, k: number) => leader.firsts.get(hop)?.get(k);
    const a = leader.api.get(i)!;
    add('client→leader', s.send_us, a.recv);
    add('admission queue', a.recv, a.start);
    add('decode', a.start, a.parsed);
    add('serve→propose', a.parsed, a.proposed);
    const ready = L('ready', i);
    add('propose→ready', a.proposed, ready);
    const sends = [...leader.sendApp.values()].map((m) => m.get(i)).filter((x) => x !== undefined);
    const firstSend = sends.length > 0 ? Math.min(...sends) : undefined;
    add('ready→send', ready, firstSend);
    add('propose→send', a.proposed, firstSend);
    const walDone = L('wal-done', i);
    add('leader wal', ready, walDone);
    add('leader fdatasync', L('wal-start', i), walDone);
    // The follower whose acknowledgement reached the leader first.
    let best: { f: NodeTrace; at: number } | undefined;
    const acked: number[] = walDone !== undefined ? [walDone] : [];
    for (const f of followers) {
      const at = firstAck(leader.acks.get('recv-resp')?.get(f.id), i, a.proposed);
      if (at === undefined) continue;
      acked.push(at);
      if (best === undefined || at < best.at) best = { f, at };
    }
    if (best !== undefined) {
      const F = (hop: string) => best.f.firsts.get(hop)?.get(i);
      const recv = F('recv-app');
      add('app→follower', leader.sendApp.get(best.f.id)?.get(i), recv);
      add('follower recv→wal', recv, F('wal-start'));
      add('follower fdatasync', F('wal-start'), F('wal-done'));
      const sent = firstAck(best.f.acks.get('send-resp')?.get(leader.id), i, recv ?? 0);
      add('follower wal→ack', F('wal-done'), sent);
      add('ack→leader', sent, best.at);
      add('ready→ack back', ready, best.at);
    }
    acked.sort((x, y) => x - y);
    const commit = L('commit', i);
    if (acked.length >= 2) add('quorum→commit', acked[1], commit);
    add('commit→applied', commit, L('applied', i));
    add('applied→answer', L('applied', i), a.answer);
    add('answer→client', a.answer, s.recv_us);
    add('total', s.send_us, s.recv_us);
  }
  return out;
}

export interface TraceRun {
  clients: number;
  submits: number;
  perSecond: number;
  p50_ms: number;
  p99_ms: number;
  /** Hop → median ms over the traced submits (and how many were matched). */
  hops: Record<string, { median_ms: number; count: number }>;
  /** The same over the slowest 1 % of the submits (latency ≥ p99): where the tail's time goes. */
  tailHops: Record<string, { median_ms: number; count: number }>;
  /** The same over the slowest 10 % (latency ≥ p90): what lifts the mean above the median. */
  tail10Hops: Record<string, { median_ms: number; count: number }>;
  /** Hop → mean ms over every traced submit (the total's mean minus its median: the tail's weight). */
  meanHops: Record<string, number>;
  mean_ms: number;
  p90_ms: number;
}

/** Hop → mean ms over the hops of some submits. */
function means(hops: Map<string, number[]>): Record<string, number> {
  return Object.fromEntries([...hops].map(([k, v]) => [k, v.reduce((a, b) => a + b, 0) / v.length]));
}

/** Hop → median ms (and count) over the hops of some submits. */
function medians(hops: Map<string, number[]>): Record<string, { median_ms: number; count: number }> {
  return Object.fromEntries(
    [...hops].map(([k, v]) => [k, { median_ms: v.length > 0 ? median(v) : NaN, count: v.length }]),
  );
}

async function load(cluster: TestCluster, clients: number, seconds: number): Promise<ClientSubmit[]> {
  const conns: XceClient[] = await Promise.all(Array.from({ length: clients }, () => cluster.client('alice')));
  await Promise.all(conns.map((c) => c.submit({ command: ['true'] })));
  const subs: ClientSubmit[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    conns.map(async (c) => {
      while (performance.now() < end) {
        const send_us = traceNow_us();
        try {
          const r = await c.submit({ command: ['true'] });
          subs.push({ jobId: r.jobId, send_us, recv_us: traceNow_us() });
        } catch {
          // counted as missing from the table; the cluster bench counts errors
        }
      }
    }),
  );
  for (const c of conns) c.close();
  return subs;
}

/**
 * The markdown table of every run's hops (per client count: median, mean, median over the slowest
 * 10 % and over the slowest 1 %), then a line per run.
 */
function printTable(results: readonly TraceRun[]): void {
  const w = (s: string) => process.stdout.write(`${s}\n`);
  const cols = ['median', 'mean', 'slowest 10 %', 'slowest 1 %'];
  const heads = results.flatMap((r) => cols.map((c) => `${r.clients} cl. ${c}`));
  w(`| hop | ${heads.join(' | ')} | what |`);
  w(`|---|${heads.map(() => '---:|').join('')}---|`);
  for (const [k, what] of HOPS) {
    const cells = results.flatMap((r) => [
      r.hops[k]!.median_ms,
      r.meanHops[k]!,
      r.tail10Hops[k]!.median_ms,
      r.tailHops[k]!.median_ms,
    ]);
    w(`| ${k} | ${cells.map((c) => c.toFixed(3)).join(' | ')} | ${what} |`);
  }
  for (const r of results)
    w(
      `${r.clients} clients: ${r.submits} submits traced, ${r.perSecond.toFixed(0)}/s, mean ${r.mean_ms.toFixed(2)} ms, p50 ${r.p50_ms.toFixed(2)} ms, p90 ${r.p90_ms.toFixed(2)} ms, p99 ${r.p99_ms.toFixed(2)} ms`,
    );
}

/** One run's figures: its latency distribution and each hop's median, mean and tail medians. */
function traceRun(
  r: { clients: number; subs: ClientSubmit[]; seconds: number },
  traces: readonly NodeTrace[],
  byJob: ReadonlyMap<number, { index: number; leader: number }>,
): TraceRun {
  const lat = r.subs.map((s) => (s.recv_us - s.send_us) / 1000).sort((a, b) => a - b);
  const p99_ms = quantile(lat, 0.99);
  const p90_ms = quantile(lat, 0.9);
  const tail = r.subs.filter((s) => (s.recv_us - s.send_us) / 1000 >= p99_ms);
  const tail10 = r.subs.filter((s) => (s.recv_us - s.send_us) / 1000 >= p90_ms);
  const all = hopsOf(r.subs, traces, byJob);
  return {
    clients: r.clients,
    submits: r.subs.length,
    perSecond: r.subs.length / r.seconds,
    p50_ms: quantile(lat, 0.5),
    p99_ms,
    p90_ms,
    mean_ms: lat.reduce((a, b) => a + b, 0) / lat.length,
    hops: medians(all),
    meanHops: means(all),
    tailHops: medians(hopsOf(tail, traces, byJob)),
    tail10Hops: medians(hopsOf(tail10, traces, byJob)),
  };
}

async function main(): Promise<void> {
  const cl = parseCommandLine(
    'submit-trace.bench',
    'npm run bench:trace -- [--clients 1,256] [--duration 5] [--out FILE]\n' +
      '  --clients N,...  concurrent client counts, one traced run each (default 1,256)\n' +
      '  --duration S     seconds per client count (default 5)\n' +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/submit-trace.json)',
    stringOptions('clients', 'duration', 'out'),
  );
  const clientCounts = cl.wholes('clients', '1,256');
  const seconds = cl.whole('duration', 5);
  const out = cl.values.out ?? 'benchmarks/results/tmp/submit-trace.json';
  const dir = mkdtempSync(join(tmpdir(), 'xce-trace-'));
  process.env[TRACE_DIR_ENV] = dir; // inherited by the daemons TestCluster spawns
  const runs: { clients: number; subs: ClientSubmit[]; seconds: number }[] = [];
  const cluster = await TestCluster.start({ controllers: 3 });
  try {
    for (const n of clientCounts) {
      const t0 = performance.now();
      const subs = await load(cluster, n, seconds);
      runs.push({ clients: n, subs, seconds: (performance.now() - t0) / 1000 });
    }
    await new Promise((r) => setTimeout(r, 600)); // the daemons write their lines every 200 ms
  } finally {
    await cluster.stop();
  }
  const jobs = new Set(runs.flatMap((r) => r.subs.map((s) => s.jobId)));
  const files = readdirSync(dir).map((f) => join(dir, f));
  // The api lines say which controller led for each submit (leadership may move under load) and
  // which Raft index its entry got; only those indexes are read from every file.
  const indexes = new Set<number>();
  const byJob = new Map<number, { index: number; leader: number }>();
  files.forEach((f, k) => {
    for (const [i, a] of readTrace(f, () => false).api)
      if (jobs.has(a.jobId)) {
        indexes.add(i);
        byJob.set(a.jobId, { index: i, leader: k });
      }
  });
  if (byJob.size === 0) throw new Error(`no trace file in ${dir} holds the submits' api lines`);
  const traces = files.map((f) => readTrace(f, (i) => indexes.has(i)));
  rmSync(dir, { recursive: true, force: true });

  const results = runs.map((r) => traceRun(r, traces, byJob));
  printTable(results);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(results, null, 2));
  process.stdout.write(
    `wrote ${out} (milliseconds; each hop the median over that run's submits, or over its slowest 1 %)\n`,
  );
}

if (process.argv[1]?.endsWith('submit-trace.bench.js')) await main();
