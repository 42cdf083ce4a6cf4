// A compute host that dies for good: after the host-lost timeout the leader requeues its running
// jobs, which run again elsewhere; when the host comes back its worker is told to kill the old run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runningSleep, untilJob, withCluster, workerHost } from '../testing/e2e.js';

interface Details {
  state: string;
  runNumber: number;
  requeueCount: number;
  record: { hosts: Array<{ host: string }> } | null;
}

test('the running job of a lost host is requeued and runs again on another host', () =>
  withCluster(
    {
      controllers: 1,
      schedulerGrace_ms: 200,
      hostLost_ms: 1_500,
      workers: [workerHost('node01'), workerHost('node02')],
    },
    async (cluster) => {
      const alice = await cluster.client('alice');
      const { jobId, running: first } = await runningSleep<Details>(alice, cluster.dir, 30);
      const lost = first.record!.hosts[0]!.host;
      await cluster.killWorker(lost, 'SIGKILL');
      const second = await untilJob<Details>(
        alice,
        jobId,
        'the job to run again elsewhere',
        (d) => d.state === 'RUN' && d.runNumber === 2,
        30_000,
        100,
      );
      assert.notEqual(second.record!.hosts[0]!.host, lost);
      assert.equal(second.requeueCount, 1);
      await alice.call('jobs.kill', { id: jobId });
    },
  ));
