// Issue 12 end to end: finished jobs leave the replicated state after a short retention on every
// controller at the same log index (identical state digests) and are read back from each
// controller's accounting store (jobs show, jobs list --all, jobs history, accounting report); a
// retried submit of a cleaned job's session gets the original id; a leader killed while cleaning
// leaves no job both cleaned and missing from accounting; a wiped controller caught up by snapshot
// says exactly which history it lacks (README "Job history").

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TestCluster, until } from '../harness/cluster.js';
import { XceClient } from '../cli/client.js';
import type { JobHistory, JobList, JobShow } from '../api/responses.js';

let cluster: TestCluster;
let alice: XceClient;
const dist = fileURLToPath(new URL('..', import.meta.url));

before(async () => {
  cluster = await TestCluster.start({
    controllers: 3,
    snapshotEvery: 40,
    schedulerGrace_ms: 200,
    edit: { 'xce.yaml': (t) => t.replace('finished_job_retention: 1h', 'finished_job_retention: 1s') },
    workers: [
      { host: 'node01', slots: 8, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] },
    ],
  });
  alice = await cluster.client('alice');
});

after(async () => {
  await cluster.stop();
});

/** A client of one controller only (its answers come from that controller's state and store). */
const only = (id: number, user = 'alice'): Promise<XceClient> =>
  cluster.client(user, { controllers: [cluster.address(id)] });

async function healthz(id: number): Promise<{ applied: number; digest: string; jobs: number }> {
  return cluster.getJson<{ applied: number; digest: string; jobs: number }>(id, '/healthz?digest=1', 10_000);
}

async function runJobs(c: XceClient, n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = (await c.call('jobs.submit', { job: { command: ['true'] } })) as { jobId: number };
    ids.push(r.jobId);
  }
  return ids;
}

/** Every controller answers `jobs show` for each id (stale: its own state or store), all from history. */
async function allCleanedEverywhere(ids: readonly number[], limit_ms = 60_000): Promise<void> {
  for (const id of [1, 2, 3]) {
    const c = await only(id);
    await until(
      `controller ${id} has every job in history`,
      async () => {
        for (const j of ids) {
          const d = (await c.call('jobs.show', { id: j }, { stale: true }).catch(() => null)) as JobShow | null;
          if (d === null || d.history === undefined) return false;
        }
        return true;
      },
      limit_ms,
      200,
    );
  }
}

