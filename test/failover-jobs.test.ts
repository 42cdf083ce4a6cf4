// Failover with running jobs: three controllers, two workers. The leader is SIGKILLed while jobs
// run on both workers; the new leader knows every dispatch record byte for byte, the jobs finish,
// and each job's final status lands once (one run, no re-dispatch).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../harness/cluster.js';
import { submitJob, untilAllEnded, withCluster, workerHost } from '../testing/e2e.js';

interface Details {
  id: number;
  state: string;
  runNumber: number;
  record: unknown;
  exitCode: number | null;
}

test('SIGKILL of the leader while jobs run on two workers: every record survives, every job finishes once', () =>
  withCluster(
    { controllers: 3, schedulerGrace_ms: 1_000, workers: [workerHost('node01'), workerHost('node02')] },
    async (cluster) => {
      const alice = await cluster.client('alice');
      const ids: number[] = [];
      for (let i = 0; i < 8; i++)
        ids.push(await submitJob(alice, { app: 'python', command: ['sleep', '3'], cwd: cluster.dir }));
      const before = await until(
        'all eight jobs running',
        async () => {
          const ds = (await Promise.all(ids.map((id) => alice.showJob(id)))) as Details[];
          return ds.every((d) => d.state === 'RUN') ? ds : undefined;
        },
        30_000,
        100,
      );
      const hosts = new Set(
        before.flatMap((d) => (d.record as { hosts: Array<{ host: string }> }).hosts.map((h) => h.host)),
      );
      assert.deepEqual([...hosts].sort(), ['node01', 'node02'], 'jobs run on both workers');

      const leader = await cluster.leader();
      await cluster.kill(leader, 'SIGKILL');
      const next = await cluster.waitForLeader();
      assert.notEqual(next, leader);
      const after = (await Promise.all(ids.map((id) => alice.showJob(id)))) as Details[];
      for (let i = 0; i < ids.length; i++)
        assert.deepEqual(
          after[i]!.record,
          before[i]!.record,
          `job ${ids[i]}'s dispatch record is the same on the new leader`,
        );

      const done = await untilAllEnded<Details>(alice, ids, 40_000);
      for (const d of done) {
        assert.equal(d.state, 'DONE', `job ${d.id} finished normally`);
        assert.equal(d.runNumber, 1, `job ${d.id} ran once (no re-dispatch after the failover)`);
        assert.equal(d.exitCode, 0);
      }
    },
  ));
