// A leader whose machine dies, played by SIGSTOP (nothing refused or closed: connections to it
// hang): how long the followers keep naming it in their `not-leader` answers, how long until they
// name the new leader, and how long a real worker (`xcecd`) takes to register again. Three real
// `xcectld` on 127.0.0.1 and one worker; each round pauses the leader, polls both followers'
// `GET /challenge?for=worker` every `--poll-ms`, waits for the worker, then continues the old
// leader and lets it rejoin as a follower. Medians over `--rounds`; JSON to `--out`.
//
//   npm run bench:paused-leader -- [--rounds 10] [--poll-ms 20] [--out FILE]

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { median } from '../harness/stats.js';
import { httpGet } from '../daemon/handshake.js';
import { workerHost } from '../testing/e2e.js';

const cl = parseCommandLine(
  'paused-leader.bench',
  'node dist/benchmarks/paused-leader.bench.js [--rounds 10] [--poll-ms 20] [--out FILE]',
  stringOptions('rounds', 'poll-ms', 'out'),
);
const ROUNDS = cl.whole('rounds', 10, 1, 1_000);
const POLL_MS = cl.whole('poll-ms', 20, 1, 1_000);
const OUT = cl.values.out ?? 'benchmarks/results/tmp/paused-leader.json';
/** A phase of a round not over after this long is reported as not reached. */
const PHASE_MS_MAX = 30_000;

const log = (s: string): void => void process.stdout.write(`${s}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Round {
  /** Per follower: ms from the pause until its answer stopped naming the paused leader. */
  readonly staleHint_ms: number[];
  /** Per follower: ms until it named the new leader (or led itself). */
  readonly newLeader_ms: number[];
  /** ms until the worker registered again. */
  readonly worker_ms: number;
}

/** Whom controller `id` names to a worker: its own id when it leads, 0 for none, null when it did not answer. */
async function named(cluster: TestCluster, id: number): Promise<number | null> {
  try {
    const a = await httpGet(cluster.address(id), '/challenge?for=worker', cluster.dialTls(), 1_000);
    if (a.status === 200) return id;
    if (a.status !== 421) return null;
    return (JSON.parse(a.body) as { leader?: { id: number } }).leader?.id ?? 0;
  } catch {
    return null;
  }
}

/** Polls follower `id` until it names a live leader other than `paused`; the two times in ms from `t0`. */
async function watchFollower(cluster: TestCluster, id: number, paused: number, t0: number): Promise<[number, number]> {
  let stale = -1;
  while (performance.now() - t0 < PHASE_MS_MAX) {
    const who = await named(cluster, id);
    const t = performance.now() - t0;
    if (who !== null && who !== paused && stale < 0) stale = t;
    if (who !== null && who !== paused && who !== 0) return [stale, t];
    await sleep(POLL_MS);
  }
  return [stale, -1];
}

function registrations(cluster: TestCluster): number {
  return cluster.workers.get('node01')?.log.filter((l) => l.includes('registered with the leader')).length ?? 0;
}

async function round(cluster: TestCluster): Promise<Round> {
  const leader = await cluster.waitForLeader(PHASE_MS_MAX);
  const followers = [...cluster.ports.keys()].filter((id) => id !== leader);
  // Both followers follow it, and the worker is registered with it.
  for (const id of followers)
    await until(`controller ${id} following ${leader}`, async () => (await named(cluster, id)) === leader);
  await until('the worker registered', () => cluster.workers.get('node01')!.log.some((l) => l.includes('registered')));
  const regs0 = registrations(cluster);
  const t0 = performance.now();
  cluster.pause(leader);
  try {
    const watched = await Promise.all(followers.map((id) => watchFollower(cluster, id, leader, t0)));
    const worker_ms = await until(
      'the worker registered again',
      () => (registrations(cluster) > regs0 ? performance.now() - t0 : undefined),
      PHASE_MS_MAX,
      10,
    ).catch(() => -1);
    return { staleHint_ms: watched.map((w) => w[0]), newLeader_ms: watched.map((w) => w[1]), worker_ms };
  } finally {
    cluster.resume(leader);
    // The old leader rejoins as a follower of the new one before the next round.
    await until(`controller ${leader} back as a follower`, async () => {
      const who = await named(cluster, leader);
      return who !== null && who !== leader && who !== 0;
    }).catch(() => undefined);
  }
}

const ms = (xs: number[]): string => xs.map((x) => (x < 0 ? 'n/r' : String(Math.round(x)))).join(' / ');

const cluster = await TestCluster.start({ controllers: 3, workers: [workerHost('node01')] });
const rounds: Round[] = [];
try {
  for (let i = 0; i < ROUNDS; i++) {
    const r = await round(cluster);
    rounds.push(r);
    log(
      `round ${i + 1}: followers stopped naming the paused leader after ${ms(r.staleHint_ms)} ms, ` +
        `named the new one after ${ms(r.newLeader_ms)} ms; the worker registered again after ${ms([r.worker_ms])} ms`,
    );
    await sleep(1_000);
  }
} finally {
  await cluster.stop();
}
const med = (xs: number[]): number => Math.round(median(xs.filter((x) => x >= 0)));
const summary = {
  rounds: ROUNDS,
  poll_ms: POLL_MS,
  staleHint_ms_median: med(rounds.flatMap((r) => r.staleHint_ms)),
  staleHint_ms_max: Math.round(Math.max(...rounds.flatMap((r) => r.staleHint_ms))),
  newLeader_ms_median: med(rounds.flatMap((r) => r.newLeader_ms)),
  worker_ms_median: med(rounds.map((r) => r.worker_ms)),
  rounds_detail: rounds,
};
log(
  `medians over ${ROUNDS} rounds: stale hint ${summary.staleHint_ms_median} ms (max ${summary.staleHint_ms_max}), ` +
    `new leader named ${summary.newLeader_ms_median} ms, worker registered again ${summary.worker_ms_median} ms`,
);
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(summary, null, 2));
