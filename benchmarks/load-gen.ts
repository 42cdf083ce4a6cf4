// The load of `bench:cluster` and `bench:etcd`, one definition for both so that the side-by-side
// compares the systems and not two generators: N clients, each one connection doing sequential
// durable writes (an XCE `jobs.submit` over WebSocket, or an etcd put through its HTTP/JSON gateway),
// optionally spread over several load-generator threads (`--procs`, worker_threads: each its own
// event loop, so at 256 clients the generator's one loop is not what is measured). The threads open
// and warm their connections, start together, and send back every latency; the percentiles are of
// the merged latencies.

import { Agent as HttpAgent, request as httpRequest, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { writeFileSync } from 'node:fs';
import { threadId, Worker } from 'node:worker_threads';
import { XceClient } from '../cli/client.js';
import { quantile } from '../harness/stats.js';

export interface LoadResult {
  clients: number;
  submits: number;
  seconds: number;
  perSecond: number;
  p50_ms: number;
  p99_ms: number;
  /** The rest of the distribution: where the mean parts from the median (the tail). */
  mean_ms?: number;
  p75_ms?: number;
  p90_ms?: number;
  p95_ms?: number;
  p999_ms?: number;
  max_ms?: number;
  errors: number;
  /** Load-generator threads the clients were spread over (absent: 1, the benchmark's own thread). */
  procs?: number;
}

/** What the clients write to: XCE controllers (a logged-in token) or an etcd member's client URL. */
export type LoadTarget =
  | {
      readonly kind: 'xce';
      readonly controllers: readonly string[];
      readonly caPem: string | null;
      readonly token: string;
    }
  | { readonly kind: 'etcd'; readonly port: number; readonly caPem: string | null };

/** The raw outcome of some loops: every latency (ms, unsorted), failures, the seconds they ran. */
export interface LoopsOutcome {
  latencies: number[];
  errors: number;
  seconds: number;
}

/** `clients` concurrent loops, loop `i` calling `submit(i)` one after another for `seconds`. */
export async function runLoops(
  clients: number,
  seconds: number,
  submit: (i: number) => Promise<void>,
): Promise<LoopsOutcome> {
  const latencies: number[] = [];
  // XCE_BENCH_TIMELINE=<file>: every submit's send time (epoch ms) and latency, written to
  // <file>.<pid>.<thread> as "sent latency" lines, to line the latencies up with the controllers' logs.
  const timeline = process.env['XCE_BENCH_TIMELINE'];
  const sends: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < end) {
        const s = performance.now();
        try {
          await submit(i);
          latencies.push(performance.now() - s);
          if (timeline !== undefined) sends.push(performance.timeOrigin + s);
        } catch {
          errors++;
        }
      }
    }),
  );
  if (timeline !== undefined && timeline !== '')
    writeFileSync(
      `${timeline}.${process.pid}.${threadId}`,
      sends.map((t, k) => `${t.toFixed(1)} ${latencies[k]!.toFixed(2)}\n`).join(''),
    );
  return { latencies, errors, seconds: (performance.now() - t0) / 1000 };
}

/** Rate and quantiles of the merged outcomes of loops that ran side by side. */
export function summarize(clients: number, parts: readonly LoopsOutcome[], procs?: number): LoadResult {
  const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
  const seconds = Math.max(...parts.map((p) => p.seconds));
  return {
    clients,
    submits: latencies.length,
    seconds,
    perSecond: latencies.length / seconds,
    p50_ms: quantile(latencies, 0.5),
    p99_ms: quantile(latencies, 0.99),
    mean_ms: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    p75_ms: quantile(latencies, 0.75),
    p90_ms: quantile(latencies, 0.9),
    p95_ms: quantile(latencies, 0.95),
    p999_ms: quantile(latencies, 0.999),
    max_ms: latencies[latencies.length - 1] ?? NaN,
    errors: parts.reduce((n, p) => n + p.errors, 0),
    ...(procs !== undefined && procs > 1 ? { procs } : {}),
  };
}

/** One line of the distribution (`mean …  p50 …  max …`, ms) of a load result. */
export function distributionLine(r: LoadResult): string {
  const f = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(2));
  const qs = `p75 ${f(r.p75_ms)}  p90 ${f(r.p90_ms)}  p95 ${f(r.p95_ms)}  p99 ${f(r.p99_ms)}  p99.9 ${f(r.p999_ms)}`;
  return `mean ${f(r.mean_ms)}  p50 ${f(r.p50_ms)}  ${qs}  max ${f(r.max_ms)} ms`;
}

/** The line a warm-up run (`--warmup`) prints: what it did, and that it is not among the results. */
export function warmUpLine(r: LoadResult, writes: 'submits' | 'puts'): string {
  return `warm-up: ${r.clients} clients for ${r.seconds.toFixed(1)} s, ${r.perSecond.toFixed(0)} ${writes}/s, p50 ${r.p50_ms.toFixed(2)} ms (not counted)`;
}

/**
 * POST `body` to an etcd member's gateway (https when `agent` is an HttpsAgent), the body of a 200;
 * with `timeout_ms`, rejects when the answer has not come by then (a port something else holds).
 */
