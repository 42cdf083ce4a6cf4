// Replacing a controller, as the README tells an operator to: list the new one in xce.yaml with
// `config upgrade`, start it with --join, add it as a learner, wait until it has caught up, promote
// it, remove the old one. Three real xcectld processes and a fourth, on 127.0.0.1; the leader has
// compacted its log, so the newcomer must be sent a snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { until } from '../harness/cluster.js';
import { withCluster } from '../testing/e2e.js';
import { freePort } from '../harness/ports.js';

const JOBS = 240;

test('a controller started with --join is added as a learner, catches up by snapshot, is promoted, and the old one is removed', () =>
  withCluster({ controllers: 3, snapshotEvery: 100 }, async (cluster) => {
    const admin = await cluster.client('admin');
    const alice = await cluster.client('alice');
    for (let i = 0; i < JOBS; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, (_, k) =>
          alice.submit({ app: 'python', name: `m-${i + k}`, command: ['true'], cwd: cluster.dir }),
        ),
      );
    }

    // 1. xce.yaml lists the new controller (id 4), through the replicated configuration.
    const port = await freePort();
    const files = cluster.configFiles({
      'xce.yaml': (text) => {
        const doc = parseDocument(text);
        const list = doc.get('controllers') as { add(v: unknown): void };
        list.add(doc.createNode({ id: 4, host: '127.0.0.1', port }));
        return doc.toString();
      },
    });
    assert.equal(((await admin.call('config.upgrade', { files })) as { applied: boolean }).applied, true);
    // The new host's own config directory is the new one.
    for (const f of files) writeFileSync(join(cluster.configDir, f.path), f.text);

    // 2. Start it empty, 3. add it as a learner.
    cluster.ports.set(4, port);
    const newcomer = cluster.startController(4, ['--join']);
    const added = (await admin.call('cluster.addMember', { id: 4, address: `127.0.0.1:${port}`, learner: true })) as {
      voters: number[];
      learners: number[];
    };
    assert.deepEqual(
      { voters: [...added.voters].sort(), learners: added.learners },
      { voters: [1, 2, 3], learners: [4] },
    );

    // 4. It catches up: a stale read on it alone sees every job.
    const onNewcomer = await cluster.client('admin', { controllers: [cluster.address(4)] });
    await until(
      'the newcomer to hold every job',
      async () => {
        const l = (await onNewcomer.call('jobs.list', { limit: 10_000 }, { stale: true })) as {
          jobs: Array<{ name: string }>;
        };
        return l.jobs.filter((j) => j.name.startsWith('m-')).length === JOBS || undefined;
      },
      30_000,
      200,
    );
    assert.ok(
      newcomer.log.some((l) => l.includes('installed a snapshot from the leader')),
      'it was caught up by a snapshot',
    );
    assert.ok(!newcomer.log.some((l) => l.includes('"level":"error"')), 'it logged no error');

    // 5. Promote it; 6. remove a follower of the old three.
    const promoted = (await admin.call('cluster.addMember', { id: 4, address: `127.0.0.1:${port}` })) as {
      voters: number[];
      learners: number[];
    };
    assert.deepEqual([...promoted.voters].sort(), [1, 2, 3, 4]);
    const leader = await cluster.leader();
    const old = [1, 2, 3].find((id) => id !== leader)!;
    const removed = await admin.call('cluster.removeMember', { id: old });
    assert.deepEqual(
      [...removed.voters].sort(),
      [1, 2, 3, 4].filter((id) => id !== old),
    );
    await cluster.kill(old, 'SIGKILL');

    // The cluster of three (two old, one new) takes writes, and the newcomer applies them.
    const { jobId } = (await alice.submit({
      app: 'python',
      name: 'after-the-swap',
      command: ['true'],
      cwd: cluster.dir,
    })) as { jobId: number };
    await until(
      'the newcomer to apply the write',
      async () =>
        ((await onNewcomer.call('jobs.show', { id: jobId }, { stale: true })) as { name: string }).name ===
          'after-the-swap' || undefined,
      15_000,
      100,
    );
    const status = (await admin.call('cluster.status', {})) as { members: Array<{ id: number; role: string }> };
    assert.deepEqual(
      status.members.map((m) => `${m.id}:${m.role}`).sort(),
      [1, 2, 3, 4].filter((id) => id !== old).map((id) => `${id}:voter`),
    );
  }));
