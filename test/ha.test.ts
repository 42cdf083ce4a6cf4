// The controller cluster as users and operators see it: three real xcectld processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../harness/cluster.js';
import { withCluster } from '../testing/e2e.js';
import type { XceClient } from '../cli/client.js';

interface JobRow {
  id: number;
  command: string;
}

async function allJobs(c: XceClient): Promise<JobRow[]> {
  return ((await c.listJobs({ limit: 10_000 })) as { jobs: JobRow[] }).jobs;
}

test('a submit through a follower lands once; SIGKILL of the leader mid-stream loses no acknowledged submit and applies none twice; the killed node catches up', () =>
  withCluster({ controllers: 3 }, async (cluster) => {
    const leader = await cluster.waitForLeader();
    const follower = [...cluster.ports.keys()].find((id) => id !== leader)!;
    const viaFollower = await cluster.client('alice', { controllers: [`127.0.0.1:${cluster.ports.get(follower)}`] });
    const first = (await viaFollower.submit({ command: ['echo', 'via-follower'] })) as { jobId: number };
    assert.ok(first.jobId > 0);

    const acked = new Map<string, number>(); // marker -> job id
    let stop = false;
    const CLIENTS = 8;
    const SUBMITS_MAX = 400; // bounded load
    let issued = 0;
    const writers = await Promise.all(Array.from({ length: CLIENTS }, () => cluster.client('alice')));
    const loops = writers.map(async (c, w) => {
      for (let n = 0; !stop && issued < SUBMITS_MAX; n++) {
        issued++;
        const marker = `w${w}-${n}`;
        try {
          const r = (await c.submit({ command: ['echo', marker] })) as { jobId: number };
          acked.set(marker, r.jobId);
        } catch {
          // not acknowledged (gave up during the failover): may or may not exist, never twice
        }
      }
    });
    await until('some submits acknowledged', () => acked.size >= 40, 20_000);
    const before = acked.size;
    const killed = await cluster.leader();
    await cluster.kill(killed, 'SIGKILL');
    const newLeader = await cluster.waitForLeader();
    assert.notEqual(newLeader, killed);
    await until('submits acknowledged by the new leader', () => acked.size >= before + 40, 30_000);
    stop = true;
    await Promise.all(loops);

    const admin = await cluster.client('admin');
    const jobs = await allJobs(admin);
    const byMarker = new Map<string, number[]>();
    for (const j of jobs) {
      const m = j.command.replace(/^echo /, '');
      byMarker.set(m, [...(byMarker.get(m) ?? []), j.id]);
    }
    for (const [marker, id] of acked) {
      assert.deepEqual(byMarker.get(marker), [id], `acknowledged submit ${marker} (job ${id}) is present exactly once`);
    }
    for (const [marker, ids] of byMarker) assert.equal(ids.length, 1, `${marker} was applied ${ids.length} times`);
    assert.equal(new Set(jobs.map((j) => j.id)).size, jobs.length, 'no job id was given twice');

    // The killed node restarts from its data directory and catches up.
    cluster.startController(killed);
    const direct = await cluster.client('admin', { controllers: [`127.0.0.1:${cluster.ports.get(killed)}`] });
    await until(
      'the restarted node to catch up',
      async () => {
        const r = (await direct.call('jobs.list', { limit: 10_000 }, { stale: true })) as { jobs: JobRow[] };
        return r.jobs.length === jobs.length;
      },
      30_000,
    );
  }));

test('a node that missed more than a snapshot of entries catches up by InstallSnapshot', () =>
  withCluster({ controllers: 3, snapshotEvery: 100 }, async (cluster) => {
    const leader = await cluster.waitForLeader();
    const lagging = [...cluster.ports.keys()].find((id) => id !== leader)!;
    await cluster.kill(lagging, 'SIGKILL');
    const alice = await cluster.client('alice');
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let n = 0; n < 40; n++) await alice.submit({ command: ['echo', `s${w}-${n}`] });
      }),
    );
    // A wiped data directory: the node starts from nothing and the leader's log no longer reaches back.
    const { rmSync } = await import('node:fs');
    rmSync(`${cluster.dir}/controller-${lagging}`, { recursive: true, force: true });
    const p = cluster.startController(lagging);
    const direct = await cluster.client('admin', { controllers: [`127.0.0.1:${cluster.ports.get(lagging)}`] });
    await until(
      'the wiped node to catch up',
      async () => {
        const r = (await direct.call('jobs.list', { limit: 10_000 }, { stale: true })) as { jobs: JobRow[] };
        return r.jobs.length === 320;
      },
      30_000,
    );
    assert.ok(
      p.log.some((l) => l.includes('installed a snapshot from the leader')),
      'it caught up by InstallSnapshot',
    );
  }));

test('a second daemon on the same data directory is refused with a clear message', () =>
  withCluster({ controllers: 1 }, async (cluster) => {
    const first = cluster.controllers.get(1)!;
    const again = cluster.startController(1); // a second process on the same data directory
    cluster.controllers.set(1, first);
    const code = await new Promise<number | null>((r) => again.proc.once('exit', (c) => r(c)));
    assert.equal(code, 1);
    assert.ok(
      again.log.some((l) => /lock|in use|already/i.test(l)),
      again.log.join('\n'),
    );
  }));

test('SIGTERM stops a leader gracefully: it hands leadership over first and exits 0', () =>
  withCluster({ controllers: 3 }, async (cluster) => {
    const leader = await cluster.waitForLeader();
    const p = cluster.controllers.get(leader)!;
    const exited = new Promise<number | null>((r) => p.proc.once('exit', (code) => r(code)));
    await cluster.kill(leader, 'SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(
      p.log.some((l) => l.includes('transferring leadership before stopping')),
      p.log.slice(-10).join('\n'),
    );
    const next = await cluster.waitForLeader();
    assert.notEqual(next, leader);
    const alice = await cluster.client('alice');
    assert.ok(((await alice.submit({ command: ['true'] })) as { jobId: number }).jobId > 0);
  }));
