// End to end: jobs `true` submitted, dispatched, run and finished per second on two workers, on a
// three-controller cluster on 127.0.0.1 (real processes). Bounded by --jobs.
//
//   node dist/benchmarks/jobs.bench.js [--jobs 400] [--recent N] [--kill-leader] [--out FILE]
//
// --recent N: each worker starts with N recent-run keys in its state file (of runs that are not
// this run's), as a worker that has run that many jobs before has (at most 16,384 are kept).
// --kill-leader: the leader is SIGKILLed once half the jobs are submitted; the clients follow the
// new leader (their retries keep their request ids, so an acknowledged submit is never doubled).
//
// After every run, outside the timed window, each acknowledged job is checked (checkJobs): DONE
// with exit code 0, a frozen dispatch record, run once (no requeue), one job per acknowledgement;
// and the live controllers' states are identical (the SHA-256 of their snapshot encodings at the
// same applied index, `/healthz?digest=1`). A failed check fails the bench.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { XceClient } from '../cli/client.js';
import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine } from '../harness/cli-args.js';
import { workerHost } from '../testing/e2e.js';
import { cpuOfTree, cpuSince } from './proc-cpu.js';

/** CPU ms per job of each process over the timed window (from /proc; the launchers' children are the jobs). */
export interface CpuPerJob {
  readonly leader: number;
  readonly followers: number[];
  /** This process: the 16 clients and the harness. */
  readonly bench: number;
  readonly xcecd: number[];
  readonly launcher: number[];
  /** Each launcher's native spawner xce-spawn (0: none, Node's spawn). */
  readonly spawner: number[];
  /** The job processes each launcher (or its xce-spawn) started and reaped. */
  readonly jobProcesses: number[];
  readonly total: number;
}

/** Each process's share of `used` (ms over the window), per job, by its role in `cluster`. */
async function cpuPerJob(cluster: TestCluster, used: ReturnType<typeof cpuSince>, jobs: number): Promise<CpuPerJob> {
  const per = (ms: number): number => Math.round((ms / jobs) * 1000) / 1000;
  const own = (pid: number | undefined): number => (pid === undefined ? 0 : (used.get(pid)?.own_ms ?? 0));
  const leaderId = await cluster.leader();
  const followers = [...cluster.controllers].filter(([id]) => id !== leaderId).map(([, p]) => per(own(p.proc.pid)));
  const workerPids = [...cluster.workers.values()].map((p) => p.proc.pid);
  const launchers = workerPids.map((w) => [...used].find(([, u]) => u.ppid === w)?.[0]);
  // A launcher's one long-lived child, if any: xce-spawn (the jobs have ended by the last snapshot).
  const spawners = launchers.map((l) => (l === undefined ? undefined : [...used].find(([, u]) => u.ppid === l)?.[0]));
  const reaped = (pid: number | undefined): number => (pid === undefined ? 0 : (used.get(pid)?.children_ms ?? 0));
  const r = {
    leader: per(own(cluster.controllers.get(leaderId)?.proc.pid)),
    followers,
    bench: per(own(process.pid)),
    xcecd: workerPids.map((pid) => per(own(pid))),
    launcher: launchers.map((pid) => per(own(pid))),
    spawner: spawners.map((pid) => per(own(pid))),
    jobProcesses: launchers.map((pid, i) => per(reaped(pid) + reaped(spawners[i]))),
  };
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  const total = r.leader + r.bench + sum([...r.followers, ...r.xcecd, ...r.launcher, ...r.spawner, ...r.jobProcesses]);
  return { ...r, total: Math.round(total * 1000) / 1000 };
}

/** The leader's worker frames so far, `in <type>` / `out <type>` (xce_worker_frames_total; none from a build without it). */
async function workerFrames(cluster: TestCluster): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const text = await cluster.getText(await cluster.leader(), '/metrics');
  for (const m of text.matchAll(/^xce_worker_frames_total\{direction="(in|out)",type="([a-z-]+)"[^}]*\} (\d+)$/gm))
    out.set(`${m[1]} ${m[2]}`, Number(m[3]));
  return out;
}

