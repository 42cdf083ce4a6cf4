// Finished jobs leaving the state (retention.ts, apply-clean.ts): which jobs the leader names, what
// apply removes and hands to the accounting store, and that exactly-once outlives a cleaned job.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { apply as applyUnchecked } from './apply.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, FactBody } from './facts.js';
import { checkStateInvariants } from './invariants.js';
import { liveMerge, submitFactFor } from './jobs.js';
import { buildDispatchRecord } from './dispatch-record.js';
import { cleanCandidates, countActiveJobs, oldestFinishedJob, retentionOf } from './retention.js';
import { referencedByPending } from './dependency.js';
import { restore, snapshot } from './snapshot.js';
import { emptyState, type ControllerState, type Job } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';

const T0 = 1_764_547_200_000;

class Cluster {
  readonly state: ControllerState = emptyState();
  index = 0;
  timeMs = T0;
  readonly removed: Job[] = [];

  fact(body: FactBody, client: string | null = null, seq = 0): ApplyResult {
    this.timeMs += 1000;
    const bytes = encodeFact({ clientId: client, sequence: seq, timeMs: this.timeMs, body });
    const r = applyUnchecked(this.state, bytes, ++this.index, this.removed);
    checkStateInvariants(this.state);
    return r;
  }

  submit(client: string, seq: number): number {
    const config = this.state.config!.cluster;
    const r = this.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec()), client, seq);
    assert.equal(r.kind, 'submitted', JSON.stringify(r));
    return (r as { jobId: number }).jobId;
  }

  /** Dispatches and finishes a job (exit code `exit`) at the current time. */
  run(id: number, exit = 0): void {
    const job = this.state.jobs.get(id)!;
    const m = liveMerge(this.state.config!.cluster, job.profile, job.spec);
    assert.ok(m.ok);
    const hosts = [{ host: 'n1', tasks: m.effective.tasks }];
    const record = buildDispatchRecord(m.effective, m.hash, hosts);
    const d = this.fact({
      kind: 'dispatch',
      jobId: id,
      runNumber: job.runNumber + 1,
      placement: hosts,
      record,
      schedulerHash: m.hash,
    });
    assert.equal(d.kind, 'dispatched', JSON.stringify(d));
    const status = { type: 'finished' as const, exitCode: exit, signal: null, reason: null, timeMs: 0 };
    assert.equal(this.fact({ kind: 'status', jobId: id, runNumber: job.runNumber, status }).kind, 'statusApplied');
  }
}

function cluster(xceExtra = ''): Cluster {
  const c = new Cluster();
  assert.equal(c.fact({ kind: 'config', files: testClusterFiles({ xceExtra }), user: null }).kind, 'configApplied');
  return c;
}

test('a finished job is due once its retention is over, never a pending or running one', () => {
  const c = cluster('finished_job_retention: 1m');
  const a = c.submit('c1', 1);
  const b = c.submit('c1', 2);
  const pending = c.submit('c1', 3);
  c.run(a);
  c.run(b, 3);
  assert.deepEqual(cleanCandidates(c.state, c.timeMs), []);
  assert.deepEqual(cleanCandidates(c.state, c.timeMs + 60_000), [a, b]);
  assert.equal(countActiveJobs(c.state), 1);
  assert.equal(oldestFinishedJob(c.state)?.id, a);
  assert.ok(!cleanCandidates(c.state, c.timeMs + 10 * 60_000).includes(pending));
});

test('beyond finished_jobs_max the oldest finished jobs are due, oldest first, in id order', () => {
  const c = cluster('finished_job_retention: 1h\nfinished_jobs_max: 2');
  const ids = [1, 2, 3, 4].map((s) => c.submit('c1', s));
  for (const id of [ids[2]!, ids[0]!, ids[3]!, ids[1]!]) c.run(id);
  // finished in the order 3, 1, 4, 2: two over the bound, the two that ended first leave.
  assert.deepEqual(
    cleanCandidates(c.state, c.timeMs),
    [ids[0]!, ids[2]!].sort((x, y) => x - y),
  );
  assert.deepEqual(cleanCandidates(c.state, c.timeMs, 1), [ids[2]!]);
});

test('a CleanFact removes the named finished jobs, hands over their final records, and keeps the rest', () => {
  const c = cluster();
  const done = c.submit('c1', 1);
  const requeued = c.submit('c1', 2);
  c.run(done);
  c.run(requeued, 1);
  assert.equal(
    c.fact({ kind: 'control', jobId: requeued, action: 'requeue', user: 'alice' }, 'c2', 1).kind,
    'controlled',
  );
  const r = c.fact({ kind: 'clean', jobIds: [done, requeued, 999] });
  assert.deepEqual(r, { kind: 'cleaned', count: 1 });
  assert.deepEqual(
    c.removed.map((j) => [j.id, j.state, j.exitCode]),
    [[done, 'DONE', 0]],
  );
  assert.equal(c.state.jobs.has(done), false);
  assert.equal(c.state.jobs.get(requeued)?.state, 'PEND');
  assert.equal(c.state.jobsCleaned, 1);
  // Applied again (a duplicate entry), nothing more leaves.
  assert.deepEqual(c.fact({ kind: 'clean', jobIds: [done] }), { kind: 'cleaned', count: 0 });
});

