// Helpers of the end-to-end tests (test/*.test.ts): a cluster of real processes that dumps every
// process's log when the test fails and is always stopped, the usual worker host, waits on jobs, and
// xcecli / xceadmin run as a user runs them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { XceClient } from '../cli/client.js';
import { TestCluster, until, type ClusterOptions } from '../harness/cluster.js';

/** The build this helper is part of (`dist/`, or another `--outDir`): the CLIs run are its own. */
const dist = new URL('../', import.meta.url).pathname;

type WorkerHost = NonNullable<ClusterOptions['workers']>[number];

/** A worker host as in the shipped hosts.yaml (ib, x86_64, mem), running jobs as the test's own user. */
export function workerHost(host: string, slots = 4): WorkerHost {
  return { host, slots, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] };
}

/** Starts a cluster, runs `body`, writes every process's log to stderr when it fails, and stops the cluster. */
export async function withCluster(opts: ClusterOptions, body: (cluster: TestCluster) => Promise<void>): Promise<void> {
  const cluster = await TestCluster.start(opts);
  try {
    await body(cluster);
  } catch (err) {
    process.stderr.write(cluster.dumpLogs() + '\n');
    throw err;
  } finally {
    await cluster.stop();
  }
}

/** Submits a job and returns its id. */
export async function submitJob(client: XceClient, job: Parameters<XceClient['submit']>[0]): Promise<number> {
  return ((await client.submit(job)) as { jobId: number }).jobId;
}

/** Waits until the details of job `jobId` satisfy `ready` (polling every `every_ms`), and returns them. */
export function untilJob<D>(
  client: XceClient,
  jobId: number,
  what: string,
  ready: (d: D) => boolean,
  limit_ms = 20_000,
  every_ms = 50,
): Promise<D> {
  return until(
    what,
    async () => {
      const d = (await client.showJob(jobId)) as D;
      return ready(d) ? d : undefined;
    },
    limit_ms,
    every_ms,
  );
}

/** Waits until job `jobId` has ended (DONE or EXIT) and returns its details. */
export function untilEnded<D extends { state: string }>(
  client: XceClient,
  jobId: number,
  limit_ms = 20_000,
): Promise<D> {
  return untilJob<D>(
    client,
    jobId,
    `job ${jobId} to finish`,
    (d) => d.state === 'DONE' || d.state === 'EXIT',
    limit_ms,
  );
}

/** Submits `python -- sleep <seconds>` on an ib host and waits until it runs: its id and details. */
export async function runningSleep<D extends { state: string }>(
  client: XceClient,
  cwd: string,
  seconds: number,
): Promise<{ jobId: number; running: D }> {
  const jobId = await submitJob(client, {
    app: 'python',
    resreq: 'select[ib]',
    command: ['sleep', String(seconds)],
    cwd,
  });
  return { jobId, running: await untilJob<D>(client, jobId, 'the job to run', (d) => d.state === 'RUN') };
}

/** Waits until every job of `ids` has ended (DONE or EXIT) and returns their details, in order. */
export function untilAllEnded<D>(client: XceClient, ids: readonly number[], limit_ms: number): Promise<D[]> {
  return until(
    'all jobs to finish',
    async () => {
      const ds = await Promise.all(ids.map((id) => client.showJob(id)));
      return ds.every((d) => d.state === 'DONE' || d.state === 'EXIT') ? (ds as D[]) : undefined;
    },
    limit_ms,
    200,
  );
}

/** What a CLI run gave: its exit status (null when it was killed), stdout and stderr. */
export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

/** A fresh private config directory for a CLI user (its token goes there). */
export function cliHome(name: string): string {
  return mkdtempSync(join(tmpdir(), `xce-${name}-home-`));
}

/**
 * Runs this build's `bin` with `args` (and `input` on stdin) as a user runs it: `home` as its config
 * directory, `cluster`'s controllers (or `o.controllers`), its CA, no colour, in `o.cwd`, with
 * `o.env` over all that; killed after 30 s (or `o.timeout_ms`).
 */
export function runCli(
  cluster: TestCluster,
  home: string,
  bin: 'xcecli' | 'xceadmin',
  args: string[],
  input?: string,
  o: { cwd?: string; controllers?: readonly string[]; timeout_ms?: number; env?: Record<string, string> } = {},
): CliRun {
  const r = spawnSync(process.execPath, [join(dist, 'cli', `${bin}.js`), ...args], {
    input,
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
    encoding: 'utf8',
    env: {
      ...process.env,
      XCE_CONFIG_DIR: home,
      XCE_CONTROLLERS: (o.controllers ?? cluster.addresses()).join(','),
      NO_COLOR: '1',
      ...cluster.clientEnv(),
      ...o.env,
    },
    timeout: o.timeout_ms ?? 30_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/**
 * The HTTP status a WebSocket upgrade of `path` on controller `id` with `headers` is answered with
 * (101 when it opens; over TLS with the cluster's CA), and the refusal's body.
 */
export async function tryUpgrade(
  cluster: TestCluster,
  id: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(cluster.url(id, path), { headers, ...(cluster.dialTls() ?? {}) });
  ws.on('error', () => undefined);
  const r = await new Promise<{ status: number; body: string }>((resolve) => {
    ws.on('open', () => resolve({ status: 101, body: '' }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
  });
  ws.terminate();
  return r;
}
