// A worker's registration becomes a replicated fact before the worker is told `registered` (issue
// 20): the scheduler, and a new leader after a failover, use the smaller of hosts.yaml and what it
// registers. A re-registration with the same resources proposes nothing; values apply could not
// account are refused like an unknown host; a mismatch is logged once, at registration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, teardown, waitFor, worker } from '../testing/worker-hub-harness.js';
import { FEATURE_FAILOVER_SPREAD, FEATURE_START_BATCH } from './worker-start-batch.js';

test('the registration is applied before `registered`; the same resources again propose nothing; a mismatch is logged once', async () => {
  const s = await setup();
  try {
    const w = worker(s, 'n2');
    await w.open;
    w.register('n2', { slots: 2, mem_bytes: 64 * 2 ** 30, numerics: {} });
    await waitFor('n2 to be registered', () => w.got.some((f) => f.type === 'registered'));
    assert.equal(s.node.registrations, 1);
    assert.equal(s.node.state.hosts.get('n2')?.slots, 2, 'applied by the time the worker is registered');
    assert.equal(s.node.state.hosts.get('n2')?.booleans, null, 'no booleans stated: hosts.yaml stands');
    const logged = s.logs.filter((l) => l['msg'] === 'the host registers other resources than hosts.yaml allows');
    assert.equal(logged.length, 1);
    assert.deepEqual(logged[0]!['mismatches'], ['n2: registers 2 slots, hosts.yaml allows 8: using 2']);
    // The same worker again (a reconnect, or a new leader that already holds the fact): no new fact.
    const again = worker(s, 'n2');
    await again.open;
    again.register('n2', { slots: 2, mem_bytes: 64 * 2 ** 30, numerics: {} });
    await waitFor('n2 to be registered again', () => again.got.some((f) => f.type === 'registered'));
    assert.equal(s.node.registrations, 1);
  } finally {
    await teardown(s);
  }
});

test('a registration apply could not account (a numeric finer than 0.001) is refused, with the reason', async () => {
  const s = await setup();
  try {
    const w = worker(s, 'n2');
    await w.open;
    w.register('n2', { slots: 2, mem_bytes: 2 ** 30, numerics: { mem: 0.0005 } });
    await waitFor('the connection to close', () => w.closed !== null);
    assert.equal(w.got[0]?.type, 'refused');
    assert.match(JSON.stringify(w.got[0]), /host n2 registers numeric mem=0\.0005: .*thousandths/);
    assert.equal(s.node.registrations, 0);
    assert.equal(s.hub.availableHosts().has('n2'), false);
  } finally {
    await teardown(s);
  }
});

test('`registered` says how many hosts the cluster lists to a worker with the failover-spread feature only', async () => {
  const s = await setup();
  try {
    const listed = s.node.state.config?.cluster.hosts.size;
    assert.ok(listed !== undefined && listed > 0);
    const newer = worker(s, 'n2', undefined, [FEATURE_START_BATCH, FEATURE_FAILOVER_SPREAD]);
    const older = worker(s, 'n1', undefined, [FEATURE_START_BATCH]);
    await Promise.all([newer.open, older.open]);
    newer.register('n2');
    older.register('n1');
    const registered = async (w: typeof newer) => {
      await waitFor('registered', () => w.got.some((f) => f.type === 'registered'));
      const f = w.got.find((g) => g.type === 'registered');
      return f?.type === 'registered' ? f : undefined;
    };
    assert.equal((await registered(newer))?.hosts, listed);
    assert.equal((await registered(older))?.hosts, undefined, 'no field an older worker would refuse');
  } finally {
    await teardown(s);
  }
});
