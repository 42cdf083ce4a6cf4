// `xceadmin drill --attach`: the drill drives a cluster it did not start, among somebody else's
// jobs, with only the faults an operator allows (leadership transfers here: no --allow-kill), and
// says which checks and fault kinds it could not do there, and why.
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster } from '../cluster.js';
import { runDrill } from './drill.js';
import { formatSummary } from './summary.js';

test(
  'an attached drill checks its own jobs among others and skips what it may not do',
  { timeout: 120_000 },
  async () => {
    const cluster = await TestCluster.start({
      controllers: 3,
      workers: [{ host: 'node01', slots: 4, bools: ['x86_64'], extraArgs: ['--run-as-self'] }],
    });
    try {
      // Somebody else's work, before and while the drill runs: the drill must neither count nor touch it.
      const bob = await cluster.client('bob');
      const spec = (name: string) => ({
        app: 'python',
        name,
        command: ['sleep', '30'],
        cwd: cluster.dir,
        stdout: '/dev/null',
        stderr: '/dev/null',
      });
      const before = await Promise.all(
        [1, 2, 3].map((n) => bob.submit(spec(`bobs-job-${n}`)) as Promise<{ jobId: number }>),
      );
      const admin = await cluster.client('admin');
      const r = await runDrill({
        duration_s: 8,
        seed: 4242,
        attach: {
          controllers: cluster.addresses(),
          token: admin.token!,
          tls: { ca: readFileSync(cluster.tls!.caFile) },
          apps: ['python'],
        },
      });
      const summary = formatSummary(r);
      assert.equal(r.target, 'attached');
      assert.ok(r.jobs > 0, `the drill's submits were acknowledged:\n${summary}`);
      assert.ok(
        r.faults.length > 0 && r.faults.every((f) => f.kind === 'transfer-leader'),
        `only leadership transfers without --allow-kill:\n${summary}`,
      );
      const skipped = new Map(r.skipped.map((s) => [s.kind, s.reason]));
      assert.match(skipped.get('kill-leader') ?? '', /pass --allow-kill/);
      assert.match(skipped.get('wipe-follower') ?? '', /only of clusters it started itself/);
      assert.match(skipped.get('partition') ?? '', /only controllers it started/);
      const workerCheck = r.checks.find((c) => c.name === 'every job whose worker finished has its final status');
      assert.equal(workerCheck?.skipped, true, 'the worker check is skipped, not passed');
      assert.match(workerCheck!.detail, /cannot read its workers' output/);
      for (const c of r.checks) assert.ok(c.ok, `${c.name}: ${c.detail}\n${summary}`);
      assert.deepEqual(r.violations, [], summary);
      assert.ok(
        r.checks
          .find((c) => c.name === 'every acknowledged submit exists exactly once')!
          .detail.startsWith(`${r.jobs} acknowledged`),
        "only the drill's own jobs are counted",
      );
      // Bob's jobs are untouched by the drill's kills and requeues.
      for (const b of before) {
        const d = (await admin.showJob(b.jobId)) as { name: string; runNumber: number; state: string };
        assert.ok(
          d.name.startsWith('bobs-job-') && d.state !== 'EXIT' && d.runNumber <= 1,
          `bob's job ${b.jobId} untouched: ${JSON.stringify(d)}`,
        );
      }
    } finally {
      await cluster.stop();
    }
  },
);
