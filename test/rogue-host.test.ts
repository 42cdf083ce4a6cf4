// Hosts the cluster does not know, and hosts that report on jobs they do not run (issue 21), with
// real processes: a worker started as a host hosts.yaml does not list is refused at registration,
// says why, and never gets a job; a status for a job running on node01, sent by a connection
// authenticated as node02, changes nothing. Keys per purpose (issue 19): node02's credential cannot
// register as node01 or open /raft, a user token opens neither /raft nor /worker, and a replayed
// worker handshake is refused and logged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { until } from '../harness/cluster.js';
import { runningSleep, tryUpgrade, withCluster, workerHost } from '../testing/e2e.js';
import { hostCredentialKey } from '../daemon/keys.js';
import { HEADER_NODE, peerSubject } from '../daemon/peer-transport.js';
import {
  encodeFrame,
  parseControllerFrame,
  WORKER_HEADER_HOST,
  type ControllerToWorkerFrame,
} from '../daemon/worker-protocol.js';

interface Details {
  state: string;
  runNumber: number;
  record: { hosts: Array<{ host: string }> } | null;
}

test('a worker for a host not in hosts.yaml is refused and never gets a job; a status from another host leaves the job running', () =>
  withCluster({ controllers: 1, schedulerGrace_ms: 200, workers: [workerHost('node01')] }, async (cluster) => {
    let rogue: WebSocket | null = null;
    try {
      const controller = cluster.controllers.get(1)!;
      // ---- a host hosts.yaml does not list ----
      const node99 = cluster.startWorker('node99', workerHost('node99'));
      const reason =
        'host node99 is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd';
      await until('node99 to log why it was refused', () => node99.log.some((l) => l.includes(reason)), 20_000, 50);
      assert.ok(
        controller.log.some((l) => l.includes('refused a worker registration') && l.includes(reason)),
        'the controller logs the refusal with its reason',
      );
      assert.ok(!node99.log.some((l) => l.includes('registered with the leader')));

      const alice = await cluster.client('alice');
      const { jobId, running } = await runningSleep<Details>(alice, cluster.dir, 60);
      assert.equal(running.record!.hosts[0]!.host, 'node01');
      // node99 stayed refused: it was never sent a start.
      assert.ok(!node99.log.some((l) => l.includes('registered with the leader')));
      assert.ok(!node99.log.some((l) => /"msg":"start"/.test(l)), node99.log.join('\n'));

      // ---- node02's credential speaks for node02 only ----
      const node02 = hostCredentialKey(cluster.keys().workerRoot, 'node02', 0);
      const asNode01 = await tryUpgrade(cluster, 1, '/worker', {
        [WORKER_HEADER_HOST]: 'node01',
        ...(await cluster.handshake(1, 'worker', 'node01', node02)),
      });
      assert.equal(asNode01.status, 401, 'node02 cannot register as node01');
      assert.match(asNode01.body, /handshake proof does not match this cluster's key for node01/);
      const asPeer = await tryUpgrade(cluster, 1, '/raft', {
        [HEADER_NODE]: '2',
        ...(await cluster.handshake(1, 'raft-peer', peerSubject(2, 1), node02)),
      });
      assert.equal(asPeer.status, 401, "a worker's credential does not open /raft");
      // A user's token opens neither /raft nor /worker (it is no key there, and no handshake).
      const token = alice.token ?? '';
      assert.notEqual(token, '');
      for (const [path, h] of [
        ['/raft', { [HEADER_NODE]: '2', authorization: `Bearer ${token}`, 'x-xce-auth': token }],
        ['/worker', { [WORKER_HEADER_HOST]: 'node02', authorization: `Bearer ${token}`, 'x-xce-auth': token }],
      ] as const) {
        const r = await tryUpgrade(cluster, 1, path, h);
        assert.equal(r.status, 401, `a user token does not open ${path}`);
      }

      // ---- a replayed worker handshake is refused and logged ----
      const fresh = { [WORKER_HEADER_HOST]: 'node02', ...(await cluster.handshake(1, 'worker', 'node02', node02)) };
      const first = new WebSocket(cluster.url(1, '/worker'), { headers: fresh, ...(cluster.dialTls() ?? {}) });
      first.on('error', () => undefined);
      await new Promise((r) => first.once('open', r));
      first.terminate();
      const replayed = await tryUpgrade(cluster, 1, '/worker', fresh);
      assert.equal(replayed.status, 401);
      assert.match(replayed.body, /replayed handshake/);
      await until(
        'the replay to be logged',
        () => controller.log.some((l) => l.includes('refused a replayed worker handshake')),
        5_000,
      );

      // ---- a connection authenticated as node02 reports on node01's job ----
      const got: ControllerToWorkerFrame[] = [];
      const ws = new WebSocket(cluster.url(1, '/worker'), {
        headers: { [WORKER_HEADER_HOST]: 'node02', ...(await cluster.handshake(1, 'worker', 'node02', node02)) },
        ...(cluster.dialTls() ?? {}),
      });
      rogue = ws;
      ws.on('message', (d) => got.push(parseControllerFrame(d.toString())));
      ws.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.send(
        encodeFrame({
          type: 'register',
          host: 'node02',
          resources: { slots: 1, mem_bytes: 1024 ** 3, booleans: [], numerics: {} },
          version: 'rogue',
          running: [],
        }),
      );
      await until('node02 to be registered', () => got.some((f) => f.type === 'registered'), 10_000);
      const statusId = `node02/${jobId}.1/finished`;
      ws.send(
        encodeFrame({
          type: 'status',
          host: 'node02',
          jobId,
          run: 1,
          statusId,
          kind: 'finished',
          exitCode: 0,
          signal: null,
          time_ms: Date.now(),
        }),
      );
      await until(
        'the controller to drop the status',
        () =>
          controller.log.some(
            (l) => l.includes('dropped a status from a host that does not run the job') && l.includes('node02'),
          ),
        10_000,
      );
      const line = controller.log.find((l) => l.includes('dropped a status from a host that does not run the job'))!;
      assert.match(line, /"host":"node02"/);
      assert.match(line, /"headHost":"node01"/);
      const after = (await alice.showJob(jobId)) as Details;
      assert.equal(after.state, 'RUN');
      assert.equal(after.runNumber, 1);
      assert.equal(after.record!.hosts[0]!.host, 'node01');
      assert.ok(!got.some((f) => f.type === 'status-ack'), 'the rogue status is never acknowledged');
      await alice.call('jobs.kill', { id: jobId });
    } finally {
      rogue?.terminate();
    }
  }));
