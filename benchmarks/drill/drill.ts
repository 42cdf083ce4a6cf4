// The failover drill: a three-node cluster with two workers on 127.0.0.1 (test/support/cluster.ts),
// a steady mixed load, faults on a seeded schedule, and the checks an operator needs to trust a
// failover: nothing acknowledged lost or doubled, records and statuses identical everywhere, and a
// linearizable history of submits and reads. `runDrill` is the whole drill; cli.ts wraps it.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, until, type Proc } from '../../test/support/cluster.js';
import type { XceClient } from '../../cli/client.js';
import { quantile } from '../cluster.bench.js';
import { checkLinearizable, type CheckResult, type Model } from '../linearizability/checker.js';
import { jobTableModel, listOp, showOp, submitOp } from '../linearizability/job-table.js';
import { DrillHistory, canonical, outcomeOf } from './history.js';
import { DOWN_MS_MAX, DOWN_MS_MIN, FAULT_KINDS, GAP_MS_MAX, GAP_MS_MIN, PAUSE_MS_MAX, PAUSE_MS_MIN, Prng, pickFault, type FaultKind } from './schedule.js';

export const DRILL_DURATION_S_DEFAULT = 60;
/** Clients submitting jobs; each waits SUBMIT_PACE_MS between submits (bounded load). */
export const SUBMITTERS = 4;
export const SUBMIT_PACE_MS = 350;
/** `jobs.list` returns at most this many jobs (cli/protocol.ts LIST_LIMIT_MAX). */
export const LIST_LIMIT = 10_000;
/** The drill stops submitting when it has this many jobs, so a full list stays complete. */
export const JOBS_MAX = 9_000;
export const CLIENT_DEADLINE_MS = 15_000;
/** Snapshot often so that a wiped node must catch up by InstallSnapshot. */
export const SNAPSHOT_EVERY_ENTRIES = 200;
export const QUIET_LIMIT_MS = 60_000;
export const CHECK_STEPS_MAX = 20_000_000;
/** The profile the drill adds: outer layers that leave a trace, bumped by live upgrades. */
export const DRILL_PROFILE = 'drill-layers';

export interface DrillOptions {
  readonly duration_s: number;
  readonly seed: number;
  /** Event lines (faults, phases). */
  readonly log?: (line: string) => void;
  /** Called about once a second with the running figures. */
  readonly progress?: (p: DrillProgress) => void;
  /** Ctrl-C: stop the load and the faults, skip the checks, stop the cluster. */
  readonly signal?: AbortSignal;
}

export interface DrillProgress {
  readonly elapsed_s: number;
  readonly duration_s: number;
  readonly phase: string;
  readonly faults: number;
  readonly leaderKills: number;
  readonly submitsOk: number;
  readonly submitsUncertain: number;
  readonly reads: number;
}

export interface FaultRecord {
  readonly kind: FaultKind;
  readonly node: number;
  readonly at_ms: number;
  /** From the fault to the first acknowledged submit invoked after it; null when none came. */
  failover_ms: number | null;
  detail?: string;
}

