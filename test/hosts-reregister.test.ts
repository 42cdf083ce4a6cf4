// Hosts re-register after a failover with their running jobs intact (issue 14): the leader is
// SIGKILLed while jobs run on two workers; each worker registers with the new leader listing its
// running jobs, the new leader keeps them (no kill, no requeue), and every job finishes in its
// first run. A worker's challenge request is then answered a nonce by the new leader and `421
// not-leader` naming it by the other controller (daemon/worker-redirect.ts). Each worker resumes on
// the new leader the TLS session the old one gave it (daemon/tls-resumption.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../harness/cluster.js';
import { untilAllEnded, workerHost } from '../testing/e2e.js';
import { dialAgent, httpGet } from '../daemon/handshake.js';
import { lastDialResumed } from '../daemon/tls-resumption.js';

interface Details {
  id: number;
  state: string;
  runNumber: number;
  exitCode: number | null;
}

/** What a worker logged each time it registered (its running jobs; whether it resumed a TLS session), oldest first. */
function registrations(cluster: TestCluster, host: string): { running: number; tlsResumed: boolean }[] {
  const out: { running: number; tlsResumed: boolean }[] = [];
  for (const line of cluster.workers.get(host)?.log ?? []) {
    if (!line.includes('registered with the leader')) continue;
    try {
      out.push(JSON.parse(line) as { running: number; tlsResumed: boolean });
    } catch {
      // a line that is not JSON: not ours
    }
  }
  return out;
}

test('after a leader kill every host re-registers with its running jobs, which run on to the end', async () => {
  const cluster = await TestCluster.start({
    controllers: 3,
    schedulerGrace_ms: 500,
    workers: [workerHost('node01'), workerHost('node02')],
  });
  try {
    const alice = await cluster.client('alice');
    const ids: number[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        ((await alice.submit({ app: 'python', command: ['sleep', '8'], cwd: cluster.dir })) as { jobId: number }).jobId,
      );
    await until(
      'all four jobs running',
      async () =>
        ((await Promise.all(ids.map((id) => alice.showJob(id)))) as Details[]).every((d) => d.state === 'RUN'),
      30_000,
      100,
    );
    // A session one controller process gives resumes on the others (their command lines differ).
    const agent = dialAgent(cluster.dialTls());
    for (const id of [1, 2, 3]) {
      await httpGet(cluster.address(id), '/healthz', cluster.dialTls(), 5_000, undefined, agent);
      assert.equal(lastDialResumed(agent), id !== 1, `controller ${id}: ${id === 1 ? 'full' : 'resumed'} handshake`);
    }
    agent.destroy();
    const before = { node01: registrations(cluster, 'node01').length, node02: registrations(cluster, 'node02').length };
    const leader = await cluster.leader();
    await cluster.kill(leader, 'SIGKILL');
    const again = await until(
      'both workers registered again',
      () => {
        const a = registrations(cluster, 'node01').slice(before.node01);
        const b = registrations(cluster, 'node02').slice(before.node02);
        return a.length > 0 && b.length > 0 ? [a[0]!, b[0]!] : undefined;
      },
      30_000,
      100,
    );
    assert.equal(
      again[0].running + again[1].running,
      4,
      'the two workers listed the four running jobs when they registered again',
    );
    assert.deepEqual(
      again.map((r) => r.tlsResumed),
      [true, true],
      'each worker resumed on the new leader the TLS session a controller gave it (a session ticket of the cluster)',
    );
    const newLeader = await cluster.leader();
    const metrics = (await httpGet(cluster.address(newLeader), '/metrics', cluster.dialTls(), 2_000)).body;
    const resumed = /^xce_tls_handshakes_total\{[^}]*session="resumed"[^}]*\} (\d+)$/m.exec(metrics);
    assert.ok(
      Number(resumed?.[1]) >= 2,
      `the new leader counted them: ${resumed?.[0] ?? 'no xce_tls_handshakes_total'}`,
    );
    for (const id of [...cluster.controllers.keys()].filter((c) => c !== leader)) {
      const want = id === newLeader ? 200 : 421;
      const r = await until(
        `controller ${id} to answer a worker's challenge request ${want}`,
        async () => {
          const a = await httpGet(cluster.address(id), '/challenge?for=worker', cluster.dialTls(), 2_000);
          return a.status === want ? a : undefined;
        },
        10_000,
        100,
      );
      const body = JSON.parse(r.body) as { nonce?: string; leader?: { id: number; address: string } };
      if (id === newLeader) assert.equal(typeof body.nonce, 'string');
      else assert.deepEqual(body.leader, { id: newLeader, address: cluster.address(newLeader) });
    }
    const now = (await Promise.all(ids.map((id) => alice.showJob(id)))) as Details[];
    for (const d of now) assert.deepEqual([d.state, d.runNumber], ['RUN', 1], `job ${d.id} runs on in its first run`);
    const done = await untilAllEnded<Details>(alice, ids, 60_000);
    for (const d of done) assert.deepEqual([d.state, d.runNumber, d.exitCode], ['DONE', 1, 0], `job ${d.id}`);
    for (const host of ['node01', 'node02'])
      assert.ok(
        !cluster.workers.get(host)!.log.some((l) => l.includes('"msg":"kill"')),
        `no kill reached ${host}: its runs were kept`,
      );
  } catch (err) {
    process.stderr.write(cluster.dumpLogs() + '\n');
    throw err;
  } finally {
    await cluster.stop();
  }
});
