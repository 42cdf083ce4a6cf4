// The failover drill: a three-node cluster with two workers on 127.0.0.1 (harness/cluster.ts),
// or, where the machine allows network namespaces, each controller in a namespace of its own on a
// private bridge (harness/netlab.ts) so that partitions are real; a steady mixed load,
// faults on a seeded schedule, and the checks an operator needs to trust a
// failover: nothing acknowledged lost or doubled, records and statuses identical everywhere, and a
// linearizable history of submits and reads. `runDrill` is the whole drill; cli.ts wraps it.
//
// This file runs the phases in order and builds the report; the pieces: drill-types.ts (options,
// report, limits), drill-context.ts (the run's state), load.ts, faults.ts, cluster-waits.ts,
// read-controllers.ts and end-checks.ts. Every name the drill exports is importable from here.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantile } from '../stats.js';
import { checkLinearizable, type Model } from '../linearizability/checker.js';
import { jobTableModel } from '../linearizability/job-table.js';
import { Drill, sleep } from './drill-context.js';
import {
  CHECK_STEPS_MAX,
  CLIENT_DEADLINE_MS,
  type CheckOutcome,
  type DrillOptions,
  type DrillReport,
} from './drill-types.js';
import { endChecks } from './end-checks.js';
import { faultLoop, probeFaults } from './faults.js';
import { openLoadClients, startLoad, type LoadClients } from './load.js';
import { FAULT_KINDS, type FaultKind } from './schedule.js';
import { AttachedCluster, OwnCluster } from './target.js';

export {
  CHECK_STEPS_MAX,
  CLIENT_DEADLINE_MS,
  DRILL_DURATION_S_DEFAULT,
  JOBS_MAX,
  LIST_LIMIT,
  QUIET_LIMIT_MS,
  READ_ATTEMPTS_MAX,
  SUBMITTERS,
  SUBMIT_PACE_MS,
  type CheckOutcome,
  type DrillOptions,
  type DrillProgress,
  type DrillReport,
  type FaultRecord,
} from './drill-types.js';
export { probeFaults } from './faults.js';

type Skipped = Array<{ kind: FaultKind; reason: string }>;

/** What the end of a drill that was not aborted found. */
interface Ending {
  readonly checks: CheckOutcome[];
  readonly lin: DrillReport['linearizability'];
  readonly jobs: number;
}

