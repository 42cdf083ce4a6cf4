// A compute host that dies for good: after the host-lost timeout the leader requeues its running
// jobs, which run again elsewhere; when the host comes back its worker is told to kill the old run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../harness/cluster.js';

interface Details {
  state: string;
  runNumber: number;
  requeueCount: number;
  record: { hosts: Array<{ host: string }> } | null;
}

test('the running job of a lost host is requeued and runs again on another host', async () => {
  const worker = (host: string) => ({
    host,
    slots: 4,
    bools: ['ib', 'x86_64'],
    nums: { mem: 262144 },
    extraArgs: ['--run-as-self'],
  });
  const cluster = await TestCluster.start({
    controllers: 1,
    schedulerGrace_ms: 200,
    hostLost_ms: 1_500,
    workers: [worker('node01'), worker('node02')],
  });
  try {
    const alice = await cluster.client('alice');
    const { jobId } = (await alice.submit({
      app: 'python',
      resreq: 'select[ib]',
      command: ['sleep', '30'],
      cwd: cluster.dir,
    })) as { jobId: number };
    const first = await until(
      'the job to run',
      async () => {
        const d = (await alice.showJob(jobId)) as Details;
        return d.state === 'RUN' ? d : undefined;
      },
      20_000,
      50,
    );
    const lost = first.record!.hosts[0]!.host;
    await cluster.killWorker(lost, 'SIGKILL');
    const second = await until(
      'the job to run again elsewhere',
      async () => {
        const d = (await alice.showJob(jobId)) as Details;
        return d.state === 'RUN' && d.runNumber === 2 ? d : undefined;
      },
      30_000,
      100,
    );
    assert.notEqual(second.record!.hosts[0]!.host, lost);
    assert.equal(second.requeueCount, 1);
    await alice.call('jobs.kill', { id: jobId });
  } catch (err) {
    process.stderr.write(cluster.dumpLogs() + '\n');
    throw err;
  } finally {
    await cluster.stop();
  }
});
