// The same load as `bench:cluster` against etcd, for a side-by-side figure on the same machine in
// the same window: three etcd members on 127.0.0.1 (default settings: fdatasync before
// acknowledging, a majority must have it), N clients each doing sequential durable puts of a
// 100-byte value through etcd's HTTP/JSON gateway (`/v3/kv/put`, keep-alive connections) to the
// leader. Needs an `etcd` binary on PATH (Debian: `apt-get install etcd-server`); says so and exits
// 2 without one.
//
// With --tls every client and peer URL is https, certificates from a throw-away CA made with openssl
// (harness/dev-tls.ts, as for XCE's TestCluster): peers verify each other's certificate, clients
// the members' (etcd's --client-cert-auth stays off: an XCE client proves itself by its token).
// The clients are load-gen.ts's, the same as bench:cluster's (--procs spreads them over threads).
//
//   node dist/benchmarks/etcd.bench.js [--clients 1,256] [--duration 5] [--warmup S] [--tls] [--procs N] [--out FILE]

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import type { Agent as HttpAgent } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { makeDevTls, type DevTls } from '../harness/dev-tls.js';
import { distributionLine, etcdAgent, etcdPost, measureSpread, warmUpLine, type LoadResult } from './load-gen.js';

const MEMBERS = 3;

/** A status probe that gets no answer in this time is given up (the port may be another program's). */
const PROBE_TIMEOUT_MS = 1_000;

/**
 * The client port of the member that leads, once one does (30 s at most). Fails at once, naming it,
 * when a member has exited: its ports (random, 30000-49999) may be another program's.
 */