function sorted(xs: number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function failoverStats(
  xs: readonly number[],
): { n: number; min_ms: number; median_ms: number; p99_ms: number; max_ms: number } | null {
  if (xs.length === 0) return null;
  const s = sorted([...xs]);
  return {
    n: s.length,
    min_ms: s[0]!,
    median_ms: quantile(s, 0.5),
    p99_ms: quantile(s, 0.99),
    max_ms: s[s.length - 1]!,
  };
}

export async function runDrill(opts: DrillOptions): Promise<DrillReport> {
  const d = new Drill(opts);
  const { usable, skipped } = await chooseFaults(d);
  d.log(
    `seed ${opts.seed}, duration ${opts.duration_s} s; fault kinds: ${[...usable].join(', ')}${skipped.length ? `; skipped: ${skipped.map((s) => s.kind).join(', ')}` : ''}`,
  );
  await openTarget(d, usable);
  const onAbort = (): void => {
    d.stopLoad = true;
    for (const id of d.paused) d.t.resume(id);
    if (d.partitioned) d.t.lab?.heal();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (d.t.lab) d.log(`network: ${d.t.lab.describe()}`);
  let ending: Ending = { checks: [], lin: null, jobs: 0 };
  let ticker: NodeJS.Timeout | undefined;
  try {
    d.t.watchWorkers((l) => d.h.noteWorkerLine(l));
    d.admin = await d.t.client('reader', CLIENT_DEADLINE_MS);
    const clients = await openLoadClients(d);
    ticker = setInterval(() => progress(d), 1_000);
    await loadAndFaults(d, clients, usable);
    if (!d.aborted) ending = await finish(d);
  } finally {
    if (ticker) clearInterval(ticker);
    opts.signal?.removeEventListener('abort', onAbort);
    onAbort();
    await d.t.stop();
  }
  return report(d, skipped, ending);
}

/** The fault kinds to use (those the machine or the attached cluster allows, and asked for). */
async function chooseFaults(d: Drill): Promise<{ usable: Set<FaultKind>; skipped: Skipped }> {
  const opts = d.opts;
  let usable: Set<FaultKind>;
  let skipped: Skipped;
  if (opts.attach) {
    d.t = await AttachedCluster.attach(opts.attach);
    usable = new Set(FAULT_KINDS.filter((k) => !d.t.unusable.some((u) => u.kind === k)));
    skipped = [...d.t.unusable];
  } else ({ usable, skipped } = probeFaults());
  if (opts.kinds !== undefined) {
    for (const k of FAULT_KINDS)
      if (!opts.kinds.includes(k) && usable.delete(k)) skipped.push({ kind: k, reason: 'not asked for (--faults)' });
  }
  if (usable.size === 0) {
    await d.t?.stop();
    throw new RangeError(`no fault kind can be used: ${skipped.map((s) => `${s.kind}: ${s.reason}`).join('; ')}`);
  }
  return { usable, skipped };
}

/** Starts the drill's own cluster, or says which attached one it drives. */
async function openTarget(d: Drill, usable: ReadonlySet<FaultKind>): Promise<void> {
  if (!d.opts.attach) {
    const layers = mkdtempSync(join(tmpdir(), 'xce-drill-layers-'));
    d.t = await OwnCluster.start({ netlab: usable.has('partition'), layersDir: layers });
  } else
    d.log(
      `attached to controllers ${d.t.ids.map((id) => `${id}=${d.t.address(id)}`).join(', ')}; jobs named ${d.prefix}*; no configuration upgrades (${d.t.noUpgradeReason})`,
    );
}

function progress(d: Drill): void {
  d.opts.progress?.({
    elapsed_s: d.now() / 1000,
    duration_s: d.opts.duration_s,
    phase: d.phase,
    faults: d.faults.length,
    leaderKills: d.faults.filter((f) => f.kind === 'kill-leader').length,
    submitsOk: d.h.acked.size,
    submitsUncertain: d.h.uncertain.size,
    reads: d.h.total('jobs.show') + d.h.total('jobs.list'),
  });
}

/** The load for the whole duration, faults meanwhile (and past it until `minFaults`), then the load stops. */
async function loadAndFaults(d: Drill, clients: LoadClients, usable: Set<FaultKind>): Promise<void> {
  d.phase = 'load and faults';
  const load = startLoad(d, clients);
  await sleep(1_000); // the load is flowing before the first fault
  await faultLoop(d, usable);
  while (!d.aborted && d.now() < d.opts.duration_s * 1000) await sleep(100);
  d.stopLoad = true;
  d.phase = 'stopping the load';
  await Promise.all(load);
}

/** Failover times, the end checks and the linearizability of the history. */
async function finish(d: Drill): Promise<Ending> {
  noteFailovers(d);
  const checks = await endChecks(d);
  const jobs = d.h.ackedIds.size;
  d.phase = 'checking linearizability';
  const t = performance.now();
  const r = checkLinearizable(jobTableModel as Model<unknown>, d.h.ops, { stepsMax: CHECK_STEPS_MAX });
  const lin = {
    verdict: r.verdict,
    operations: r.operations,
    steps: r.steps,
    detail:
      r.verdict === 'illegal'
        ? r.explanation
        : r.verdict === 'inconclusive'
          ? r.reason
          : `${r.operations} operations linearized in ${r.steps} search steps`,
    check_ms: performance.now() - t,
  };
  checks.push({
    name: 'the history of submits and reads is linearizable',
    ok: r.verdict === 'linearizable',
    detail: lin.detail,
  });
  return { checks, lin, jobs };
}

/** Failover times: from each fault to the first acknowledged submit invoked after it. */
function noteFailovers(d: Drill): void {
  const acks = d.h.ops
    .filter((o) => o.op === 'submit' && o.output !== null && o.complete_ms !== null)
    .sort((a, b) => a.invoke_ms - b.invoke_ms);
  for (const f of d.faults) {
    let best = Infinity;
    for (const o of acks) if (o.invoke_ms >= f.at_ms && o.complete_ms! < best) best = o.complete_ms!;
    f.failover_ms = best === Infinity ? null : best - f.at_ms;
  }
}

function report(d: Drill, skipped: Skipped, { checks, lin, jobs }: Ending): DrillReport {
  const ops: Record<string, Record<string, number>> = {};
  for (const [op, m] of d.h.counts) ops[op] = Object.fromEntries(m);
  const violations = [...d.h.violations, ...checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)];
  return {
    seed: d.opts.seed,
    target: d.t.kind,
    duration_s: d.opts.duration_s,
    elapsed_s: d.now() / 1000,
    aborted: d.aborted,
    faults: d.faults,
    skipped,
    ops,
    jobs: jobs || d.h.ackedIds.size,
    snapshotInstalls: d.snapshotInstalls,
    checks,
    linearizability: lin,
    violations: [...new Set(violations)],
  };
}
