// The drill's steady mixed load, each loop on its own fork of the load PRNG: submitters (paced,
// bounded by JOBS_MAX), readers of single jobs, a lister, a controller of the drill's own jobs
// (kill, requeue, restart) and, on a cluster the drill owns, configuration upgrades.

import type { XceClient } from '../../cli/client.js';
import { listOp, showOp, submitOp } from '../linearizability/job-table.js';
import { sleep, type Drill } from './drill-context.js';
import {
  CLIENT_DEADLINE_MS,
  JOBS_MAX,
  LIST_LIMIT,
  SUBMITTERS,
  SUBMIT_PACE_MS,
  type Details,
  type JobRow,
} from './drill-types.js';
import { outcomeOf } from './history.js';

export async function submitter(d: Drill, c: XceClient, w: number): Promise<void> {
  const rng = d.loadRng.fork();
  for (let n = 0; !d.stopLoad && !d.aborted; n++) {
    if (d.h.acked.size + d.h.uncertain.size >= JOBS_MAX) {
      await sleep(SUBMIT_PACE_MS);
      continue;
    }
    const marker = `${d.prefix}w${w}-${n}`;
    const app = rng.pick(d.t.apps);
    const secs = rng.pick([0, 0, 1, 2, 3]);
    const spec = {
      ...(app !== null ? { app } : {}),
      name: marker,
      command: ['sh', '-c', secs === 0 ? 'true' : `sleep ${secs}`],
      cwd: d.t.jobDir,
      stdout: '/dev/null',
      stderr: '/dev/null',
      ...(app !== null && app === d.t.layersProfile && rng.next() < 0.5 ? { preExec: 'true', postExec: 'true' } : {}),
    };
    const t = d.now();
    try {
      const r = (await c.submit(spec)) as { jobId: number };
      d.h.ops.push(submitOp(marker, r.jobId, t, d.now(), w));
      d.h.ack(marker, r.jobId);
      d.h.count('jobs.submit', 'ok');
    } catch (err) {
      const o = outcomeOf(err);
      d.h.count('jobs.submit', o.result);
      if (o.uncertain) {
        d.h.ops.push(submitOp(marker, null, t, null, w));
        d.h.uncertain.add(marker);
      } else d.h.refused.add(marker);
    }
    await sleep(SUBMIT_PACE_MS);
  }
}

function maxId(d: Drill): number {
  let m = 0;
  for (const id of d.h.ackedIds.keys()) if (id > m) m = id;
  return m;
}

export async function reader(d: Drill, c: XceClient, r: number): Promise<void> {
  const rng = d.loadRng.fork();
  const client = 100 + r;
  while (!d.stopLoad && !d.aborted) {
    const top = maxId(d);
    const id = Math.max(1, rng.next() < 0.7 ? top - rng.int(0, 12) : rng.int(1, top + 3));
    const t = d.now();
    try {
      const job = (await c.showJob(id)) as Details;
      // Someone else's job has an id none of ours can have: for the model it is "no job of ours".
      d.h.ops.push(showOp(id, d.ours(job.name) ? job.name : null, t, d.now(), client));
      if (d.ours(job.name)) d.h.noteRecord(job.id, job.runNumber, job.record, d.now());
      d.h.count('jobs.show', 'ok');
    } catch (err) {
      const o = outcomeOf(err);
      if (o.result === 'not-found') d.h.ops.push(showOp(id, null, t, d.now(), client));
      d.h.count('jobs.show', o.result === 'not-found' ? 'not-found' : o.result);
    }
    await sleep(rng.int(60, 160));
  }
}

export async function lister(d: Drill, c: XceClient): Promise<void> {
  const rng = d.loadRng.fork();
  while (!d.stopLoad && !d.aborted) {
    const t = d.now();
    try {
      const r = (await c.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
      const mine = r.jobs.filter((j) => d.ours(j.name)).map((j) => [j.name!, j.id] as const);
      // A full page of the newest jobs holds the newest of ours, however many: that prefix is
      // what it shows (with no one else's jobs, simply every one of ours).
      d.h.ops.push(listOp(mine, t, d.now(), r.jobs.length >= LIST_LIMIT ? mine.length : LIST_LIMIT, 99));
      d.h.count('jobs.list', 'ok');
    } catch (err) {
      d.h.count('jobs.list', outcomeOf(err).result);
    }
    await sleep(rng.int(1_500, 3_000));
  }
}

export async function controller(d: Drill, c: XceClient): Promise<void> {
  const rng = d.loadRng.fork();
  while (!d.stopLoad && !d.aborted) {
    await sleep(rng.int(700, 2_000));
    // Only the drill's own jobs: on an attached cluster the others are somebody's work.
    const mine = [...d.h.ackedIds.keys()];
    if (mine.length === 0) continue;
    const id = mine[Math.max(0, mine.length - 1 - rng.int(0, 30))]!;
    const action = rng.pick(['jobs.kill', 'jobs.requeue', 'jobs.requeue', 'jobs.restart'] as const);
    d.h.controlled.add(id);
    try {
      await c.call(action, { id });
      d.h.count(action, 'ok');
    } catch (err) {
      d.h.count(action, outcomeOf(err).result);
    }
  }
}

export async function upgrader(d: Drill): Promise<void> {
  const rng = d.loadRng.fork();
  while (!d.stopLoad && !d.aborted) {
    await sleep(rng.int(8_000, 15_000));
    if (d.stopLoad || d.aborted) return;
    const version = ++d.upgrades + 1;
    const files = d.t.upgradeFiles(version);
    try {
      await d.admin.call('config.upgrade', { files });
      d.h.count('config.upgrade', 'ok');
    } catch (err) {
      d.h.count('config.upgrade', outcomeOf(err).result);
    }
  }
}

/** The load's clients: SUBMITTERS submitters, two readers, a lister and a controller. */
export interface LoadClients {
  readonly submitters: readonly XceClient[];
  readonly readers: readonly XceClient[];
  readonly lister: XceClient;
  readonly controller: XceClient;
}

export async function openLoadClients(d: Drill): Promise<LoadClients> {
  const submitters = await Promise.all(
    Array.from({ length: SUBMITTERS }, () => d.t.client('submitter', CLIENT_DEADLINE_MS)),
  );
  const readers = await Promise.all(Array.from({ length: 2 }, () => d.t.client('reader', CLIENT_DEADLINE_MS)));
  const listerC = await d.t.client('reader', CLIENT_DEADLINE_MS);
  const ctlC = await d.t.client('submitter', CLIENT_DEADLINE_MS);
  return { submitters, readers, lister: listerC, controller: ctlC };
}

/** Starts every load loop; they run until `d.stopLoad` (each forks the load PRNG as it starts, in this order). */
export function startLoad(d: Drill, c: LoadClients): Array<Promise<void>> {
  return [
    ...c.submitters.map((s, w) => submitter(d, s, w)),
    ...c.readers.map((r, n) => reader(d, r, n)),
    lister(d, c.lister),
    controller(d, c.controller),
    ...(d.t.noUpgradeReason === null ? [upgrader(d)] : []),
  ];
}
