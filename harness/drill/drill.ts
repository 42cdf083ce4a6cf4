// The failover drill: a three-node cluster with two workers on 127.0.0.1 (harness/cluster.ts),
// or, where the machine allows network namespaces, each controller in a namespace of its own on a
// private bridge (harness/netlab.ts) so that partitions are real; a steady mixed load,
// faults on a seeded schedule, and the checks an operator needs to trust a
// failover: nothing acknowledged lost or doubled, records and statuses identical everywhere, and a
// linearizable history of submits and reads. `runDrill` is the whole drill; cli.ts wraps it.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../cluster.js';
import { probeNetLab } from '../netlab.js';
import type { XceClient } from '../../cli/client.js';
import { quantile } from '../stats.js';
import { checkLinearizable, type CheckResult, type Model } from '../linearizability/checker.js';
import { jobTableModel, listOp, showOp, submitOp } from '../linearizability/job-table.js';
import { DrillHistory, canonical, outcomeOf } from './history.js';
import { AttachedCluster, OwnCluster, type AttachOptions, type DrillTarget, type Health } from './target.js';
import {
  DOWN_MS_MAX,
  DOWN_MS_MIN,
  FAULT_KINDS,
  GAP_MS_MAX,
  GAP_MS_MIN,
  PARTITION_MS_MAX,
  PARTITION_MS_MIN,
  PAUSE_MS_MAX,
  PAUSE_MS_MIN,
  Prng,
  pickFault,
  type FaultKind,
} from './schedule.js';

export const DRILL_DURATION_S_DEFAULT = 60;
/** Clients submitting jobs; each waits SUBMIT_PACE_MS between submits (bounded load). */
export const SUBMITTERS = 4;
export const SUBMIT_PACE_MS = 350;
/** `jobs.list` returns at most this many jobs (api/protocol.ts LIST_LIMIT_MAX). */
export const LIST_LIMIT = 10_000;
/** The drill stops submitting when it has this many jobs, so a full list stays complete. */
export const JOBS_MAX = 9_000;
export const CLIENT_DEADLINE_MS = 15_000;
export const QUIET_LIMIT_MS = 60_000;
/** Readings of every controller before the state check gives up waiting for one applied index. */
export const READ_ATTEMPTS_MAX = 5;
export const CHECK_STEPS_MAX = 20_000_000;

export interface DrillOptions {
  readonly duration_s: number;
  readonly seed: number;
  /** Event lines (faults, phases). */
  readonly log?: (line: string) => void;
  /** Called about once a second with the running figures. */
  readonly progress?: (p: DrillProgress) => void;
  /** Ctrl-C: stop the load and the faults, skip the checks, stop the cluster. */
  readonly signal?: AbortSignal;
  /** Only these fault kinds (default: every kind this machine allows). */
  readonly kinds?: readonly FaultKind[];
  /**
   * Go on past the duration until this many faults were injected (default 0). How many fit in a
   * duration depends on how fast the machine is; a test that needs a count asks for it here.
   */
  readonly minFaults?: number;
  /** Drive a running cluster instead of starting one (`xceadmin drill --attach`). */
  readonly attach?: AttachOptions;
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
  /** From the end of the fault (heal, resume, restart) until every controller is up, agrees on one leader and is caught up. */
  recovered_ms?: number;
  detail?: string;
  /** The shape of a partition: leader-minority, isolate-leader, leader-from-one, isolate-follower. */
  variant?: string;
}

export interface CheckOutcome {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** Not checked here (the detail says why); `ok` is true so it is no violation. */
  readonly skipped?: boolean;
}