export interface CheckOutcome {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface DrillReport {
  readonly seed: number;
  readonly duration_s: number;
  readonly elapsed_s: number;
  readonly aborted: boolean;
  readonly faults: readonly FaultRecord[];
  readonly skipped: ReadonlyArray<{ kind: FaultKind; reason: string }>;
  readonly ops: Record<string, Record<string, number>>;
  readonly jobs: number;
  readonly snapshotInstalls: number;
  readonly checks: readonly CheckOutcome[];
  readonly linearizability: { verdict: CheckResult['verdict']; operations: number; steps: number; detail: string; check_ms: number } | null;
  readonly violations: readonly string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function drillProfile(dir: string): string {
  return `
  - name: ${DRILL_PROFILE}
    description: "failover drill: outer layers that leave a trace"
    launch_type: serial
    resreq: "select[x86_64]"
    tasks: { min: 1, max: 1 }
    env: { DRILL_VERSION: "1" }
    limits: { runtime: 1h }
    pre_exec: 'echo pre >> ${dir}/layers.log'
    post_exec: 'echo post >> ${dir}/layers.log'
    job_pre_post_exec: allow
`;
}

/** Which fault kinds this machine allows, and why the others are skipped. */
export function probeFaults(): { usable: Set<FaultKind>; skipped: Array<{ kind: FaultKind; reason: string }> } {
  const usable = new Set<FaultKind>(FAULT_KINDS);
  const skipped: Array<{ kind: FaultKind; reason: string }> = [];
  usable.delete('partition');
  const netns = spawnSync('unshare', ['--net', 'true'], { stdio: 'ignore' }).status === 0;
  skipped.push({
    kind: 'partition',
    reason: netns
      ? 'network namespaces can be created here, but the test harness runs every controller on 127.0.0.1 in one namespace (no per-node namespace or veth wiring yet), so a partition between controllers cannot be made'
      : 'this machine does not allow creating network namespaces (unshare --net failed: needs CAP_SYS_ADMIN), and every controller shares 127.0.0.1',
  });
  return { usable, skipped };
}

interface JobRow {
  id: number;
  name: string | null;
  state: string;
  pendReason?: unknown;
}

interface Details {
  id: number;
  name: string | null;
  state: string;
  runNumber: number;
  record: unknown;
  exitCode: number | null;
  pendReason?: unknown;
}

class Drill {
  readonly h = new DrillHistory();
  readonly rng: Prng;
  readonly loadRng: Prng;
  readonly faults: FaultRecord[] = [];
  readonly paused = new Set<Proc>();
  readonly t0 = performance.now();
  stopLoad = false;
  phase = 'starting';
  snapshotInstalls = 0;
  upgrades = 0;
  cluster!: TestCluster;
  admin!: XceClient;

  constructor(readonly opts: DrillOptions) {
    this.rng = new Prng(opts.seed);
    this.loadRng = this.rng.fork();
  }

  now(): number {
    return performance.now() - this.t0;
  }

  log(s: string): void {
    this.opts.log?.(`[${(this.now() / 1000).toFixed(1).padStart(6)} s] ${s}`);
  }

  get aborted(): boolean {
    return this.opts.signal?.aborted === true;
  }

  watchWorker(p: Proc): void {
    let rest = '';
    const on = (d: Buffer): void => {
      const lines = (rest + d.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) this.h.noteWorkerLine(l);
    };
    p.proc.stdout?.on('data', on);
    p.proc.stderr?.on('data', on);
  }

  // ---- load ----

  async submitter(c: XceClient, w: number): Promise<void> {
    const rng = this.loadRng.fork();
    for (let n = 0; !this.stopLoad && !this.aborted; n++) {
      if (this.h.acked.size + this.h.uncertain.size >= JOBS_MAX) {
        await sleep(SUBMIT_PACE_MS);
        continue;
      }
      const marker = `d${this.opts.seed}-w${w}-${n}`;
      const app = rng.next() < 0.5 ? 'python' : DRILL_PROFILE;
      const secs = rng.pick([0, 0, 1, 2, 3]);
      const spec = {
        app,
        name: marker,
        command: ['sh', '-c', secs === 0 ? 'true' : `sleep ${secs}`],
        cwd: this.cluster.dir,
        stdout: '/dev/null',
        stderr: '/dev/null',
        ...(app === DRILL_PROFILE && rng.next() < 0.5 ? { preExec: 'true', postExec: 'true' } : {}),
      };
      const t = this.now();
      try {
        const r = (await c.submit(spec)) as { jobId: number };
        this.h.ops.push(submitOp(marker, r.jobId, t, this.now(), w));
        this.h.ack(marker, r.jobId);
        this.h.count('jobs.submit', 'ok');
      } catch (err) {
        const o = outcomeOf(err);
        this.h.count('jobs.submit', o.result);
        if (o.uncertain) {
          this.h.ops.push(submitOp(marker, null, t, null, w));
          this.h.uncertain.add(marker);
        } else this.h.refused.add(marker);
      }
      await sleep(SUBMIT_PACE_MS);
    }
  }

