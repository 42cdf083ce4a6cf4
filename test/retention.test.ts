// Issue 12 end to end: finished jobs leave the replicated state after a short retention on every
// controller at the same log index (identical state digests) and are read back from each
// controller's accounting store (jobs show, jobs list --all, jobs history, accounting report); a
// retried submit of a cleaned job's session gets the original id; a leader killed while cleaning
// leaves no job both cleaned and missing from accounting; a wiped controller caught up by snapshot
// says exactly which history it lacks (README "Job history").

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TestCluster, until } from '../harness/cluster.js';
import { XceClient } from '../cli/client.js';
import type { JobHistory, JobList, JobShow } from '../api/responses.js';
import { elementId } from '../model/job-id.js';

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

/**
 * Every controller answers `jobs show` for each id (stale: its own state or store), all from history.
 * `restarted`: a controller that was down while jobs were cleaned; it may have caught up by a
 * snapshot, and then says so for exactly the jobs cleaned inside the log range it never applied
 * (README "Job history"): that answer is accepted from it, and only for those jobs.
 */
async function allCleanedEverywhere(ids: readonly number[], limit_ms = 60_000, restarted = 0): Promise<void> {
  const cleanedAt = new Map<number, number>();
  for (const id of [1, 2, 3].sort((a, b) => (a === restarted ? 1 : b === restarted ? -1 : 0))) {
    const c = await only(id);
    await until(
      `controller ${id} has every job in history`,
      async () => {
        for (const j of ids) {
          let gap: string | null = null;
          const d = (await c.call('jobs.show', { id: j }, { stale: true }).catch((e: Error) => {
            gap = /caught up by a snapshot over log indexes ([\d., ]+?) and keeps/.exec(e.message)?.[1] ?? null;
            return null;
          })) as JobShow | null;
          if (d?.history !== undefined) {
            cleanedAt.set(j, d.history.cleanedAtIndex);
            continue;
          }
          const at = cleanedAt.get(j);
          if (id !== restarted || gap === null || at === undefined) return false;
          const inside = (gap as string).split(', ').some((r) => {
            const [from, through] = r.split('..').map(Number);
            return at >= from! && at <= through!;
          });
          assert.ok(inside, `job ${j} cleaned at index ${at}, outside the gap ${gap} node ${id} states`);
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

test('a job array leaves with its last element; its elements and the array are read back; --after pages into history', async () => {
  const r = (await alice.call('jobs.submit', { job: { command: ['true'], name: 'sweep[1-3]' } })) as { jobId: number };
  const arrayId = r.jobId;
  const elements = [1, 2, 3].map((i) => elementId(arrayId, i));
  await allCleanedEverywhere(elements);
  for (const id of [1, 2, 3]) {
    const c = await only(id);
    // The array left the state with its last element: shown from history, with its counts.
    const a = await until(
      `controller ${id} shows array ${arrayId} from history`,
      async () => {
        const d = (await c.call('jobs.show', { id: arrayId }, { stale: true }).catch(() => null)) as JobShow | null;
        return d?.history !== undefined ? d : false;
      },
      30_000,
      200,
    );
    assert.equal(a.array?.size, 3);
    assert.equal(a.array?.counts.DONE, 3);
    assert.equal(a.state, 'DONE');
    const e = (await c.call('jobs.show', { id: elements[1]! }, { stale: true })) as JobShow;
    assert.equal(e.label, `${arrayId}[2]`);
    assert.ok(e.history!.cleanedAtIndex > 0);
    const eh = (await c.call('jobs.history', { id: elements[0]! }, { stale: true })) as JobHistory;
    assert.equal(eh.source, 'history');
    assert.deepEqual(
      eh.events.map((x) => x.event),
      ['submitted', 'dispatched', 'started', 'done', 'cleaned'],
    );
    const ah = (await c.call('jobs.history', { id: arrayId }, { stale: true })) as JobHistory;
    assert.equal(ah.source, 'history');
    assert.equal(ah.events[0]!.event, 'submitted');
    assert.equal(ah.events.filter((x) => x.event === 'done').length, 3);
    assert.equal(ah.events.filter((x) => x.event === 'cleaned').length, 3);
    assert.ok(ah.events.some((x) => x.event === 'done' && x.detail.startsWith('[3] ')));

    // `jobs list --all` two rows a page: --after the last row of a page goes on into history, and
    // every job from history is listed once.
    const seen: number[] = [];
    let after: number | null = null;
    for (let page = 0; page < 100; page++) {
      const l = (await c.call(
        'jobs.list',
        { all: true, limit: 2, ...(after !== null ? { after } : {}) },
        { stale: true },
      )) as JobList;
      assert.ok(l.jobs.length <= 2);
      seen.push(...l.jobs.map((j) => j.id));
      if (l.next === null) break;
      assert.equal(l.next, l.jobs[l.jobs.length - 1]!.id);
      after = l.next;
    }
    assert.equal(new Set(seen).size, seen.length, `no job listed twice on node ${id}: ${seen.join(',')}`);
    for (const j of elements) assert.ok(seen.includes(j), `element ${j} listed from history on node ${id}`);
    const all = (await c.call('jobs.list', { all: true, limit: 1000 }, { stale: true })) as JobList;
    assert.deepEqual(
      seen,
      all.jobs.map((j) => j.id),
      'pages of 2 list what one page of 1000 does',
    );
  }
});

test('a leader killed while cleaning: no job is both cleaned and missing from accounting, on any controller', async () => {
  const ids = await runJobs(alice, 30);
  const leader = await cluster.leader();
  // Kill it once the first of these jobs have left the state (cleaning under way), then bring it back.
  await until('cleaning has begun', async () => (await healthz(leader)).jobs < 30, 60_000, 50);
  await cluster.kill(leader);
  cluster.startController(leader);
  await allCleanedEverywhere(ids, 90_000, leader);
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

test('a corrupt accounting store is reported at start with its path and how to rebuild it; the controller still serves', async () => {
  const leader = await cluster.leader();
  const broken = [1, 2, 3].find((id) => id !== leader)!;
  const cleanedBefore = await runJobs(alice, 1);
  await allCleanedEverywhere(cleanedBefore);
  await cluster.kill(broken);
  const store = join(cluster.dir, `controller-${broken}`, 'accounting');
  for (const f of readdirSync(store)) writeFileSync(join(store, f), 'garbage');
  const proc = cluster.startController(broken);
  const line = await until(
    `controller ${broken} reports its accounting store`,
    () => proc.log.find((l) => l.includes('accounting store unusable')) ?? false,
    30_000,
    100,
  );
  assert.ok(line.includes(store), `the log names the path ${store}: ${line}`);
  assert.match(line, /move .*accounting away, copy .*accounting from another controller/);

  // It serves the active state: a running job, at the same digest as the others.
  const running = (await alice.call('jobs.submit', { job: { command: ['sleep', '60'] } })) as { jobId: number };
  const c = await only(broken);
  await until(
    `controller ${broken} shows the running job`,
    async () => {
      const d = (await c.call('jobs.show', { id: running.jobId }, { stale: true }).catch(() => null)) as JobShow | null;
      return d?.state === 'RUN';
    },
    30_000,
    200,
  );
  await until(
    'the broken controller has the same state as the leader',
    async () => {
      const [a, b] = await Promise.all([healthz(leader), healthz(broken)]);
      return a.applied === b.applied && a.digest === b.digest;
    },
    20_000,
    200,
  );
  // History reads say why there is none here, with the same words (at the client's deadline: a
  // client that knows other controllers asks them).
  const short = await cluster.client('alice', { controllers: [cluster.address(broken)], deadline_ms: 2_000 });
  await assert.rejects(short.call('jobs.history', { id: cleanedBefore[0]! }, { stale: true }), (e: Error) => {
    assert.ok(e.message.includes(store), e.message);
    assert.match(
      e.message,
      /cannot be used: .*serves the active jobs but keeps no job history until the store is rebuilt/,
    );
    return true;
  });
  // Metrics: unusable here; jobs cleaned and a store with records on the leader.
  const metrics = (id: number): Promise<string> => cluster.getText(id, '/metrics');
  const here = await metrics(broken);
  assert.match(here, /^xce_accounting_store_usable(\{[^}]*\})? 0$/m);
  assert.match(here, /^xce_accounting_records(\{[^}]*\})? 0$/m);
  const there = await metrics(leader);
  assert.match(there, /^xce_accounting_store_usable(\{[^}]*\})? 1$/m);
  const value = (name: string): number =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(there)?.[1] ?? NaN);
  assert.ok(value('xce_jobs_cleaned_total') >= 40, 'jobs cleaned');
  assert.ok(value('xce_accounting_records') >= 1, 'records in the store');
  assert.ok(value('xce_accounting_store_bytes') > 0, 'store size');
  assert.ok(value('xce_accounting_oldest_record_age_seconds') > 0, 'store age');
  await alice.call('jobs.kill', { id: running.jobId });
  await until(
    'the killed job finished and left the state',
    async () => (await healthz(leader)).jobs === 0,
    30_000,
    200,
  );
  // The oldest finished job's age is 0 once none is left.
  assert.match(await metrics(leader), /^xce_oldest_finished_job_age_seconds(\{[^}]*\})? 0$/m);
});
