// Worker (xcecd) costs: parsing a start frame, running one job through the layers, and jobs
// started → finished → acked per second through the agent against a local fake leader.
//
//   node dist/benchmarks/worker.bench.js [--jobs 200]

import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { WebSocketServer } from 'ws';
import { createLogger } from '../daemon/log.js';
import { encodeFrame, parseControllerFrame, parseWorkerFrame, type StartInfo } from '../daemon/worker-protocol.js';
import { WorkerAgent } from '../daemon/worker/agent.js';
import { workerIsRoot } from '../daemon/worker/identity.js';
import { JobRun, type JobRunOptions } from '../daemon/worker/job-run.js';
import { parseCommandLine } from '../harness/cli-args.js';
import { jobRunOptions, startInfo } from '../testing/worker-fixtures.js';

const JOBS = parseCommandLine('worker.bench', 'node dist/benchmarks/worker.bench.js [--jobs N] (default 200)', {
  jobs: { type: 'string' },
}).whole('jobs', 200);
const log = createLogger({ component: 'bench' }, { sink: { write: () => undefined } });
const dir = mkdtempSync(join(tmpdir(), 'xce-bench-'));
const ROOT = workerIsRoot();

const info = (jobId: number, over: Partial<StartInfo> = {}): StartInfo =>
  startInfo(dir, {
    jobId,
    profile: 'python',
    profileLabel: 'python@0a1b2c',
    stdout: '/dev/null',
    stderr: '/dev/null',
    profileEnv: [{ name: 'PYTHONHOME', value: '/opt/python' }],
    jobEnv: [{ name: 'CASE', value: 'a' }],
    ...over,
  });

const runOpts: JobRunOptions = jobRunOptions({ log, killGrace_ms: 1000 });

let id = 1;
const frame = encodeFrame({ type: 'start', startInfo: info(1) });
const bench = new Bench({ time: 2000 });
bench
  .add('parse a start frame (zod)', () => {
    parseControllerFrame(frame);
  })
  .add('run `true` (serial, no pre/post-exec)', async () => {
    await new JobRun(info(id++), runOpts, { onStarted: () => undefined }).done;
  })
  .add('run `true` with the four pre/post-exec layers', async () => {
    await new JobRun(
      info(id++, { profilePreExec: 'true', jobPreExec: 'true', jobPostExec: 'true', profilePostExec: 'true' }),
      runOpts,
      { onStarted: () => undefined },
    ).done;
  });
await bench.run();
console.log(
  `worker benchmarks (root: ${ROOT}, identity switch: ${ROOT ? (runOpts.setpriv ?? 'node uid/gid') : 'none'})`,
);
for (const t of bench.tasks) {
  const r = t.result;
  if (r.state !== 'completed') {
    console.log(`${t.name}: ${r.state}`);
    continue;
  }
  console.log(
    `${t.name}: median ${r.latency.p50.toFixed(3)} ms, ${(1000 / r.latency.p50).toFixed(0)} /s (samples ${r.latency.samplesCount})`,
  );
}

/** `jobs` starts sent at once to an agent; time until every finished status is acked. */
async function throughput(jobs: number, stateDir: string | null): Promise<number> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/worker' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  let finished = 0;
  let t0 = 0;
  const done = new Promise<number>((resolve) => {
    wss.on('connection', (ws) => {
      ws.on('message', (d) => {
        const f = parseWorkerFrame(d.toString());
        if (f.type === 'register') {
          ws.send(JSON.stringify({ type: 'registered', leaderId: 1, heartbeat_ms: 1000 }));
          t0 = performance.now();
          for (let j = 0; j < jobs; j++)
            ws.send(encodeFrame({ type: 'start', startInfo: info(100_000 + j + (stateDir === null ? 0 : 50_000)) }));
        }
        if (f.type === 'status') {
          ws.send(JSON.stringify({ type: 'status-ack', statusId: f.statusId }));
          if (f.kind !== 'started' && ++finished === jobs) resolve(performance.now() - t0);
        }
      });
    });
  });
  const agent = new WorkerAgent({
    ...runOpts,
    controllers: [`127.0.0.1:${(wss.address() as AddressInfo).port}`],
    resources: { slots: 2, mem_bytes: 1 << 30, booleans: [], numerics: {} },
    version: 'bench',
    credential: null,
    tls: null,
    stateDir,
    jobsMax: 1024,
    random: Math.random,
  });
  agent.start();
  const ms = await done;
  agent.close();
  for (const c of wss.clients) c.terminate();
  await new Promise<void>((r) => wss.close(() => r()));
  return ms;
}

for (const stateDir of [null, join(dir, 'state')]) {
  const ms = await throughput(JOBS, stateDir);
  console.log(
    `agent, ${JOBS} jobs \`true\` at once, ${stateDir === null ? 'no state file' : 'state file (one fsync per event-loop turn)'}: ${ms.toFixed(0)} ms, ${((JOBS * 1000) / ms).toFixed(0)} jobs/s`,
  );
}
rmSync(dir, { recursive: true, force: true });