  maxId(): number {
    let m = 0;
    for (const id of this.h.ackedIds.keys()) if (id > m) m = id;
    return m;
  }

  async reader(c: XceClient, r: number): Promise<void> {
    const rng = this.loadRng.fork();
    const client = 100 + r;
    while (!this.stopLoad && !this.aborted) {
      const top = this.maxId();
      const id = Math.max(1, rng.next() < 0.7 ? top - rng.int(0, 12) : rng.int(1, top + 3));
      const t = this.now();
      try {
        const d = (await c.showJob(id)) as Details;
        this.h.ops.push(showOp(id, d.name, t, this.now(), client));
        this.h.noteRecord(d.id, d.runNumber, d.record, this.now());
        this.h.count('jobs.show', 'ok');
      } catch (err) {
        const o = outcomeOf(err);
        if (o.result === 'not-found') this.h.ops.push(showOp(id, null, t, this.now(), client));
        this.h.count('jobs.show', o.result === 'not-found' ? 'not-found' : o.result);
      }
      await sleep(rng.int(60, 160));
    }
  }

  async lister(c: XceClient): Promise<void> {
    const rng = this.loadRng.fork();
    while (!this.stopLoad && !this.aborted) {
      const t = this.now();
      try {
        const r = (await c.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
        this.h.ops.push(listOp(r.jobs.map((j) => [j.name ?? `(unnamed job ${j.id})`, j.id] as const), t, this.now(), LIST_LIMIT, 99));
        this.h.count('jobs.list', 'ok');
      } catch (err) {
        this.h.count('jobs.list', outcomeOf(err).result);
      }
      await sleep(rng.int(1_500, 3_000));
    }
  }

  async controller(c: XceClient): Promise<void> {
    const rng = this.loadRng.fork();
    while (!this.stopLoad && !this.aborted) {
      await sleep(rng.int(700, 2_000));
      const top = this.maxId();
      if (top === 0) continue;
      const id = Math.max(1, top - rng.int(0, 30));
      const action = rng.pick(['jobs.kill', 'jobs.requeue', 'jobs.requeue', 'jobs.restart'] as const);
      this.h.controlled.add(id);
      try {
        await c.call(action, { id });
        this.h.count(action, 'ok');
      } catch (err) {
        this.h.count(action, outcomeOf(err).result);
      }
    }
  }

  async upgrader(): Promise<void> {
    const rng = this.loadRng.fork();
    while (!this.stopLoad && !this.aborted) {
      await sleep(rng.int(8_000, 15_000));
      if (this.stopLoad || this.aborted) return;
      const version = ++this.upgrades + 1;
      const files = this.cluster.configFiles({ 'applications.yaml': (t) => t.replace('DRILL_VERSION: "1"', `DRILL_VERSION: "${version}"`) });
      try {
        await this.admin.call('config.upgrade', { files });
        this.h.count('config.upgrade', 'ok');
      } catch (err) {
        this.h.count('config.upgrade', outcomeOf(err).result);
      }
    }
  }

  // ---- faults ----

  async healthz(id: number): Promise<{ leader: number; applied: number } | null> {
    const port = this.cluster.ports.get(id);
    if (port === undefined || !this.cluster.controllers.has(id)) return null;
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) });
      return (await r.json()) as { leader: number; applied: number };
    } catch {
      return null;
    }
  }

  /** Every controller up, agreeing on a leader, and within `lag` entries of the leader. */
  async waitHealthy(limit_ms: number, lag = 20): Promise<void> {
    await until('every controller up, agreeing on one leader and caught up', async () => {
      const hs = await Promise.all([...this.cluster.ports.keys()].map((id) => this.healthz(id)));
      if (hs.some((h) => h === null || h.leader === 0 || h.leader !== hs[0]!.leader)) return false;
      const max = Math.max(...hs.map((h) => h!.applied));
      return hs.every((h) => h!.applied >= max - lag);
    }, limit_ms, 100);
  }

  restart(id: number): Proc {
    return this.cluster.startController(id);
  }

  async inject(kind: FaultKind): Promise<void> {
    const leader = await this.cluster.waitForLeader(30_000);
    const followers = [...this.cluster.ports.keys()].filter((id) => id !== leader);
    const rng = this.rng;
    const record = (node: number, detail?: string): FaultRecord => {
      const f: FaultRecord = { kind, node, at_ms: this.now(), failover_ms: null, ...(detail ? { detail } : {}) };
      this.faults.push(f);
      this.log(`${kind} node ${node}${detail ? ` (${detail})` : ''}`);
      return f;
    };
    switch (kind) {
      case 'kill-leader':
      case 'kill-follower': {
        const node = kind === 'kill-leader' ? leader : rng.pick(followers);
        const down = rng.int(DOWN_MS_MIN, DOWN_MS_MAX);
        record(node, `down ${down} ms`);
        await this.cluster.kill(node, 'SIGKILL');
        await sleep(down);
        this.restart(node);
        return;
      }
      case 'pause-node': {
        const node = rng.next() < 0.6 ? leader : rng.pick(followers);
        const p = this.cluster.controllers.get(node)!;
        const pause = rng.int(PAUSE_MS_MIN, PAUSE_MS_MAX);
        record(node, `SIGSTOP for ${pause} ms${node === leader ? ', the leader' : ''}`);
        this.paused.add(p);
        p.proc.kill('SIGSTOP');
        await sleep(pause);
        p.proc.kill('SIGCONT');
        this.paused.delete(p);
        return;
      }
      case 'transfer-leader': {
        record(leader, 'cluster.transferLeader as admin');
        try {
          const r = (await this.admin.call('cluster.transferLeader', {})) as { transferred: boolean; to: number };
          this.h.count('cluster.transferLeader', r.transferred ? 'ok' : 'not-transferred');
        } catch (err) {
          this.h.count('cluster.transferLeader', outcomeOf(err).result);
        }
        return;
      }
      case 'wipe-follower': {
        const node = rng.pick(followers);
        const down = rng.int(DOWN_MS_MIN, DOWN_MS_MAX);
        record(node, 'data directory wiped');
        await this.cluster.kill(node, 'SIGKILL');
        rmSync(join(this.cluster.dir, `controller-${node}`), { recursive: true, force: true });
        await sleep(down);
        const p = this.restart(node);
        await this.waitHealthy(QUIET_LIMIT_MS, 5);
        if (p.log.some((l) => l.includes('installed a snapshot from the leader'))) this.snapshotInstalls++;
        return;
      }
      case 'partition':
        throw new Error('partition faults are not usable on this machine (see probeFaults)');
    }
  }

  async faultLoop(usable: Set<FaultKind>): Promise<void> {
    const end = this.opts.duration_s * 1000;
    while (!this.aborted) {
      const gap = this.rng.int(GAP_MS_MIN, GAP_MS_MAX);
      if (this.now() + gap >= end) break;
      await sleep(gap);
      if (this.aborted) break;
      await this.inject(pickFault(this.rng, usable));
      await this.waitHealthy(QUIET_LIMIT_MS);
    }
  }

  // ---- end checks ----

  /** Quiet: every node up and at the same applied index, twice in a row. */
  async waitQuiet(): Promise<number> {
    let last = -1;
    return until('the controllers to be quiet (same applied index on all three, stable)', async () => {
      const hs = await Promise.all([...this.cluster.ports.keys()].map((id) => this.healthz(id)));
      if (hs.some((h) => h === null || h.leader === 0)) return false;
      const a = hs[0]!.applied;
      if (!hs.every((h) => h!.applied === a && h!.leader === hs[0]!.leader)) return false;
      if (a === last) return a;
      last = a;
      await sleep(300);
      return false;
    }, QUIET_LIMIT_MS, 200);
  }

  async everything(c: XceClient, ids: readonly number[]): Promise<Map<number, Details>> {
    const out = new Map<number, Details>();
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          out.set(id, (await c.call('jobs.show', { id }, { stale: true })) as Details);
        } catch (err) {
          if (outcomeOf(err).result !== 'not-found') throw err;
        }
      }
    }));
    return out;
  }

  async checks(): Promise<CheckOutcome[]> {
    const out: CheckOutcome[] = [];
    const add = (name: string, problems: string[], okDetail: string): void => {
      out.push({ name, ok: problems.length === 0, detail: problems.length === 0 ? okDetail : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}` });
    };
    // Workers' last statuses land on the leader (bounded wait), then everything is quiet.
    this.phase = 'waiting for quiet';
    await until('every status the workers reported to be applied', async () => {
      const l = (await this.admin.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
      const state = new Map(l.jobs.map((j) => [j.id, j.state]));
      return [...this.h.finished.values()].every((f) => state.get(f.jobId) !== 'RUN' || this.h.controlled.has(f.jobId));
    }, QUIET_LIMIT_MS, 500).catch(() => undefined);
    const applied = await this.waitQuiet();
    this.phase = 'reading every controller';
    const ids = [...this.cluster.ports.keys()];
    const views = new Map<number, { list: JobRow[]; details: Map<number, Details> }>();
    for (const id of ids) {
      const c = await this.cluster.client('admin', { controllers: [`127.0.0.1:${this.cluster.ports.get(id)}`], deadline_ms: CLIENT_DEADLINE_MS });
      const list = ((await c.call('jobs.list', { limit: LIST_LIMIT }, { stale: true })) as { jobs: JobRow[] }).jobs;
      const details = await this.everything(c, list.map((j) => j.id));
      views.set(id, { list, details });
      c.close();
    }
    const [first, ...rest] = ids;
    const base = views.get(first!)!;

    // 1. Every acknowledged submit exists exactly once; no job id given twice; no refused one exists.
    const byMarker = new Map<string, number[]>();
    for (const j of base.list) byMarker.set(j.name ?? '', [...(byMarker.get(j.name ?? '') ?? []), j.id]);
    const p1: string[] = [];
    for (const [m, id] of this.h.acked) {
      const got = byMarker.get(m) ?? [];
      if (got.length !== 1 || got[0] !== id) p1.push(`acknowledged ${m} (job ${id}) is present as [${got.join(', ')}]`);
    }
    for (const [m, got] of byMarker) if (got.length > 1) p1.push(`${m} exists ${got.length} times (jobs ${got.join(', ')})`);
    for (const m of this.h.refused) if (byMarker.has(m)) p1.push(`${m} was refused but exists as job ${byMarker.get(m)!.join(', ')}`);
    add('every acknowledged submit exists exactly once', p1, `${this.h.acked.size} acknowledged, ${this.h.uncertain.size} uncertain (${[...this.h.uncertain].filter((m) => byMarker.has(m)).length} of them took effect), ${this.h.refused.size} refused`);

    const p2 = [...this.h.violations.filter((v) => v.includes('given to two'))];
    const idSet = new Set(base.list.map((j) => j.id));
    if (idSet.size !== base.list.length) p2.push(`${base.list.length - idSet.size} duplicate job ids in the job list`);
    add('no job id was given twice', p2, `${base.list.length} jobs, ids unique`);

    // 2. Every dispatch record ever reported is byte-for-byte the same on every controller.
    const p3: string[] = [...this.h.violations.filter((v) => v.includes('dispatch record'))];
    let compared = 0;
    let superseded = 0;
    for (const [key, seen] of this.h.records) {
      const [jobId, run] = key.split(':').map(Number) as [number, number];
      for (const id of ids) {
        const d = views.get(id)!.details.get(jobId);
        if (d === undefined) p3.push(`job ${jobId} (record seen for run ${run}) is missing on controller ${id}`);
        else if (d.runNumber !== run) {
          if (d.runNumber < run) p3.push(`controller ${id} has job ${jobId} on run ${d.runNumber}, but run ${run} was reported`);
          else if (id === first) superseded++;
        } else if (d.record === null) {
          // a requeue after the run cleared it; the run number stays until the next dispatch
          if (id === first) superseded++;
        } else if (canonical(d.record) !== seen.json) p3.push(`job ${jobId} run ${run}: controller ${id}'s dispatch record differs from the one reported at ${seen.seenAt_ms.toFixed(0)} ms`);
        else if (id === first) compared++;
      }
    }
    add('every reported dispatch record is identical on every controller', p3, `${compared} records compared on ${ids.length} controllers (${superseded} superseded by a requeue)`);

    // 3. Every job whose worker finished has its final status.
    const p4: string[] = [];
    let finals = 0;
    for (const f of this.h.finished.values()) {
      for (const id of ids) {
        const d = views.get(id)!.details.get(f.jobId);
        if (d === undefined) {
          p4.push(`job ${f.jobId} finished on a worker but does not exist on controller ${id}`);
          continue;
        }
        if (d.runNumber > f.run || this.h.controlled.has(f.jobId)) continue; // re-run or controlled by the drill
        if (d.state !== 'DONE' && d.state !== 'EXIT') p4.push(`job ${f.jobId} run ${f.run} finished on its worker (${f.kind}) but is ${d.state} on controller ${id}`);
        else if (f.kind === 'finished' && f.exitCode !== null && d.exitCode !== f.exitCode) p4.push(`job ${f.jobId}: worker exit code ${f.exitCode}, controller ${id} says ${d.exitCode}`);
        else if (id === first) finals++;
      }
    }
    add('every job whose worker finished has its final status', p4, `${finals} finished runs checked on ${ids.length} controllers (${this.h.finished.size} reported by the workers)`);

    // 4. The controllers' states are identical once quiet.
    const p5: string[] = [];
    const strip = (d: Details): string => canonical({ ...d, pendReason: undefined });
    for (const id of rest) {
      const v = views.get(id)!;
      if (v.list.length !== base.list.length) p5.push(`controller ${id} has ${v.list.length} jobs, controller ${first} ${base.list.length}`);
      for (const [jid, d] of base.details) {
        const o = v.details.get(jid);
        if (o === undefined || strip(o) !== strip(d)) p5.push(`job ${jid} differs between controllers ${first} and ${id}`);
      }
    }
    add('the controllers\' states are identical once quiet', p5, `${base.list.length} jobs identical (every field of jobs.show but the leader-only pend reason) on ${ids.length} controllers at applied index ${applied}`);
    return out;
  }
}