/** Worker frames per job over the window, by `in <type>` / `out <type>`, and in all each way. */
function framesPerJob(before: Map<string, number>, after: Map<string, number>, jobs: number): Record<string, number> {
  const r: Record<string, number> = { in: 0, out: 0 };
  for (const [key, n] of after) {
    const per = (n - (before.get(key) ?? 0)) / jobs;
    r[key] = Math.round(per * 1000) / 1000;
    r[key.startsWith('in ') ? 'in' : 'out']! += per;
  }
  r['in'] = Math.round(r['in']! * 1000) / 1000;
  r['out'] = Math.round(r['out']! * 1000) / 1000;
  return r;
}

const HOSTS = ['node01', 'node02'];
const SLOTS = 64;

/** Restarts each worker with `n` recent-run keys in its state file (keys of runs that are not this run's). */
async function seedRecent(cluster: TestCluster, n: number): Promise<void> {
  const recent = Array.from({ length: n }, (_, i) => `${900_000_000 + i}.1`);
  for (const host of HOSTS) {
    await cluster.killWorker(host, 'SIGTERM');
    const file = join(cluster.dir, `xcecd-${host}`, 'xcecd-state.json');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ version: 1, host, statuses: [], runs: [], recent }));
    cluster.startWorker(host, workerHost(host, SLOTS));
  }
}

/** The warm-up: a job submitted (again, while the workers register) until one has run to DONE. */
async function warmUp(cluster: TestCluster, client: Awaited<ReturnType<TestCluster['client']>>): Promise<void> {
  await until(
    'both workers registered',
    async () => {
      const r = (await client.submit({ command: ['true'], resreq: 'select[ib]', cwd: cluster.dir })) as {
        jobId: number;
      };
      return until(
        `warm-up job ${r.jobId}`,
        async () => ((await client.showJob(r.jobId)) as { state: string }).state === 'DONE',
        20_000,
        50,
      );
    },
    30_000,
  );
}

/** What checkJobs found: jobs checked, and the applied index at which the live controllers' digests matched. */
export interface JobsChecked {
  readonly jobs: number;
  readonly controllers: number;
  readonly appliedIndex: number;
}

/**
 * Every acknowledged job DONE (exit 0) with its dispatch record, run once, one per acknowledgement;
 * then the live controllers' states compared at one applied index. Throws saying what is wrong.
 */
