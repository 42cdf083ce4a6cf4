// A short failover drill (about 25 s): real controllers and workers on 127.0.0.1, faults on a fixed
// seed, and every check of the drill must pass. Where this machine allows network namespaces, a
// second short drill partitions the controllers for real. The long drill is
// `npm run drill -- --duration 600`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { probeNetLab } from '../netlab.js';
import { runDrill } from './drill.js';
import { formatSummary } from './summary.js';

const lab = probeNetLab();

test('a short drill with leader kills, pauses, transfers and a wiped node passes every check', async () => {
  const r = await runDrill({ duration_s: 20, seed: 20261201, minFaults: 3 });
  const summary = formatSummary(r);
  assert.equal(r.aborted, false);
  assert.ok(r.faults.length >= 3, `faults were injected:\n${summary}`);
  assert.ok(r.jobs > 0, `submits were acknowledged:\n${summary}`);
  assert.deepEqual(
    r.checks.map((c) => c.name),
    [
      'every acknowledged submit exists exactly once',
      'no job id was given twice',
      'every reported dispatch record is identical on every controller',
      'every job whose worker finished has its final status',
      "the controllers' states are identical once quiet",
      "every controller's state digest is identical at one applied index",
      'the history of submits and reads is linearizable',
    ],
  );
  for (const c of r.checks) assert.ok(c.ok, `${c.name}: ${c.detail}\n${summary}`);
  assert.deepEqual(r.violations, [], summary);
  assert.ok(
    r.skipped.every((s) => s.reason.length > 0),
    'every skipped fault kind says why',
  );
});

test(
  'a short drill of real network partitions passes every check',
  { skip: lab.ok ? false : `no network namespaces here: ${lab.reason}` },
  async () => {
    const r = await runDrill({ duration_s: 15, seed: 20261202, kinds: ['partition'], minFaults: 2 });
    const summary = formatSummary(r);
    assert.equal(r.aborted, false);
    assert.ok(
      r.faults.length >= 2 && r.faults.every((f) => f.kind === 'partition' && f.variant !== undefined),
      `partitions were made:\n${summary}`,
    );
    assert.ok(r.jobs > 0, `submits were acknowledged:\n${summary}`);
    for (const c of r.checks) assert.ok(c.ok && !c.skipped, `${c.name}: ${c.detail}\n${summary}`);
    assert.deepEqual(r.violations, [], summary);
  },
);