function sorted(xs: number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function failoverStats(xs: readonly number[]): { n: number; min_ms: number; median_ms: number; p99_ms: number; max_ms: number } | null {
  if (xs.length === 0) return null;
  const s = sorted([...xs]);
  return { n: s.length, min_ms: s[0]!, median_ms: quantile(s, 0.5), p99_ms: quantile(s, 0.99), max_ms: s[s.length - 1]! };
}

export async function runDrill(opts: DrillOptions): Promise<DrillReport> {
  const d = new Drill(opts);
  const { usable, skipped } = probeFaults();
  const layers = mkdtempSync(join(tmpdir(), 'xce-drill-layers-'));
  let checks: CheckOutcome[] = [];
  let lin: DrillReport['linearizability'] = null;
  let jobs = 0;
  let ticker: NodeJS.Timeout | undefined;
  d.log(`seed ${opts.seed}, duration ${opts.duration_s} s; fault kinds: ${[...usable].join(', ')}${skipped.length ? `; skipped: ${skipped.map((s) => s.kind).join(', ')}` : ''}`);
  d.cluster = await TestCluster.start({
    controllers: 3,
    snapshotEvery: SNAPSHOT_EVERY_ENTRIES,
    schedulerGrace_ms: 500,
    edit: {
      'applications.yaml': (t) => `${t.trimEnd()}\n${drillProfile(layers)}`,
      'rbac.yaml': (t) => t.replace('values: [openfoam, mpich]', `values: [openfoam, mpich, ${DRILL_PROFILE}]`),
    },
    workers: ['node01', 'node02'].map((host) => ({ host, slots: 8, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] })),
  });
  const onAbort = (): void => {
    d.stopLoad = true;
    for (const p of d.paused) p.proc.kill('SIGCONT');
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (const p of d.cluster.workers.values()) d.watchWorker(p);
    d.admin = await d.cluster.client('admin', { deadline_ms: CLIENT_DEADLINE_MS });
    const submitters = await Promise.all(Array.from({ length: SUBMITTERS }, () => d.cluster.client('alice', { deadline_ms: CLIENT_DEADLINE_MS })));
    const readers = await Promise.all(Array.from({ length: 2 }, () => d.cluster.client('admin', { deadline_ms: CLIENT_DEADLINE_MS })));
    const listerC = await d.cluster.client('admin', { deadline_ms: CLIENT_DEADLINE_MS });
    const ctlC = await d.cluster.client('alice', { deadline_ms: CLIENT_DEADLINE_MS });
    ticker = setInterval(() => {
      opts.progress?.({
        elapsed_s: d.now() / 1000,
        duration_s: opts.duration_s,
        phase: d.phase,
        faults: d.faults.length,
        leaderKills: d.faults.filter((f) => f.kind === 'kill-leader').length,
        submitsOk: d.h.acked.size,
        submitsUncertain: d.h.uncertain.size,
        reads: d.h.total('jobs.show') + d.h.total('jobs.list'),
      });
    }, 1_000);
    d.phase = 'load and faults';
    const load = [
      ...submitters.map((c, w) => d.submitter(c, w)),
      ...readers.map((c, r) => d.reader(c, r)),
      d.lister(listerC),
      d.controller(ctlC),
      d.upgrader(),
    ];
    await sleep(1_000); // the load is flowing before the first fault
    await d.faultLoop(usable);
    while (!d.aborted && d.now() < opts.duration_s * 1000) await sleep(100);
    d.stopLoad = true;
    d.phase = 'stopping the load';
    await Promise.all(load);
    if (!d.aborted) {
      // Failover times: from each fault to the first acknowledged submit invoked after it.
      const acks = d.h.ops.filter((o) => o.op === 'submit' && o.output !== null && o.complete_ms !== null).sort((a, b) => a.invoke_ms - b.invoke_ms);
      for (const f of d.faults) {
        let best = Infinity;
        for (const o of acks) if (o.invoke_ms >= f.at_ms && o.complete_ms! < best) best = o.complete_ms!;
        f.failover_ms = best === Infinity ? null : best - f.at_ms;
      }
      checks = await d.checks();
      jobs = d.h.ackedIds.size;
      d.phase = 'checking linearizability';
      const t = performance.now();
      const r = checkLinearizable(jobTableModel as Model<unknown>, d.h.ops, { stepsMax: CHECK_STEPS_MAX });
      lin = {
        verdict: r.verdict,
        operations: r.operations,
        steps: r.steps,
        detail: r.verdict === 'illegal' ? r.explanation : r.verdict === 'inconclusive' ? r.reason : `${r.operations} operations linearized in ${r.steps} search steps`,
        check_ms: performance.now() - t,
      };
      checks.push({ name: 'the history of submits and reads is linearizable', ok: r.verdict === 'linearizable', detail: lin.detail });
    }
  } finally {
    if (ticker) clearInterval(ticker);
    opts.signal?.removeEventListener('abort', onAbort);
    onAbort();
    await d.cluster.stop();
    rmSync(layers, { recursive: true, force: true });
  }
  const ops: Record<string, Record<string, number>> = {};
  for (const [op, m] of d.h.counts) ops[op] = Object.fromEntries(m);
  const violations = [...d.h.violations, ...checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)];
  return {
    seed: opts.seed,
    duration_s: opts.duration_s,
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
