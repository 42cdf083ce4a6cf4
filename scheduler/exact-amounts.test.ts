// The scheduler decides with apply's exact arithmetic (issue 17): fractional rusage is counted in
// integer milli-units in the pass's view and pools as in statemachine/usage.ts, so a job that fits
// to the last thousandth is placed, and apply accepts every placement the pass makes.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { schedulePass, type PassResult } from './pass.js';
import { DEFAULT_APPS, TestCluster } from '../testing/scheduler-cluster.js';
import { finishedFact } from '../testing/state-facts.js';

const ALL = { maxDispatches: 1000, exclude: new Set<number>() };

function applyAll(c: TestCluster, r: PassResult): void {
  for (const d of r.decisions) assert.equal(c.dispatch(d).kind, 'dispatched', `job ${d.jobId}`);
}

test('three jobs of mem 0.1 fill a host of mem 0.3 in one pass (0.1 + 0.1 + 0.1 is not above 0.3)', () => {
  const c = new TestCluster({ hosts: `  - { name: n1, slots: 8, mem: 8G, numeric: { mem: 0.3 } }\n` });
  const ids = [1, 2, 3, 4].map(() => c.submit('serial', { resreq: 'rusage[mem=0.1]' }));
  const r = schedulePass(c.state, c.hostNames(), ALL);
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    ids.slice(0, 3),
  );
  assert.equal(
    r.pending.get(ids[3]!),
    'needs 1 slot with rusage[mem=0.1] per task, room for 0 on the 1 available host',
  );
  applyAll(c, r);
});

test('mem 0.5, 0.3, 0.4 and 0.6 on a host of 2, the 0.4 job ends: the pass places another 0.6 and apply accepts it', () => {
  const c = new TestCluster({ hosts: `  - { name: n1, slots: 8, mem: 8G, numeric: { mem: 2 } }\n` });
  const ids = ['0.5', '0.3', '0.4', '0.6'].map((mem) => c.submit('serial', { resreq: `rusage[mem=${mem}]` }));
  applyAll(c, schedulePass(c.state, c.hostNames(), ALL));
  assert.equal(c.fact(finishedFact(ids[2]!)).kind, 'statusApplied');
  const last = c.submit('serial', { resreq: 'rusage[mem=0.6]' });
  const r = schedulePass(c.state, c.hostNames(), ALL);
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [last],
    JSON.stringify([...r.pending]),
  );
  applyAll(c, r);
});

test('a license pool of 1 holds ten jobs of 0.1 in one pass, and says what is free in units', () => {
  const resources = `  - { name: mem, type: numeric }\n  - { name: license_foam, type: numeric, scope: cluster, total: 1 }\n`;
  const c = new TestCluster({
    hosts: `  - { name: n1, slots: 16, mem: 8G }\n`,
    resources,
    apps: DEFAULT_APPS.replace('select[ib] ', ''),
  });
  const ids = Array.from({ length: 11 }, () => c.submit('serial', { resreq: 'rusage[license_foam=0.1]' }));
  const r = schedulePass(c.state, c.hostNames(), ALL);
  assert.equal(r.decisions.length, 10);
  assert.equal(r.pending.get(ids[10]!), 'license_foam: 0 of 1 free, the job needs 0.1');
  applyAll(c, r);
  const big = c.submit('serial', { resreq: 'rusage[license_foam=0.25]' });
  for (const id of ids.slice(0, 4)) c.fact(finishedFact(id));
  const r2 = schedulePass(c.state, c.hostNames(), ALL);
  assert.deepEqual(
    r2.decisions.map((d) => d.jobId),
    [ids[10], big],
  );
});