test('finished jobs leave the state on every controller at the same index and are read back from history', async () => {
  const retryClient = `c-retention-${process.pid}`;
  const first = new XceClient({ controllers: cluster.addresses(), clientId: retryClient, tls: cluster.dialTls() });
  first.token = alice.token!;
  const original = (await first.call('jobs.submit', { job: { command: ['true'] } })) as {
    jobId: number;
  };
  first.close();
  const ids = [original.jobId, ...(await runJobs(alice, 4))];
  await allCleanedEverywhere(ids);

  // Identical state at the same applied index on every controller (nothing else is proposed now).
  const states = await until(
    'the controllers agree on applied index and digest',
    async () => {
      const h = await Promise.all([1, 2, 3].map(healthz));
      return h.every((x) => x.applied === h[0]!.applied && x.digest === h[0]!.digest) ? h : false;
    },
    20_000,
    200,
  );
  assert.equal(states[0]!.jobs, 0, 'no job is left in the state');

  for (const id of [1, 2, 3]) {
    const c = await only(id);
    const d = (await c.call('jobs.show', { id: ids[1]! }, { stale: true })) as JobShow;
    assert.equal(d.state, 'DONE');
    assert.ok(d.history!.cleanedAtIndex > 0);
    const list = (await c.call('jobs.list', { all: true }, { stale: true })) as JobList;
    // Newest end time first: the five, each from history.
    const listed = list.jobs.filter((j) => ids.includes(j.id));
    assert.deepEqual(
      listed.map((j) => j.id).sort((a, b) => a - b),
      [...ids].sort((a, b) => a - b),
    );
    assert.ok(listed.every((j) => j.fromHistory === true && j.state === 'DONE'));
    const h = (await c.call('jobs.history', { id: ids[2]! }, { stale: true })) as JobHistory;
    assert.equal(h.source, 'history');
    assert.deepEqual(
      h.events.map((e) => e.event),
      ['submitted', 'dispatched', 'started', 'done', 'cleaned'],
    );
    assert.ok(h.events.every((e) => typeof e.timeMs === 'number' && e.timeMs > 0));
  }
  // The same cleaned index everywhere: the clean was one replicated fact.
  const cleaned = await Promise.all(
    [1, 2, 3].map(
      async (id) =>
        ((await (await only(id)).call('jobs.show', { id: ids[0]! }, { stale: true })) as JobShow).history!
          .cleanedAtIndex,
    ),
  );
  assert.equal(new Set(cleaned).size, 1);

  // A retry of the first submit's session (same client, same sequence) gets the original job back.
  const retry = new XceClient({ controllers: cluster.addresses(), clientId: retryClient, tls: cluster.dialTls() });
  retry.token = alice.token!;
  const again = (await retry.call('jobs.submit', { job: { command: ['true'] } })) as { jobId: number };
  retry.close();
  assert.equal(again.jobId, original.jobId);

  // The CLI: jobs history and the accounting report as CSV.
  const env = {
    ...process.env,
    XCE_CONFIG_DIR: join(cluster.dir, 'cli-home'),
    XCE_CONTROLLERS: cluster.addresses().join(','),
    XCE_TOKEN: alice.token!,
    NO_COLOR: '1',
    ...cluster.clientEnv(),
  };
  const hist = spawnSync(process.execPath, [join(dist, 'cli', 'xcecli.js'), 'jobs', 'history', String(ids[3])], {
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(hist.status, 0, hist.stderr);
  assert.match(hist.stdout, /from history/);
  assert.match(hist.stdout, /dispatched\s+run 1 to node01:1/);
  const admin = await cluster.client('admin');
  const rep = spawnSync(
    process.execPath,
    [join(dist, 'cli', 'xceadmin.js'), 'accounting', 'report', '--since', '1h', '--by', 'user', '--csv'],
    { env: { ...env, XCE_TOKEN: admin.token! }, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(rep.status, 0, rep.stderr);
  assert.match(rep.stdout, /^key,jobs,done,exit,cpu_hours,wall_hours\r\nalice,5,5,0,/);
});

test('a leader killed while cleaning: no job is both cleaned and missing from accounting, on any controller', async () => {
  const ids = await runJobs(alice, 30);
  const leader = await cluster.leader();
  // Kill it once the first of these jobs have left the state (cleaning under way), then bring it back.
  await until('cleaning has begun', async () => (await healthz(leader)).jobs < 30, 60_000, 50);
  await cluster.kill(leader);
  cluster.startController(leader);
  await allCleanedEverywhere(ids, 90_000);
});

test('a wiped controller caught up by snapshot says which history it lacks, and records what it applies itself', async () => {
  const before = await runJobs(alice, 3);
  await allCleanedEverywhere(before);
  const leader = await cluster.leader();
  const wiped = [1, 2, 3].find((id) => id !== leader)!;
  await cluster.kill(wiped);
  rmSync(join(cluster.dir, `controller-${wiped}`), { recursive: true, force: true });
  // The others move on (the log is compacted past what the wiped one had): it catches up by snapshot.
  await runJobs(alice, 45);
  cluster.startController(wiped);
  const c = await only(wiped);
  await until(
    'the wiped controller caught up',
    async () => (await healthz(wiped)).applied >= (await healthz(leader)).applied - 5,
    30_000,
    200,
  );
  await assert.rejects(c.call('jobs.history', { id: before[0]! }, { stale: true }), (e: Error) => {
    assert.match(
      e.message,
      new RegExp(
        `job ${before[0]} left the state, and node ${wiped} has no record of it: this controller caught up by a snapshot over log indexes`,
      ),
    );
    return true;
  });
  // Jobs cleaned after it caught up are in its own store.
  const after = await runJobs(alice, 2);
  await allCleanedEverywhere(after);
});
