// The same load as `bench:cluster` against etcd, for a side-by-side figure on the same machine in
// the same window: three etcd members on 127.0.0.1 (default settings: fdatasync before
// acknowledging, a majority must have it), N clients each doing sequential durable puts of a
// 100-byte value through etcd's HTTP/JSON gateway (`/v3/kv/put`, keep-alive connections) to the
// leader. Needs an `etcd` binary on PATH (Debian: `apt-get install etcd-server`); says so and exits
// 2 without one.
//
//   node dist/benchmarks/etcd.bench.js [--clients 1,256] [--duration 5] [--out FILE]

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { submitLoops, type LoadResult } from './cluster.bench.js';

const MEMBERS = 3;

function post(agent: Agent, port: number, path: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`${path}: HTTP ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function leaderPort(agent: Agent, ports: readonly number[]): Promise<number> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    for (const port of ports) {
      try {
        const s = JSON.parse(await post(agent, port, '/v3/maintenance/status', '{}')) as {
          header?: { member_id?: string };
          leader?: string;
        };
        if (s.leader !== undefined && s.leader !== '0' && s.leader === s.header?.member_id) return port;
      } catch {
        // not up yet
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no etcd leader within 30 s');
}

async function main(): Promise<void> {
  const cl = parseCommandLine(
    'etcd.bench',
    'node dist/benchmarks/etcd.bench.js [--clients 1,256] [--duration 5] [--out FILE]\n' +
      '  --clients N,...  concurrent client counts, one load run each (default 1,256)\n' +
      '  --duration S     seconds per client count (default 5)\n' +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/etcd.json)',
    stringOptions('clients', 'duration', 'out'),
  );
  const clientCounts = cl.wholes('clients', '1,256');
  const seconds = cl.whole('duration', 5);
  const out = cl.values.out ?? 'benchmarks/results/tmp/etcd.json';
  const version = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (version.error !== undefined || version.status !== 0) {
    process.stderr.write('etcd.bench: no `etcd` binary on PATH (Debian: apt-get install etcd-server)\n');
    process.exit(2);
  }
  const log = (s: string) => process.stdout.write(`${s}\n`);
  log(version.stdout.split('\n')[0]!);
  const dir = mkdtempSync(join(tmpdir(), 'xce-etcd-'));
  const base = 30_000 + Math.floor(Math.random() * 20_000);
  const client = (i: number) => base + 2 * i;
  const peer = (i: number) => base + 2 * i + 1;
  const cluster = Array.from({ length: MEMBERS }, (_, i) => `m${i}=http://127.0.0.1:${peer(i)}`).join(',');
  const procs: ChildProcess[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(...clientCounts) + 4 });
  const results: LoadResult[] = [];
  try {
    for (let i = 0; i < MEMBERS; i++) {
      const args = [
        ...['--name', `m${i}`, '--data-dir', join(dir, `m${i}`)],
        ...['--listen-client-urls', `http://127.0.0.1:${client(i)}`],
        ...['--advertise-client-urls', `http://127.0.0.1:${client(i)}`],
        ...['--listen-peer-urls', `http://127.0.0.1:${peer(i)}`],
        ...['--initial-advertise-peer-urls', `http://127.0.0.1:${peer(i)}`],
        ...['--initial-cluster', cluster, '--initial-cluster-state', 'new', '--initial-cluster-token', 'xce-bench'],
        ...['--log-level', 'error'],
      ];
      procs.push(spawn('etcd', args, { stdio: 'ignore' }));
    }
    const port = await leaderPort(
      agent,
      Array.from({ length: MEMBERS }, (_, i) => client(i)),
    );
    const value = Buffer.alloc(100, 'x').toString('base64');
    let n = 0;
    const put = () =>
      post(agent, port, '/v3/kv/put', JSON.stringify({ key: Buffer.from(`k${n++}`).toString('base64'), value }));
    for (const clients of clientCounts) {
      await Promise.all(Array.from({ length: clients }, put)); // warm-up: open the connections
      const r = await submitLoops(clients, seconds, async () => void (await put()));
      results.push(r);
      log(
        `${String(clients).padStart(4)} clients: ${r.perSecond.toFixed(0).padStart(6)} puts/s   p50 ${r.p50_ms.toFixed(2)} ms   p99 ${r.p99_ms.toFixed(2)} ms   (${r.submits} in ${r.seconds.toFixed(1)} s, ${r.errors} errors)`,
      );
    }
  } finally {
    agent.destroy();
    for (const p of procs) p.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ load: results }, null, 2));
  log(`wrote ${out}`);
}

if (process.argv[1]?.endsWith('etcd.bench.js')) await main();