test("exactly once outlives a cleaned job: a retried submit gets the job's original id, no second job", () => {
  const c = cluster();
  const id = c.submit('client-a', 7);
  c.run(id);
  c.fact({ kind: 'clean', jobIds: [id] });
  const next = c.state.nextJobId;
  const config = c.state.config!.cluster;
  const again = c.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec()), 'client-a', 7);
  assert.deepEqual(again, { kind: 'submitted', jobId: id });
  assert.equal(c.state.nextJobId, next);
  assert.equal(c.state.jobs.size, 0);
});

/** The leader's scan as it was before the end-time index: a walk of every job (the reference). */
function walkCandidates(state: ControllerState, nowMs: number, limit: number): number[] {
  const { retentionMs, finishedMax } = retentionOf(state);
  const referenced = referencedByPending(state);
  const finished = [...state.jobs.values()].filter(
    (j) => (j.state === 'DONE' || j.state === 'EXIT') && !referenced.has(j.id),
  );
  finished.sort((a, b) => a.endTimeMs - b.endTimeMs || a.id - b.id);
  const due = finished.filter((j) => j.endTimeMs + retentionMs <= nowMs);
  const kept = finished.length - due.length;
  const over = Math.max(0, kept - finishedMax);
  return finished
    .slice(0, due.length + over)
    .slice(0, limit)
    .map((j) => j.id)
    .sort((a, b) => a - b);
}

test('the end-time index answers as a walk of every job: ends out of order, requeue, restart, kill, dependencies, cleans', () => {
  const c = cluster('finished_job_retention: 10m\nfinished_jobs_max: 12');
  // A deterministic mix (no randomness): 60 jobs, ended by workers whose clocks disagree.
  let seq = 0;
  const ids: number[] = [];
  for (let round = 0; round < 60; round++) {
    const id = c.submit('c1', ++seq);
    ids.push(id);
    const job = c.state.jobs.get(id)!;
    if (round % 9 === 4) {
      // killed while pending: EXIT at the fact's time
      c.fact({ kind: 'control', jobId: id, action: 'kill', user: 'alice' }, 'c2', ++seq);
      continue;
    }
    if (round % 13 === 6) continue; // stays pending
    const m = liveMerge(c.state.config!.cluster, job.profile, job.spec);
    assert.ok(m.ok);
    const hosts = [{ host: 'n1', tasks: m.effective.tasks }];
    c.fact({
      kind: 'dispatch',
      jobId: id,
      runNumber: job.runNumber + 1,
      placement: hosts,
      record: buildDispatchRecord(m.effective, m.hash, hosts),
      schedulerHash: m.hash,
    });
    // The worker's end time: up to 5 minutes before or after the fact's (never 0: that means "the fact's").
    const endMs = c.timeMs + (((round * 7919) % 11) - 5) * 60_000;
    const status = {
      type: 'finished' as const,
      exitCode: round % 5 === 0 ? 1 : 0,
      signal: null,
      reason: null,
      timeMs: endMs,
    };
    c.fact({ kind: 'status', jobId: id, runNumber: job.runNumber, status });
    if (round % 8 === 3) c.fact({ kind: 'control', jobId: id, action: 'requeue', user: 'alice' }, 'c2', ++seq);
    if (round % 10 === 7) c.fact({ kind: 'control', jobId: id, action: 'restart', user: 'alice' }, 'c2', ++seq);
  }
  // A pending job that depends on an early finished one keeps it in the state.
  const dep = c.fact(
    { ...submitFactFor(c.state.config!.cluster, 'alice', 'normal', null, jobSpec()), dependency: `ended(${ids[0]})` },
    'c1',
    ++seq,
  );
  assert.equal(dep.kind, 'submitted', JSON.stringify(dep));
  for (let step = 0; step < 40; step++) {
    const now = c.timeMs + (step - 10) * 60_000;
    for (const limit of [1, 3, 10_000])
      assert.deepEqual(
        cleanCandidates(c.state, now, limit),
        walkCandidates(c.state, now, limit),
        `at ${step}, ${limit}`,
      );
    assert.ok(!cleanCandidates(c.state, now).includes(ids[0]!), 'a job a pending dependency names stays');
    if (step % 5 === 4) {
      const named = cleanCandidates(c.state, now, 4);
      assert.deepEqual(c.fact({ kind: 'clean', jobIds: named }), { kind: 'cleaned', count: named.length });
    }
  }
  // The index is derived: building it changed no byte of the snapshot, and a restored state (a new
  // object, its index built afresh) names the same jobs.
  const restored = restore(snapshot(c.state));
  assert.deepEqual(snapshot(restored), snapshot(c.state));
  for (const dt of [0, 5 * 60_000, 60 * 60_000])
    assert.deepEqual(cleanCandidates(restored, c.timeMs + dt), cleanCandidates(c.state, c.timeMs + dt));
  assert.equal(oldestFinishedJob(restored)?.id, oldestFinishedJob(c.state)?.id);
});

test('building the end-time index changes no snapshot byte', () => {
  const c = cluster('finished_job_retention: 1m');
  const a = c.submit('c1', 1);
  c.run(a);
  const fresh = restore(snapshot(c.state)); // no index built on it yet
  const bytes = snapshot(fresh);
  assert.deepEqual(cleanCandidates(fresh, c.timeMs + 60_000), [a]); // builds it
  assert.deepEqual(snapshot(fresh), bytes);
});