export interface DrillReport {
  readonly seed: number;
  /** `own`: a cluster the drill started; `attached`: a running one (`xceadmin drill --attach`). */
  readonly target: 'own' | 'attached';
  readonly duration_s: number;
  readonly elapsed_s: number;
  readonly aborted: boolean;
  readonly faults: readonly FaultRecord[];
  readonly skipped: ReadonlyArray<{ kind: FaultKind; reason: string }>;
  readonly ops: Record<string, Record<string, number>>;
  readonly jobs: number;
  readonly snapshotInstalls: number;
  readonly checks: readonly CheckOutcome[];
  readonly linearizability: {
    verdict: CheckResult['verdict'];
    operations: number;
    steps: number;
    detail: string;
    check_ms: number;
  } | null;
  readonly violations: readonly string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Which fault kinds this machine allows, and why the others are skipped. */
export function probeFaults(): { usable: Set<FaultKind>; skipped: Array<{ kind: FaultKind; reason: string }> } {
  const usable = new Set<FaultKind>(FAULT_KINDS);
  const skipped: Array<{ kind: FaultKind; reason: string }> = [];
  const lab = probeNetLab();
  if (!lab.ok) {
    usable.delete('partition');
    skipped.push({
      kind: 'partition',
      reason: `${lab.reason}; without a namespace per controller they all share 127.0.0.1 and there is no link between two of them to cut`,
    });
  }
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
  readonly paused = new Set<number>();
  readonly t0 = performance.now();
  stopLoad = false;
  phase = 'starting';
  snapshotInstalls = 0;
  upgrades = 0;
  partitioned = false;
  t!: DrillTarget;
  admin!: XceClient;
  /** Every job name the drill gives starts with this: its jobs among anyone else's. */
  readonly prefix: string;

  constructor(readonly opts: DrillOptions) {
    this.rng = new Prng(opts.seed);
    this.loadRng = this.rng.fork();
    // The run's start time keeps two runs with one seed apart on a cluster that outlives them.
    this.prefix = `d${opts.seed}-${Date.now().toString(36)}-`;
  }

  /** Whether a job name is one of this run's markers. */
  ours(name: string | null | undefined): name is string {
    return typeof name === 'string' && name.startsWith(this.prefix);
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

  // ---- load ----

  async submitter(c: XceClient, w: number): Promise<void> {
    const rng = this.loadRng.fork();
    for (let n = 0; !this.stopLoad && !this.aborted; n++) {
      if (this.h.acked.size + this.h.uncertain.size >= JOBS_MAX) {
        await sleep(SUBMIT_PACE_MS);
        continue;
      }
      const marker = `${this.prefix}w${w}-${n}`;
      const app = rng.pick(this.t.apps);
      const secs = rng.pick([0, 0, 1, 2, 3]);
      const spec = {
        ...(app !== null ? { app } : {}),
        name: marker,
        command: ['sh', '-c', secs === 0 ? 'true' : `sleep ${secs}`],
        cwd: this.t.jobDir,
        stdout: '/dev/null',
        stderr: '/dev/null',
        ...(app !== null && app === this.t.layersProfile && rng.next() < 0.5
          ? { preExec: 'true', postExec: 'true' }
          : {}),
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
        // Someone else's job has an id none of ours can have: for the model it is "no job of ours".
        this.h.ops.push(showOp(id, this.ours(d.name) ? d.name : null, t, this.now(), client));
        if (this.ours(d.name)) this.h.noteRecord(d.id, d.runNumber, d.record, this.now());
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
        const mine = r.jobs.filter((j) => this.ours(j.name)).map((j) => [j.name!, j.id] as const);
        // A full page of the newest jobs holds the newest of ours, however many: that prefix is
        // what it shows (with no one else's jobs, simply every one of ours).
        this.h.ops.push(listOp(mine, t, this.now(), r.jobs.length >= LIST_LIMIT ? mine.length : LIST_LIMIT, 99));
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
      // Only the drill's own jobs: on an attached cluster the others are somebody's work.
      const mine = [...this.h.ackedIds.keys()];
      if (mine.length === 0) continue;
      const id = mine[Math.max(0, mine.length - 1 - rng.int(0, 30))]!;
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
      const files = this.t.upgradeFiles(version);
      try {
        await this.admin.call('config.upgrade', { files });
        this.h.count('config.upgrade', 'ok');
      } catch (err) {
        this.h.count('config.upgrade', outcomeOf(err).result);
      }
    }
  }

  // ---- faults ----

  healthz(id: number): Promise<Health | null> {
    return this.t.health(id);
  }

  /** The leader, as it and another controller agree. */
  async waitForLeader(limit_ms: number): Promise<number> {
    return until(
      'a leader',
      async () => {
        for (const id of this.t.ids) {
          const h = await this.healthz(id);
          if (h === null || h.leader === 0 || !this.t.ids.includes(h.leader)) continue;
          if ((await this.healthz(h.leader))?.leader === h.leader) return h.leader;
        }
        return undefined;
      },
      limit_ms,
      50,
    );
  }

  /** Every controller up, agreeing on a leader, and within `lag` entries of the leader. */
  async waitHealthy(limit_ms: number, lag = 20): Promise<void> {
    await until(
      'every controller up, agreeing on one leader and caught up',
      async () => {
        const hs = await Promise.all([...this.t.ids].map((id) => this.healthz(id)));
        if (hs.some((h) => h === null || h.leader === 0 || h.leader !== hs[0]!.leader)) return false;
        const max = Math.max(...hs.map((h) => h!.applied));
        return hs.every((h) => h!.applied >= max - lag);
      },
      limit_ms,
      100,
    );
  }

  async inject(kind: FaultKind): Promise<void> {
    const leader = await this.waitForLeader(30_000);
    const followers = [...this.t.ids].filter((id) => id !== leader);
    const rng = this.rng;
    const record = (node: number, detail?: string, variant?: string): FaultRecord => {
      const f: FaultRecord = {
        kind,
        node,
        at_ms: this.now(),
        failover_ms: null,
        ...(detail ? { detail } : {}),
        ...(variant ? { variant } : {}),
      };
      this.faults.push(f);
      this.log(`${kind} node ${node}${detail ? ` (${detail})` : ''}`);
      return f;
    };
    switch (kind) {
      case 'kill-leader':
      case 'kill-follower': {
        const node = kind === 'kill-leader' ? leader : rng.pick(followers);
        const down = rng.int(DOWN_MS_MIN, DOWN_MS_MAX);
        record(node, this.t.kind === 'own' ? `down ${down} ms` : 'SIGKILL; its supervisor restarts it');
        await this.t.kill(node);
        if (this.t.kind === 'own') await sleep(down);
        await this.t.restart(node, false);
        return;
      }
      case 'pause-node': {
        const node = rng.next() < 0.6 ? leader : rng.pick(followers);
        const pause = rng.int(PAUSE_MS_MIN, PAUSE_MS_MAX);
        record(node, `SIGSTOP for ${pause} ms${node === leader ? ', the leader' : ''}`);
        this.paused.add(node);
        this.t.pause(node);
        await sleep(pause);
        this.t.resume(node);
        this.paused.delete(node);
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
        await this.t.kill(node);
        await sleep(down);
        const p = await this.t.restart(node, true);
        await this.waitHealthy(QUIET_LIMIT_MS, 5);
        if (p?.log.some((l) => l.includes('installed a snapshot from the leader'))) this.snapshotInstalls++;
        return;
      }
      case 'partition': {
        const lab = this.t.lab;
        if (lab === null)
          throw new Error('partition faults need the controllers in network namespaces (see probeFaults)');
        const span = rng.int(PARTITION_MS_MIN, PARTITION_MS_MAX);
        const shape = rng.pick([
          'leader-minority',
          'leader-minority',
          'isolate-leader',
          'isolate-leader',
          'leader-from-one',
          'isolate-follower',
        ] as const);
        const other = rng.pick(followers);
        switch (shape) {
          case 'leader-minority':
            // The old leader still hears its clients but no peer: it must step down, and
            // nothing it says afterwards may be a stale read or a lost write.
            record(leader, `cut from both peers for ${span} ms, clients still reach it`, shape);
            for (const f of followers) lab.cut(leader, f);
            break;
          case 'isolate-leader':
            record(leader, `isolated from everyone for ${span} ms`, shape);
            lab.isolate(leader);
            break;
          case 'leader-from-one':
            record(leader, `cut from follower ${other} for ${span} ms`, shape);
            lab.cut(leader, other);
            break;
          case 'isolate-follower':
            record(other, `follower isolated from everyone for ${span} ms`, shape);
            lab.isolate(other);
            break;
        }
        this.partitioned = true;
        await sleep(span);
        lab.heal();
        this.partitioned = false;
        return;
      }
    }
  }

  async faultLoop(usable: Set<FaultKind>): Promise<void> {
    const end = this.opts.duration_s * 1000;
    while (!this.aborted) {
      const gap = this.rng.int(GAP_MS_MIN, GAP_MS_MAX);
      if (this.now() + gap >= end && this.faults.length >= (this.opts.minFaults ?? 0)) break;
      await sleep(gap);
      if (this.aborted) break;
      const n = this.faults.length;
      await this.inject(pickFault(this.rng, usable));
      const ended = this.now();
      await this.waitHealthy(QUIET_LIMIT_MS);
      const f = this.faults[n];
      if (f !== undefined) f.recovered_ms = this.now() - ended;
    }
  }

  // ---- end checks ----

  /** Quiet: every node up and at the same applied index, twice in a row. */
  async waitQuiet(): Promise<number> {
    let last = -1;
    return until(
      'the controllers to be quiet (same applied index on all three, stable)',
      async () => {
        const hs = await Promise.all([...this.t.ids].map((id) => this.healthz(id)));
        if (hs.some((h) => h === null || h.leader === 0)) return false;
        const a = hs[0]!.applied;
        if (!hs.every((h) => h!.applied === a && h!.leader === hs[0]!.leader)) return false;
        if (a === last) return a;
        last = a;
        await sleep(300);
        return false;
      },
      QUIET_LIMIT_MS,
      200,
    );
  }

  async everything(c: XceClient, ids: readonly number[]): Promise<Map<number, Details>> {
    const out = new Map<number, Details>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          try {
            out.set(id, (await c.call('jobs.show', { id }, { stale: true })) as Details);
          } catch (err) {
            if (outcomeOf(err).result !== 'not-found') throw err;
          }
        }
      }),
    );
    return out;
  }

  workerCheck(
    ids: readonly number[],
    views: ReadonlyMap<number, { list: JobRow[]; details: Map<number, Details> }>,
    first: number,
    add: (name: string, problems: string[], okDetail: string) => void,
  ): void {
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
        if (d.state !== 'DONE' && d.state !== 'EXIT')
          p4.push(
            `job ${f.jobId} run ${f.run} finished on its worker (${f.kind}) but is ${d.state} on controller ${id}`,
          );
        else if (f.kind === 'finished' && f.exitCode !== null && d.exitCode !== f.exitCode)
          p4.push(`job ${f.jobId}: worker exit code ${f.exitCode}, controller ${id} says ${d.exitCode}`);
        else if (id === first) finals++;
      }
    }
    add(
      'every job whose worker finished has its final status',
      p4,
      `${finals} finished runs checked on ${ids.length} controllers (${this.h.finished.size} reported by the workers)`,
    );
  }

  async checks(): Promise<CheckOutcome[]> {
    const out: CheckOutcome[] = [];
    const add = (name: string, problems: string[], okDetail: string): void => {
      out.push({
        name,
        ok: problems.length === 0,
        detail: problems.length === 0 ? okDetail : `${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`,
      });
    };
    // Workers' last statuses land on the leader (bounded wait), then everything is quiet.
    this.phase = 'waiting for quiet';
    await until(
      'every status the workers reported to be applied',
      async () => {
        const l = (await this.admin.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
        const state = new Map(l.jobs.map((j) => [j.id, j.state]));
        return [...this.h.finished.values()].every(
          (f) => state.get(f.jobId) !== 'RUN' || this.h.controlled.has(f.jobId),
        );
      },
      QUIET_LIMIT_MS,
      500,
    ).catch(() => undefined);
    // The last jobs still run (`sleep 3`) or wait for a slot: a status landing between reading one
    // controller and the next would look like a difference. Bounded: a job may pend for good.
    this.phase = "waiting for the drill's jobs to finish";
    await until(
      'every job of the drill to finish',
      async () => {
        const l = (await this.admin.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
        return l.jobs.every((j) => !this.ours(j.name) || j.state === 'DONE' || j.state === 'EXIT');
      },
      QUIET_LIMIT_MS,
      500,
    ).catch(() => this.log("some of the drill's jobs still run or pend; comparing the controllers anyway"));
    this.phase = 'reading every controller';
    const ids = [...this.t.ids];
    // Every controller is read at one applied index, the same before and after the reading; if
    // anything was applied meanwhile, read again (bounded).
    let applied = 0;
    let views = new Map<number, { list: JobRow[]; details: Map<number, Details> }>();
    let digests: Array<Health | null> = [];
    for (let attempt = 1; ; attempt++) {
      applied = await this.waitQuiet();
      views = new Map();
      for (const id of ids) {
        const c = await this.t.client('reader', CLIENT_DEADLINE_MS, [this.t.address(id)]);
        const list = (
          (await c.call('jobs.list', { limit: LIST_LIMIT }, { stale: true })) as { jobs: JobRow[] }
        ).jobs.filter((j) => this.ours(j.name));
        const details = await this.everything(
          c,
          list.map((j) => j.id),
        );
        views.set(id, { list, details });
        c.close();
      }
      const after = await Promise.all(ids.map((id) => this.t.health(id, true)));
      digests = after;
      if (after.every((h) => h?.applied === applied)) break;
      if (attempt >= READ_ATTEMPTS_MAX) {
        this.log(
          `the controllers kept applying while being read (${READ_ATTEMPTS_MAX} attempts); comparing the last reading`,
        );
        break;
      }
      this.log(`applied index moved from ${applied} while reading the controllers; reading again`);
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
    for (const [m, got] of byMarker)
      if (got.length > 1) p1.push(`${m} exists ${got.length} times (jobs ${got.join(', ')})`);
    for (const m of this.h.refused)
      if (byMarker.has(m)) p1.push(`${m} was refused but exists as job ${byMarker.get(m)!.join(', ')}`);
    add(
      'every acknowledged submit exists exactly once',
      p1,
      `${this.h.acked.size} acknowledged, ${this.h.uncertain.size} uncertain (${[...this.h.uncertain].filter((m) => byMarker.has(m)).length} of them took effect), ${this.h.refused.size} refused`,
    );

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
          if (d.runNumber < run)
            p3.push(`controller ${id} has job ${jobId} on run ${d.runNumber}, but run ${run} was reported`);
          else if (id === first) superseded++;
        } else if (d.record === null) {
          // a requeue after the run cleared it; the run number stays until the next dispatch
          if (id === first) superseded++;
        } else if (canonical(d.record) !== seen.json)
          p3.push(
            `job ${jobId} run ${run}: controller ${id}'s dispatch record differs from the one reported at ${seen.seenAt_ms.toFixed(0)} ms`,
          );
        else if (id === first) compared++;
      }
    }
    add(
      'every reported dispatch record is identical on every controller',
      p3,
      `${compared} records compared on ${ids.length} controllers (${superseded} superseded by a requeue)`,
    );

    // 3. Every job whose worker finished has its final status.
    if (this.t.noWorkerCheckReason !== null)
      out.push({
        name: 'every job whose worker finished has its final status',
        ok: true,
        skipped: true,
        detail: `not checked: ${this.t.noWorkerCheckReason}`,
      });
    else this.workerCheck(ids, views, first!, add);

    // 4. The controllers' states are identical once quiet.
    const p5: string[] = [];
    const strip = (d: Details): string => canonical({ ...d, pendReason: undefined });
    for (const id of rest) {
      const v = views.get(id)!;
      if (v.list.length !== base.list.length)
        p5.push(`controller ${id} has ${v.list.length} jobs, controller ${first} ${base.list.length}`);
      for (const [jid, d] of base.details) {
        const o = v.details.get(jid);
        if (o === undefined) p5.push(`job ${jid} is on controller ${first} but not on ${id}`);
        else if (strip(o) !== strip(d)) {
          const a = d as unknown as Record<string, unknown>;
          const b = o as unknown as Record<string, unknown>;
          const fields = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter(
            (k) => k !== 'pendReason' && canonical(a[k]) !== canonical(b[k]),
          );
          p5.push(
            `job ${jid} differs between controllers ${first} and ${id} in ${fields.map((k) => `${k} (${canonical(a[k]).slice(0, 80)} vs ${canonical(b[k]).slice(0, 80)})`).join(', ')}`,
          );
        }
      }
    }
    add(
      "the controllers' states are identical once quiet",
      p5,
      `${base.list.length} jobs identical (every field of jobs.show but the leader-only pend reason) on ${ids.length} controllers at applied index ${applied}`,
    );
    // 5. The whole replicated state, not only the drill's jobs: every controller's state digest (the
    // SHA-256 of its snapshot encoding) at one applied index.
    const p6: string[] = [];
    const d0 = digests[0];
    for (const [k, h] of digests.entries()) {
      if (h === null || h.digest === undefined) p6.push(`controller ${ids[k]} gave no state digest`);
      else if (h.applied !== d0?.applied)
        p6.push(`controller ${ids[k]} is at applied index ${h.applied}, controller ${ids[0]} at ${d0?.applied}`);
      else if (h.digest !== d0.digest)
        p6.push(
          `controller ${ids[k]}'s state digest ${h.digest.slice(0, 16)}… (${h.jobs} jobs) differs from controller ${ids[0]}'s ${d0.digest?.slice(0, 16)}… (${d0.jobs} jobs) at applied index ${h.applied}`,
        );
    }
    add(
      "every controller's state digest is identical at one applied index",
      p6,
      `${digests.length} controllers at applied index ${d0?.applied ?? '?'}: digest ${d0?.digest?.slice(0, 16) ?? '?'}… over ${d0?.jobs ?? '?'} jobs`,
    );
    return out;
  }
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
  let layers: string | null = null;
  let usable: Set<FaultKind>;
  let skipped: Array<{ kind: FaultKind; reason: string }>;
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
  let checks: CheckOutcome[] = [];
  let lin: DrillReport['linearizability'] = null;
  let jobs = 0;
  let ticker: NodeJS.Timeout | undefined;
  d.log(
    `seed ${opts.seed}, duration ${opts.duration_s} s; fault kinds: ${[...usable].join(', ')}${skipped.length ? `; skipped: ${skipped.map((s) => s.kind).join(', ')}` : ''}`,
  );
  if (!opts.attach) {
    layers = mkdtempSync(join(tmpdir(), 'xce-drill-layers-'));
    d.t = await OwnCluster.start({ netlab: usable.has('partition'), layersDir: layers });
  } else
    d.log(
      `attached to controllers ${d.t.ids.map((id) => `${id}=${d.t.address(id)}`).join(', ')}; jobs named ${d.prefix}*; no configuration upgrades (${d.t.noUpgradeReason})`,
    );
  const onAbort = (): void => {
    d.stopLoad = true;
    for (const id of d.paused) d.t.resume(id);
    if (d.partitioned) d.t.lab?.heal();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (d.t.lab) d.log(`network: ${d.t.lab.describe()}`);
  try {
    d.t.watchWorkers((l) => d.h.noteWorkerLine(l));
    d.admin = await d.t.client('reader', CLIENT_DEADLINE_MS);
    const submitters = await Promise.all(
      Array.from({ length: SUBMITTERS }, () => d.t.client('submitter', CLIENT_DEADLINE_MS)),
    );
    const readers = await Promise.all(Array.from({ length: 2 }, () => d.t.client('reader', CLIENT_DEADLINE_MS)));
    const listerC = await d.t.client('reader', CLIENT_DEADLINE_MS);
    const ctlC = await d.t.client('submitter', CLIENT_DEADLINE_MS);
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
      ...(d.t.noUpgradeReason === null ? [d.upgrader()] : []),
    ];
    await sleep(1_000); // the load is flowing before the first fault
    await d.faultLoop(usable);
    while (!d.aborted && d.now() < opts.duration_s * 1000) await sleep(100);
    d.stopLoad = true;
    d.phase = 'stopping the load';
    await Promise.all(load);
    if (!d.aborted) {
      // Failover times: from each fault to the first acknowledged submit invoked after it.
      const acks = d.h.ops
        .filter((o) => o.op === 'submit' && o.output !== null && o.complete_ms !== null)
        .sort((a, b) => a.invoke_ms - b.invoke_ms);
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
    }
  } finally {
    if (ticker) clearInterval(ticker);
    opts.signal?.removeEventListener('abort', onAbort);
    onAbort();
    await d.t.stop();
  }
  const ops: Record<string, Record<string, number>> = {};
  for (const [op, m] of d.h.counts) ops[op] = Object.fromEntries(m);
  const violations = [...d.h.violations, ...checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)];
  return {
    seed: opts.seed,
    target: d.t.kind,
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