async function leaderPort(
  agent: HttpAgent | HttpsAgent,
  ports: readonly number[],
  members: readonly ChildProcess[],
): Promise<number> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const gone = members.findIndex((p) => p.exitCode !== null || p.signalCode !== null);
    if (gone >= 0) {
      const how = members[gone]!.exitCode ?? members[gone]!.signalCode;
      throw new MemberExited(
        `etcd member m${gone} exited (${how}) before a leader was elected: ` +
          `its ports ${ports[gone]} and ${ports[gone]! + 1} may be in use`,
      );
    }
    for (const port of ports) {
      try {
        const s = JSON.parse(await etcdPost(agent, port, '/v3/maintenance/status', '{}', PROBE_TIMEOUT_MS)) as {
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

class MemberExited extends Error {}

/** Tries this many random port ranges when a member exits at start (its port taken). */
const START_ATTEMPTS = 3;

/**
 * Starts the members (their processes go into `running`, to be killed by the caller) and returns
 * the leader's client port; a member that exits at start (a port taken) makes it try other ports.
 */
async function startMembers(
  dir: string,
  tls: DevTls | null,
  agent: HttpAgent | HttpsAgent,
  running: ChildProcess[],
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const base = 30_000 + Math.floor(Math.random() * 20_000);
    const members = Array.from({ length: MEMBERS }, (_, i) =>
      spawn('etcd', memberArgs(i, join(dir, `start-${attempt}`), base, tls), { stdio: 'ignore' }),
    );
    running.push(...members);
    try {
      return await leaderPort(
        agent,
        members.map((_, i) => base + 2 * i),
        members,
      );
    } catch (err) {
      if (!(err instanceof MemberExited) || attempt >= START_ATTEMPTS) throw err;
      process.stderr.write(`etcd.bench: ${err.message}; trying other ports\n`);
      for (const p of members) p.kill('SIGKILL');
    }
  }
}

/** The command line of member `i` of a cluster whose URLs are http, or https with `tls`'s certificates. */
function memberArgs(i: number, dir: string, base: number, tls: DevTls | null): string[] {
  const scheme = tls !== null ? 'https' : 'http';
  const client = (m: number) => `${scheme}://127.0.0.1:${base + 2 * m}`;
  const peer = (m: number) => `${scheme}://127.0.0.1:${base + 2 * m + 1}`;
  const cluster = Array.from({ length: MEMBERS }, (_, m) => `m${m}=${peer(m)}`).join(',');
  const certs =
    tls === null
      ? []
      : [
          // No --trusted-ca-file on the client URLs: etcd 3.4 then asks every client for a certificate.
          ...['--cert-file', tls.certFile, '--key-file', tls.keyFile],
          ...['--peer-cert-file', tls.certFile, '--peer-key-file', tls.keyFile],
          ...['--peer-trusted-ca-file', tls.caFile, '--peer-client-cert-auth'],
        ];
  return [
    ...['--name', `m${i}`, '--data-dir', join(dir, `m${i}`)],
    ...['--listen-client-urls', client(i), '--advertise-client-urls', client(i)],
    ...['--listen-peer-urls', peer(i), '--initial-advertise-peer-urls', peer(i)],
    ...['--initial-cluster', cluster, '--initial-cluster-state', 'new', '--initial-cluster-token', 'xce-bench'],
    ...certs,
    ...['--log-level', 'error'],
  ];
}

async function main(): Promise<void> {
  const cl = parseCommandLine(
    'etcd.bench',
    'node dist/benchmarks/etcd.bench.js [--clients 1,256] [--duration 5] [--warmup S] [--tls] [--procs N] [--out FILE]\n' +
      '  --clients N,...  concurrent client counts, one load run each (default 1,256)\n' +
      '  --duration S     seconds per client count (default 5)\n' +
      '  --warmup S       run each client count S s before its measured run, not counted (default 0)\n' +
      '  --tls            https on every client and peer URL (a throw-away CA), as XCE runs by default\n' +
      "  --procs N        spread the clients over N load-generator threads (default 1: the bench's own)\n" +
      '  --out FILE       the JSON result (default benchmarks/results/tmp/etcd.json)',
    { ...stringOptions('clients', 'duration', 'warmup', 'procs', 'out'), tls: { type: 'boolean' } },
  );
  const clientCounts = cl.wholes('clients', '1,256');
  const seconds = cl.whole('duration', 5);
  const warmup = cl.whole('warmup', 0, 0);
  const procs = cl.whole('procs', 1);
  const out = cl.values.out ?? 'benchmarks/results/tmp/etcd.json';
  const version = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (version.error !== undefined || version.status !== 0) {
    process.stderr.write('etcd.bench: no `etcd` binary on PATH (Debian: apt-get install etcd-server)\n');
    process.exit(2);
  }
  const log = (s: string) => process.stdout.write(`${s}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'xce-etcd-'));
  const tls = cl.values.tls === true ? makeDevTls(join(dir, 'tls'), 'etcd bench') : null;
  const caPem = tls !== null ? readFileSync(tls.caFile, 'utf8') : null;
  log(`${version.stdout.split('\n')[0]!}, ${tls !== null ? 'TLS (https) on client and peer URLs' : 'plain http'}`);
  const procsRunning: ChildProcess[] = [];
  const agent = etcdAgent(caPem, 8);
  const results: LoadResult[] = [];
  try {
    const port = await startMembers(dir, tls, agent, procsRunning);
    for (const clients of clientCounts) {
      if (warmup > 0)
        log(warmUpLine(await measureSpread({ kind: 'etcd', port, caPem }, clients, warmup, procs), 'puts'));
      const r = await measureSpread({ kind: 'etcd', port, caPem }, clients, seconds, procs);
      results.push(r);
      log(
        `${String(clients).padStart(4)} clients: ${r.perSecond.toFixed(0).padStart(6)} puts/s   p50 ${r.p50_ms.toFixed(2)} ms   p99 ${r.p99_ms.toFixed(2)} ms   (${r.submits} in ${r.seconds.toFixed(1)} s, ${r.errors} errors, ${procs} load thread(s))`,
      );
      log(`      ${distributionLine(r)}`);
    }
  } finally {
    agent.destroy();
    for (const p of procsRunning) p.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dir, { recursive: true, force: true });
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ tls: tls !== null, procs, warmup_s: warmup, load: results }, null, 2));
  log(`wrote ${out}`);
}

if (process.argv[1]?.endsWith('etcd.bench.js')) await main();
