// A fail-stop that stops (issue 17, item 7): a leader whose WAL fsync fails exits non-zero with one
// line naming the cause and its data directory; its workers move to the new leader and their
// running job is neither requeued as "host lost" nor run twice; submits go on being acknowledged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../harness/cluster.js';
import { submitJob, untilJob, withCluster, workerHost } from '../testing/e2e.js';

interface Details {
  state: string;
  runNumber: number;
  requeueCount: number;
}

test('a leader whose WAL save fails exits with code 3, and the cluster carries on without requeueing its running job', () =>
  withCluster(
    { controllers: 3, schedulerGrace_ms: 200, hostLost_ms: 3_000, workers: [workerHost('node01')] },
    async (cluster) => {
      const alice = await cluster.client('alice');
      const admin = await cluster.client('admin');
      const jobId = await submitJob(alice, { app: 'python', command: ['sleep', '60'], cwd: cluster.dir });
      await untilJob<Details>(alice, jobId, 'the job to run', (d) => d.state === 'RUN');

      // Restart a follower with a WAL that fails after a few more saves, and make it the leader.
      const leader = await cluster.waitForLeader();
      const victim = [...cluster.controllers.keys()].find((id) => id !== leader)!;
      await cluster.kill(victim);
      const proc = cluster.startController(victim, ['--fault-wal-fail-after', '40']);
      const exited = new Promise<number | null>((resolve) => proc.proc.once('exit', (code) => resolve(code)));
      await until(
        `controller ${victim} to catch up`,
        async () => {
          const r = await cluster.getJson<{ leader: number }>(victim, '/healthz', 500).catch(() => null);
          return r !== null && r.leader > 0 ? true : undefined;
        },
        20_000,
        50,
      );
      await admin.call('cluster.transferLeader', { to: victim }).catch(() => undefined);
      // Writes until its WAL fails (bounded: 200 submits).
      for (let i = 0; i < 200 && proc.proc.exitCode === null; i++) {
        await alice.submit({ app: 'python', command: ['true'], cwd: cluster.dir }).catch(() => undefined);
      }
      const code = await exited;
      assert.equal(code, 3, `xcectld exits 3 after a fail-stop:\n${proc.log.slice(-10).join('\n')}`);
      const line = proc.log.find((l) => l.includes('fail-stop'));
      assert.ok(line !== undefined, `one line says it fail-stopped:\n${proc.log.slice(-10).join('\n')}`);
      assert.match(line, /storage failure/);
      assert.match(line, new RegExp(`controller-${victim}`), 'the line names the data directory');
      cluster.controllers.delete(victim);

      // The others go on: a leader, an acknowledged submit, the worker registered with it.
      const next = await cluster.waitForLeader();
      assert.notEqual(next, victim);
      const after = (await alice.submit({ app: 'python', command: ['true'], cwd: cluster.dir })) as { jobId: number };
      assert.ok(after.jobId > jobId);
      await until(
        'the worker to register with the new leader',
        async () =>
          cluster.workers.get('node01')!.log.filter((l) => l.includes('registered with the leader')).length >= 2 ||
          undefined,
        20_000,
        50,
      );
      // Past the host-lost timeout, the job still runs its first run: never requeued as host lost.
      await new Promise((r) => setTimeout(r, 3_500));
      const d = (await alice.showJob(jobId)) as Details;
      assert.deepEqual([d.state, d.runNumber, d.requeueCount], ['RUN', 1, 0]);
      await alice.call('jobs.kill', { id: jobId });
    },
  ));