export function etcdPost(
  agent: HttpAgent | HttpsAgent,
  port: number,
  path: string,
  body: string,
  timeout_ms?: number,
): Promise<string> {
  const opts: RequestOptions = {
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json' },
  };
  return new Promise((resolve, reject) => {
    const onResponse = (res: import('node:http').IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(text) : reject(new Error(`${path}: HTTP ${res.statusCode} ${text}`)),
      );
    };
    const req = agent instanceof HttpsAgent ? httpsRequest(opts, onResponse) : httpRequest(opts, onResponse);
    req.on('error', reject);
    if (timeout_ms !== undefined)
      req.setTimeout(timeout_ms, () => req.destroy(new Error(`${path}: no answer within ${timeout_ms} ms`)));
    req.end(body);
  });
}

/** A keep-alive agent for `sockets` connections to etcd: https verifying `caPem`, or plain http. */
export function etcdAgent(caPem: string | null, sockets: number): HttpAgent | HttpsAgent {
  return caPem !== null
    ? new HttpsAgent({ keepAlive: true, maxSockets: sockets, ca: caPem, noDelay: true })
    : new HttpAgent({ keepAlive: true, maxSockets: sockets, noDelay: true });
}

/** `clients` open connections to `target`, each with its write; `close` ends them. */
export interface OpenLoad {
  submit(i: number): Promise<void>;
  close(): void;
}

/** Opens `clients` connections to `target` and warms each (one write: connect, leader redirect, JIT). */
export async function openLoad(target: LoadTarget, clients: number, tag: string): Promise<OpenLoad> {
  if (target.kind === 'xce') {
    const conns = Array.from(
      { length: clients },
      () =>
        new XceClient({
          controllers: target.controllers,
          callDeadline_ms: 20_000,
          tls: target.caPem !== null ? { ca: target.caPem } : null,
          token: target.token,
        }),
    );
    const load: OpenLoad = {
      submit: async (i) => void (await conns[i]!.submit({ command: ['true'] })),
      close: () => conns.forEach((c) => c.close()),
    };
    await Promise.all(conns.map((_, i) => load.submit(i)));
    return load;
  }
  const agent = etcdAgent(target.caPem, clients + 4);
  const value = Buffer.alloc(100, 'x').toString('base64');
  let n = 0;
  const load: OpenLoad = {
    submit: async () => {
      const key = Buffer.from(`${tag}-k${n++}`).toString('base64');
      await etcdPost(agent, target.port, '/v3/kv/put', JSON.stringify({ key, value }));
    },
    close: () => agent.destroy(),
  };
  await Promise.all(Array.from({ length: clients }, (_, i) => load.submit(i)));
  return load;
}

/** What a load thread is given (workerData of load-worker.ts). */
export interface LoadWorkerData {
  readonly target: LoadTarget;
  readonly clients: number;
  readonly seconds: number;
  readonly tag: string;
}

/** What a load thread posts: `ready` once warm (then it waits for `go`), then its outcome. */
export type FromLoadWorker =
  { kind: 'ready' } | { kind: 'done'; outcome: LoopsOutcome } | { kind: 'error'; message: string };

interface Thread {
  readonly worker: Worker;
  readonly ready: Promise<void>;
  readonly done: Promise<LoopsOutcome>;
}

function startThread(data: LoadWorkerData, go: Promise<void>): Thread {
  const w = new Worker(new URL('./load-worker.js', import.meta.url), { workerData: data });
  let readyOk!: () => void;
  let fail!: (e: Error) => void;
  const ready = new Promise<void>((res, rej) => ((readyOk = res), (fail = rej)));
  const done = new Promise<LoopsOutcome>((resolve, reject) => {
    w.on('message', (m: FromLoadWorker) => {
      if (m.kind === 'ready') {
        readyOk();
        void go.then(() => w.postMessage('go'));
      } else if (m.kind === 'done') resolve(m.outcome);
      else reject(new Error(`load thread ${data.tag}: ${m.message}`));
      if (m.kind !== 'ready') void w.terminate();
    });
    w.on('error', (e) => (fail(e), reject(e)));
    w.on('exit', (code) => {
      const e = new Error(`load thread ${data.tag} exited with ${code} before its result`);
      fail(e);
      reject(e);
    });
  });
  done.catch(() => {}); // reported through Promise.all below
  return { worker: w, ready, done };
}

/**
 * `clients` clients writing to `target` for `seconds`: in this thread when `procs` is 1, else spread
 * as evenly as possible over `procs` load threads started together.
 */
export async function measureSpread(
  target: LoadTarget,
  clients: number,
  seconds: number,
  procs: number,
): Promise<LoadResult> {
  if (procs <= 1) {
    const load = await openLoad(target, clients, 'main');
    try {
      return summarize(clients, [await runLoops(clients, seconds, (i) => load.submit(i))]);
    } finally {
      load.close();
    }
  }
  const threads = Math.min(procs, clients);
  let goNow!: () => void;
  const go = new Promise<void>((r) => (goNow = r));
  const started = Array.from({ length: threads }, (_, t) =>
    startThread(
      { target, seconds, tag: `t${t}`, clients: Math.floor(clients / threads) + (t < clients % threads ? 1 : 0) },
      go,
    ),
  );
  try {
    await Promise.all(started.map((s) => s.ready));
  } catch (err) {
    await Promise.all(started.map((s) => s.worker.terminate()));
    throw err;
  }
  goNow();
  return summarize(clients, await Promise.all(started.map((s) => s.done)), threads);
}
