// The drill's steady mixed load, each loop on its own fork of the load PRNG: submitters (paced,
// bounded by JOBS_MAX; some submits are small job arrays `MARKER[1-3]%2`, some depend on an
// earlier job: `-w "ended(ID)"`, or `-w "done(ID)" --dep-never kill`, so that every one ends),
// readers of single jobs, a lister, a controller of the drill's own jobs (kill, requeue, restart,
// hold then release, suspend then resume, modify) and, on a cluster the drill owns, configuration
// upgrades and host closes (each opened again a few seconds later).

import type { Op, OpArgs } from '../../api/protocol.js';
import type { XceClient } from '../../cli/client.js';
import { listOp, showOp, submitOp } from '../linearizability/job-table.js';
import { sleep, type Drill } from './drill-context.js';
import {
  CLIENT_DEADLINE_MS,
  DRILL_ARRAY_CHANCE,
  DRILL_ARRAY_SIZE,
  DRILL_DEPENDENCY_CHANCE,
  DRILL_UNDO_ATTEMPTS_MAX,
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
    const r = rng.next();
    const ids = [...d.h.ackedIds.keys()];
    // An array's elements run the same command; its list row and `jobs show` carry the marker as its name.
    const array = r < DRILL_ARRAY_CHANCE ? `[1-${DRILL_ARRAY_SIZE}]%2` : '';
    const after = r > 1 - DRILL_DEPENDENCY_CHANCE && ids.length > 0 ? ids[ids.length - 1 - rng.int(0, 5)] : undefined;
    const dep =
      after === undefined
        ? {}
        : rng.next() < 0.5
          ? { dependency: `ended(${after})` }
          : { dependency: `done(${after})`, dependencyNever: 'kill' as const };
    const spec = {
      ...(app !== null ? { app } : {}),
      ...dep,
      name: marker + array,
      command: ['sh', '-c', secs === 0 ? 'true' : `sleep ${secs}`],
      cwd: d.t.jobDir,
      stdout: '/dev/null',
      stderr: '/dev/null',
      ...(app !== null && app === d.t.layersProfile && rng.next() < 0.5 ? { preExec: 'true', postExec: 'true' } : {}),
    };
    // Counted apart in the summary: plain submits, arrays, submits with a dependency.
    const what = array !== '' ? 'jobs.submit -J array' : after !== undefined ? 'jobs.submit -w' : 'jobs.submit';
    const t = d.now();
    try {
      const r = (await c.submit(spec)) as { jobId: number };
      d.h.ops.push(submitOp(marker, r.jobId, t, d.now(), w));
      d.h.ack(marker, r.jobId);
      d.h.count(what, 'ok');
    } catch (err) {
      const o = outcomeOf(err);
      d.h.count(what, o.result);
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
      // A whole array's name is its marker (`jobs show` gives it as submitted: MARKER[1-3]%2).
      const name = job.array?.index === null ? job.array.name : job.name;
      // Someone else's job has an id none of ours can have: for the model it is "no job of ours".
      d.h.ops.push(showOp(id, d.ours(name) ? name : null, t, d.now(), client));
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

/** The controller's actions, weighted; hold and suspend are undone a moment later (release, resume). */
const CONTROL_ACTIONS = [
  'jobs.kill',
  'jobs.requeue',
  'jobs.requeue',
  'jobs.restart',
  'jobs.hold',
  'jobs.suspend',
  'jobs.modify',
] as const;

export async function controller(d: Drill, c: XceClient): Promise<void> {
  const rng = d.loadRng.fork();
  while (!d.stopLoad && !d.aborted) {
    await sleep(rng.int(700, 2_000));
    // Only the drill's own jobs: on an attached cluster the others are somebody's work.
    const mine = [...d.h.ackedIds.keys()];
    if (mine.length === 0) continue;
    const some = mine[Math.max(0, mine.length - 1 - rng.int(0, 30))]!;
    const action = rng.pick(CONTROL_ACTIONS);
    // A hold and a modify need a pending job: the newest of the drill's is the likeliest to be one.
    const id = action === 'jobs.hold' || action === 'jobs.modify' ? mine[mine.length - 1]! : some;
    d.h.controlled.add(id);
    const done =
      action === 'jobs.modify'
        ? await tryCall(d, c, action, { id, changes: { env: { DRILL_MODIFIED: String(rng.int(1, 9)) } } })
        : await tryCall(d, c, action, { id });
    // Undone whatever happens to the load meanwhile: a job held or suspended for good would never end.
    if (done && (action === 'jobs.hold' || action === 'jobs.suspend')) {
      await sleep(rng.int(300, 1_500));
      await untilDone(d, c, action === 'jobs.hold' ? 'jobs.release' : 'jobs.resume', { id });
    }
  }
}

/** One call, counted; true when it was applied (ok). */
async function tryCall<O extends Op>(d: Drill, c: XceClient, op: O, args: OpArgs<O>): Promise<boolean> {
  try {
    await c.call(op, args);
    d.h.count(op, 'ok');
    return true;
  } catch (err) {
    const o = outcomeOf(err);
    d.h.count(op, o.result);
    // An uncertain one (timeout, failover) may have been applied.
    return o.uncertain;
  }
}

/**
 * Retries `op` (a release or resume) until it is applied or refused for a reason that says it need
 * not be (the job is not held / not suspended any more: killed, finished, or the first try took).
 * Bounded.
 */
async function untilDone<O extends Op>(d: Drill, c: XceClient, op: O, args: OpArgs<O>): Promise<void> {
  for (let i = 0; i < DRILL_UNDO_ATTEMPTS_MAX && !d.aborted; i++) {
    try {
      await c.call(op, args);
      d.h.count(op, 'ok');
      return;
    } catch (err) {
      const o = outcomeOf(err);
      d.h.count(op, o.result);
      if (!o.uncertain) return;
    }
    await sleep(500);
  }
}

/**
 * On a cluster the drill owns: now and then an administrator closes one of its hosts (with a
 * reason) and opens it again a few seconds later, so jobs pend on the other host meanwhile.
 */
export async function hostCloser(d: Drill): Promise<void> {
  const rng = d.loadRng.fork();
  while (!d.stopLoad && !d.aborted) {
    await sleep(rng.int(6_000, 12_000));
    if (d.stopLoad || d.aborted) return;
    const name = rng.pick(d.t.closableHosts);
    if (await tryCall(d, d.admin, 'hosts.close', { name, reason: 'failover drill' })) {
      await sleep(rng.int(1_500, 4_000));
      await untilDone(d, d.admin, 'hosts.open', { name });
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
    ...(d.t.closableHosts.length > 0 ? [hostCloser(d)] : []),
  ];
}
