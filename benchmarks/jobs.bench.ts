// End to end: jobs `true` submitted, dispatched, run and finished per second on two workers, on a
// three-controller cluster on 127.0.0.1 (real processes). Bounded by --jobs.
//
//   node dist/benchmarks/jobs.bench.js [--jobs 400] [--out FILE]

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine } from '../harness/cli-args.js';
import { workerHost } from '../testing/e2e.js';

export async function measureEndToEnd(
  jobs: number,
): Promise<{ jobs: number; seconds: number; perSecond: number; submitSeconds: number }> {
  const cluster = await TestCluster.start({
    controllers: 3,
    schedulerGrace_ms: 200,
    workers: ['node01', 'node02'].map((host) => workerHost(host, 64)),
  });
  try {
    const clients = await Promise.all(Array.from({ length: 16 }, () => cluster.client('alice')));
    await until(
      'both workers registered',
      async () => {
        const r = (await clients[0]!.submit({ command: ['true'], resreq: 'select[ib]', cwd: cluster.dir })) as {
          jobId: number;
        };
        return until(
          `warm-up job ${r.jobId}`,
          async () => ((await clients[0]!.showJob(r.jobId)) as { state: string }).state === 'DONE',
          20_000,
          50,
        );
      },
      30_000,
    );
    const t0 = performance.now();
    let next = 0;
    const ids: number[] = [];
    await Promise.all(
      clients.map(async (c) => {
        while (next < jobs) {
          next++;
          ids.push(
            ((await c.submit({ command: ['true'], resreq: 'select[ib]', cwd: cluster.dir })) as { jobId: number })
              .jobId,
          );
        }
      }),
    );
    const submitted = performance.now();
    // The count of DONE jobs (`total`) with one row, not every finished job: the check must not load
    // the leader and this process with a list that grows with the run (it did: 1,000 rows every 200 ms).
    await until(
      'every job DONE',
      async () => {
        const r = (await clients[0]!.call('jobs.list', { state: 'DONE', limit: 1 })) as { total: number };
        return r.total >= jobs + 1;
      },
      600_000,
      200,
    );
    const seconds = (performance.now() - t0) / 1000;
    return { jobs, seconds, perSecond: jobs / seconds, submitSeconds: (submitted - t0) / 1000 };
  } finally {
    await cluster.stop();
  }
}

// Run as a script (run.ts imports measureEndToEnd without running it).
if (process.argv[1]?.endsWith('jobs.bench.js')) {
  const cl = parseCommandLine(
    'jobs.bench',
    'node dist/benchmarks/jobs.bench.js [--jobs N] [--out FILE] (default 400 jobs, benchmarks/results/jobs.json)',
    { jobs: { type: 'string' }, out: { type: 'string' } },
  );
  const r = await measureEndToEnd(cl.whole('jobs', 400));
  process.stdout.write(
    `${r.jobs} jobs \`true\` on two workers: ${r.perSecond.toFixed(1)} jobs/s end to end (all submitted in ${r.submitSeconds.toFixed(2)} s, all DONE after ${r.seconds.toFixed(2)} s)\n`,
  );
  const out = cl.values.out ?? 'benchmarks/results/jobs.json';
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(r, null, 2));
}
