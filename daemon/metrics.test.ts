import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerMetrics, registerWorkerMetrics } from './metrics.js';
import { WorkerFrameCounts } from './worker-frame-counts.js';

test('metrics expose term, role, indexes, apply lag and jobs by state in Prometheus text', async () => {
  const m = new ControllerMetrics(
    '2',
    {
      term: () => 5,
      roleCode: () => 3,
      commitIndex: () => 120,
      appliedIndex: () => 117,
      jobsByState: () => ({ PEND: 4, RUN: 2 }),
      framesRefused: () => new Map([['term-too-far-ahead', 2]]),
      hostsMismatched: () => 1,
    },
    false,
  );
  m.proposals.inc(3);
  m.walFsync.observe(0.002);
  const text = await m.text();
  for (const line of [
    'xce_raft_term{node="2"} 5',
    'xce_raft_role{node="2"} 3',
    'xce_raft_commit_index{node="2"} 120',
    'xce_raft_applied_index{node="2"} 117',
    'xce_raft_apply_lag_entries{node="2"} 3',
    'xce_hosts_mismatched{node="2"} 1',
    'xce_jobs{state="PEND",node="2"} 4',
    'xce_jobs{state="RUN",node="2"} 2',
    'xce_raft_proposals_total{node="2"} 3',
    'xce_wal_fsync_seconds_count{node="2"} 1',
    'xce_raft_frames_refused_total{reason="term-too-far-ahead",node="2"} 2',
  ])
    assert.ok(text.includes(line), `missing: ${line}`);
});

test("the worker endpoint's registrations and frames by direction and type are exported when scraped", async () => {
  const m = new ControllerMetrics(
    '1',
    {
      term: () => 1,
      roleCode: () => 3,
      commitIndex: () => 0,
      appliedIndex: () => 0,
      jobsByState: () => ({}),
      framesRefused: () => new Map(),
      hostsMismatched: () => 0,
    },
    false,
  );
  const frames = new WorkerFrameCounts();
  registerWorkerMetrics(m.registry, { registrationStats: () => ({ queued: 2, deferred: 7 }), frames });
  frames.in('reports');
  frames.in('reports');
  frames.in('status');
  frames.out('status-acks');
  const text = await m.text();
  for (const line of [
    'xce_worker_registrations_deferred_total{node="1"} 7',
    'xce_worker_registrations_queued{node="1"} 2',
    'xce_worker_frames_total{direction="in",type="reports",node="1"} 2',
    'xce_worker_frames_total{direction="in",type="status",node="1"} 1',
    'xce_worker_frames_total{direction="out",type="status-acks",node="1"} 1',
  ])
    assert.ok(text.includes(line), `missing: ${line}\n${text}`);
});
