// Issue 19 with real processes: `xceadmin host revoke` disconnects the host's worker and every
// controller refuses its credential; `xceadmin host enroll` hands the host a credential of its next
// epoch (the old one stays refused) with which the worker registers again; `xceadmin token revoke`
// makes every controller refuse the token at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until, type TestCluster } from '../harness/cluster.js';
import { tryUpgrade, withCluster, workerHost } from '../testing/e2e.js';
import { parseHostCredential } from '../daemon/keys.js';
import { WORKER_HEADER_HOST } from '../daemon/worker-protocol.js';

/** The status a /worker upgrade of `host` proved with `key` gets at controller `id` (101: accepted), and the body. */
async function workerUpgrade(
  cluster: TestCluster,
  id: number,
  host: string,
  key: Uint8Array,
): Promise<{ status: number; body: string }> {
  const headers = { [WORKER_HEADER_HOST]: host, ...(await cluster.handshake(id, 'worker', host, key)) };
  return tryUpgrade(cluster, id, '/worker', headers);
}

test('a revoked host is disconnected and refused by every controller; enrolled again it gets a new credential', () =>
  withCluster({ controllers: 3, schedulerGrace_ms: 200, workers: [workerHost('node01')] }, async (cluster) => {
    const admin = await cluster.client('admin');
    const ids = [...cluster.controllers.keys()];
    const old = parseHostCredential((await admin.call('hosts.enroll', { host: 'node01' })).credential ?? '', 'enroll');
    assert.equal(old.epoch, 0);
    const worker = cluster.workers.get('node01')!;

    const r = await admin.call('hosts.revoke', { host: 'node01' });
    assert.deepEqual(r, { host: 'node01', epoch: 0, revoked: true });
    await until('the worker to be told it is revoked', () => worker.log.some((l) => l.includes('is revoked')), 10_000);
    for (const id of ids) {
      const refused = await until(
        `controller ${id} to refuse node01`,
        async () => {
          const u = await workerUpgrade(cluster, id, 'node01', old.key);
          return u.status === 401 ? u : undefined;
        },
        5_000,
      );
      assert.match(refused.body, /host node01 is revoked \(xceadmin host revoke\): enroll it again/);
    }

    const again = await admin.call('hosts.enroll', { host: 'node01' });
    assert.equal(again.epoch, 1);
    assert.equal(again.revoked, false);
    const fresh = parseHostCredential(again.credential ?? '', 'enroll');
    // Taken: the leader upgrades the connection (101), a follower sends the worker on to the leader
    // (421 not-leader, daemon/worker-redirect.ts), which it does only once authenticated.
    const taken = (status: number): boolean => status === 101 || status === 421;
    for (const id of ids) {
      await until(
        `controller ${id} to take the new credential`,
        async () => (taken((await workerUpgrade(cluster, id, 'node01', fresh.key)).status) ? true : undefined),
        5_000,
      );
      assert.equal(
        (await workerUpgrade(cluster, id, 'node01', old.key)).status,
        401,
        'the old credential stays refused',
      );
    }
    // The worker restarted with its new credential registers again.
    await cluster.killWorker('node01', 'SIGTERM');
    writeFileSync(join(cluster.dir, 'node01.credential'), again.credential ?? '', { mode: 0o600 });
    const back = cluster.startWorker('node01', workerHost('node01'));
    await until(
      'node01 to register again',
      () => back.log.some((l) => l.includes('registered with the leader')),
      20_000,
      50,
    );
  }));

test('a revoked token is refused by every controller, and only an admin may revoke', () =>
  withCluster({ controllers: 3 }, async (cluster) => {
    const admin = await cluster.client('admin');
    const alice = await cluster.client('alice');
    const token = alice.token!;
    await assert.rejects(alice.call('token.revoke', { token }), /not allowed cluster:admin/);
    const r = await admin.call('token.revoke', { token });
    assert.ok(r.revokedUntil_ms > Date.now());
    for (const address of cluster.addresses()) {
      const c = await cluster.client('alice', { controllers: [address] });
      c.token = token;
      await until(
        `${address} to refuse the revoked token`,
        async () => {
          try {
            await c.call('apps.list', {}, { stale: true });
            return undefined;
          } catch (err) {
            return /this token was revoked by an administrator/.test((err as Error).message) ? true : undefined;
          }
        },
        5_000,
      );
    }
    // A new login gets a new token (a new jti), which works.
    const fresh = await cluster.client('alice', { controllers: [cluster.addresses()[0]!] });
    fresh.token = await fresh.login('alice', 'alice-dev');
    assert.notEqual(fresh.token, token);
    await fresh.call('apps.list', {});
  }));
