// REST submits against WebSocket submits on the same three real controllers (127.0.0.1): for
// each client count, a WebSocket round (the client library, one connection per client, as
// `cluster.bench` measures it) and a REST round (node:http, one keep-alive connection per client, a bearer token
// and an Idempotency-Key per submit, sent to the leader), alternated --rounds times; the medians
// and the ratio REST / WebSocket are printed and written as JSON (an ignored path by default).
//
//   node dist/benchmarks/rest.bench.js [--clients 16,256] [--duration 5] [--rounds 3] [--out FILE]

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Agent, request as httpRequest } from 'node:http';
import { TestCluster } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { quantile } from '../harness/stats.js';
import { measureLoad, submitLoops, type LoadResult } from './cluster.bench.js';

async function restToken(cluster: TestCluster, leader: number): Promise<string> {
  const r = await fetch(`http://${cluster.address(leader)}/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: 'alice', password: 'alice-dev' }),
  });
  if (r.status !== 200) throw new Error(`REST login answered ${r.status}: ${await r.text()}`);
  return ((await r.json()) as { token: string }).token;
}

/** `clients` loops submitting over REST for `seconds`; each loop its own Idempotency-Key client id. */
async function measureRest(cluster: TestCluster, clients: number, seconds: number, round: number): Promise<LoadResult> {
  const leader = await cluster.waitForLeader();
  const token = await restToken(cluster, leader);
  const [host, port] = cluster.address(leader).split(':');
  // node:http with a keep-alive agent, one socket per client: what a script's HTTP client does.
  // (Node's fetch costs the benchmark process itself about three times the CPU per request.)
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const body = JSON.stringify({ command: ['true'] });
  const submit = (client: string, seq: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host,
          port: Number(port),
          agent,
          method: 'POST',
          path: '/v1/jobs',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'idempotency-key': `${client}:${seq}`,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 201 ? resolve() : reject(new Error(`submit answered ${res.statusCode}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const ids = Array.from({ length: clients }, (_, i) => `bench-${process.pid}-${round}-${i}`);
  const seqs = ids.map(() => 1);
  // Warm up every connection before the clock starts, as measureLoad does.
  await Promise.all(ids.map((id, i) => submit(id, seqs[i]!++)));
  const r = await submitLoops(clients, seconds, (i) => submit(ids[i]!, seqs[i]!++));
  agent.destroy();
  return r;
}

interface Row {
  clients: number;
  ws: LoadResult[];
  rest: LoadResult[];
  wsMedian_perSecond: number;
  restMedian_perSecond: number;
  ratio: number;
}

function median(xs: readonly number[]): number {
  return quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
}

async function main(): Promise<void> {
  const cl = parseCommandLine(
    'rest.bench',
    'node dist/benchmarks/rest.bench.js [--clients 16,256] [--duration 5] [--rounds 3] [--out FILE]\n' +
      '  --clients N,...  concurrent client counts (default 16,256)\n' +
      '  --duration S     seconds per round (default 5)\n' +
      '  --rounds N       WebSocket and REST rounds, alternated, per client count (default 3)\n' +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/rest.json, ignored by git)',
    stringOptions('clients', 'duration', 'rounds', 'out'),
  );
  const counts = cl.wholes('clients', '16,256');
  const seconds = cl.whole('duration', 5);
  const rounds = cl.whole('rounds', 3);
  const out = cl.values.out ?? 'benchmarks/results/tmp/rest.json';
  const log = (s: string) => process.stdout.write(`${s}\n`);
  const fmt = (r: LoadResult) =>
    `${r.perSecond.toFixed(0).padStart(6)} submits/s  p50 ${r.p50_ms.toFixed(1)} ms  p99 ${r.p99_ms.toFixed(1)} ms  (${r.errors} errors)`;
  const cluster = await TestCluster.start({ controllers: 3 });
  const rows: Row[] = [];
  try {
    for (const n of counts) {
      const ws: LoadResult[] = [];
      const rest: LoadResult[] = [];
      for (let k = 0; k < rounds; k++) {
        ws.push(await measureLoad(cluster, n, seconds));
        log(`${String(n).padStart(4)} clients, round ${k + 1}: WebSocket ${fmt(ws.at(-1)!)}`);
        rest.push(await measureRest(cluster, n, seconds, rows.length * rounds + k));
        log(`${String(n).padStart(4)} clients, round ${k + 1}: REST      ${fmt(rest.at(-1)!)}`);
      }
      const w = median(ws.map((r) => r.perSecond));
      const r = median(rest.map((x) => x.perSecond));
      rows.push({ clients: n, ws, rest, wsMedian_perSecond: w, restMedian_perSecond: r, ratio: r / w });
      log(
        `${String(n).padStart(4)} clients: median WebSocket ${w.toFixed(0)}/s, REST ${r.toFixed(0)}/s, REST/WS ${(r / w).toFixed(2)}`,
      );
    }
  } finally {
    await cluster.stop();
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ node: process.version, seconds, rounds, rows }, null, 2));
  log(`wrote ${out}`);
}

if (process.argv[1]?.endsWith('rest.bench.js')) await main();
