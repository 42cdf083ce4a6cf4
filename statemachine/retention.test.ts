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
import { cleanCandidates, countActiveJobs, oldestFinishedJob } from './retention.js';
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