async function checkJobs(cluster: TestCluster, client: XceClient, ids: readonly number[]): Promise<JobsChecked> {
  if (new Set(ids).size !== ids.length) throw new Error(`${ids.length - new Set(ids).size} job ids acknowledged twice`);
  const wrong: string[] = [];
  for (const id of ids) {
    const j = (await client.showJob(id)) as {
      state: string;
      exitCode: number | null;
      record: unknown;
      runNumber: number;
    };
    if (j.state !== 'DONE' || j.exitCode !== 0) wrong.push(`job ${id}: ${j.state}, exit code ${j.exitCode}`);
    else if (j.record === null || j.record === undefined) wrong.push(`job ${id}: DONE without a dispatch record`);
    else if (j.runNumber !== 1) wrong.push(`job ${id}: run ${j.runNumber} times`);
    if (wrong.length >= 10) break;
  }
  if (wrong.length > 0) throw new Error(`jobs not as they should be:\n  ${wrong.join('\n  ')}`);
  const live = [...cluster.controllers.keys()];
  let last = '';
  for (let attempt = 0; attempt < 50; attempt++) {
    const reads = await Promise.all(
      live.map((id) => cluster.getJson<{ applied: number; digest: string }>(id, '/healthz?digest=1', 10_000)),
    );
    const applied = new Set(reads.map((r) => r.applied));
    const digests = new Set(reads.map((r) => r.digest));
    if (applied.size === 1 && digests.size === 1)
      return { jobs: ids.length, controllers: live.length, appliedIndex: reads[0]!.applied };
    if (applied.size === 1)
      throw new Error(`controllers ${live.join(', ')} differ at applied index ${reads[0]!.applied}`);
    last = reads.map((r, i) => `controller ${live[i]} at ${r.applied}`).join(', ');
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the live controllers never reached one applied index (last: ${last})`);
}

/**
 * The 16 clients submit `jobs` jobs `true` between them; with `killLeader`, the leader is SIGKILLed
 * just before the submit of the middle job (the clients follow the new leader). The ids acknowledged.
 */
async function submitAll(
  cluster: TestCluster,
  clients: readonly XceClient[],
  jobs: number,
  killLeader: boolean,
  t0: number,
): Promise<{ ids: number[]; killed: { controller: number; at_s: number } | null }> {
  let next = 0;
  const ids: number[] = [];
  let killed: { controller: number; at_s: number } | null = null;
  const killAt = killLeader ? Math.floor(jobs / 2) : -1;
  await Promise.all(
    clients.map(async (c) => {
      while (next < jobs) {
        next++;
        if (next === killAt) {
          const controller = await cluster.waitForLeader();
          killed = { controller, at_s: (performance.now() - t0) / 1000 };
          await cluster.kill(controller, 'SIGKILL');
        }
        ids.push(
          ((await c.submit({ command: ['true'], resreq: 'select[ib]', cwd: cluster.dir })) as { jobId: number }).jobId,
        );
      }
    }),
  );
  return { ids, killed };
}

export async function measureEndToEnd(
  jobs: number,
  recent = 0,
  killLeader = false,
): Promise<{
  jobs: number;
  seconds: number;
  perSecond: number;
  submitSeconds: number;
  cpuPerJob_ms: CpuPerJob;
  /** The leader's worker frames per job (`in`/`out` in all, and by type); empty without the metric. */
  workerFramesPerJob: Record<string, number>;
  /** With --kill-leader: the controller killed, and when (s from the first submit). */
  killed: { readonly controller: number; readonly at_s: number } | null;
  checked: JobsChecked;
}> {
  const cluster = await TestCluster.start({
    controllers: 3,
    schedulerGrace_ms: 200,
    workers: HOSTS.map((host) => workerHost(host, SLOTS)),
  });
  try {
    if (recent > 0) await seedRecent(cluster, recent);
    const clients = await Promise.all(Array.from({ length: 16 }, () => cluster.client('alice')));
    await warmUp(cluster, clients[0]!);
    const frames0 = await workerFrames(cluster);
    const cpu0 = cpuOfTree();
    const t0 = performance.now();
    const { ids, killed } = await submitAll(cluster, clients, jobs, killLeader, t0);
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
    const cpuPerJob_ms = await cpuPerJob(cluster, cpuSince(cpu0, cpuOfTree()), jobs);
    // Across a kill the counters before and after are two leaders' own: not comparable, not shown.
    const workerFramesPerJob = killed === null ? framesPerJob(frames0, await workerFrames(cluster), jobs) : {};
    const submitSeconds = (submitted - t0) / 1000;
    const checked = await checkJobs(cluster, clients[0]!, ids);
    return {
      jobs,
      seconds,
      perSecond: jobs / seconds,
      submitSeconds,
      cpuPerJob_ms,
      workerFramesPerJob,
      killed,
      checked,
    };
  } finally {
    await cluster.stop();
  }
}

// Run as a script (run.ts imports measureEndToEnd without running it).
if (process.argv[1]?.endsWith('jobs.bench.js')) {
  const cl = parseCommandLine(
    'jobs.bench',
    'node dist/benchmarks/jobs.bench.js [--jobs N] [--recent N] [--kill-leader] [--out FILE] (default 400 jobs, benchmarks/results/tmp/jobs.json, ignored by git)',
    {
      jobs: { type: 'string' },
      recent: { type: 'string' },
      'kill-leader': { type: 'boolean' },
      out: { type: 'string' },
    },
  );
  const r = await measureEndToEnd(cl.whole('jobs', 400), cl.whole('recent', 0, 0), cl.values['kill-leader'] === true);
  process.stdout.write(
    `${r.jobs} jobs \`true\` on two workers: ${r.perSecond.toFixed(1)} jobs/s end to end (all submitted in ${r.submitSeconds.toFixed(2)} s, all DONE after ${r.seconds.toFixed(2)} s)\n` +
      `CPU ms per job over that window: ${JSON.stringify(r.cpuPerJob_ms)}\n` +
      `the leader's worker frames per job: ${JSON.stringify(r.workerFramesPerJob)}\n` +
      (r.killed === null
        ? ''
        : `leader (controller ${r.killed.controller}) killed ${r.killed.at_s.toFixed(2)} s after the first submit\n`) +
      `checked: all ${r.checked.jobs} jobs DONE with exit code 0, a dispatch record and one run; ${r.checked.controllers} live controllers identical at applied index ${r.checked.appliedIndex}\n`,
  );
  const out = cl.values.out ?? 'benchmarks/results/tmp/jobs.json';
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(r, null, 2));
}
