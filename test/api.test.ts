// The client API through a real controller: each RBAC rule of the brief with real tokens, and bad
// input of every kind answered with a clear error while the daemon keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { TestCluster } from '../harness/cluster.js';
import { ApiError, type XceClient } from '../cli/client.js';
import { hashPassword } from '../daemon/auth.js';
import { API_FRAME_BYTES_MAX } from '../api/protocol.js';

let cluster: TestCluster;
let alice: XceClient;
let bob: XceClient;
let carol: XceClient;
let admin: XceClient;

before(async () => {
  const carolHash = await hashPassword('carol-dev', 1024);
  cluster = await TestCluster.start({
    controllers: 1,
    // carol is a user with no role at all.
    edit: { 'users.yaml': (t) => `${t.trimEnd()}\n  - name: carol\n    groups: []\n    password: "${carolHash}"\n` },
  });
  [alice, bob, carol, admin] = await Promise.all(['alice', 'bob', 'carol', 'admin'].map((u) => cluster.client(u)));
});

after(async () => {
  await cluster.stop();
});

async function refused(p: Promise<unknown>, code: string, re: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, re);
    return true;
  });
}

test('queue:submit is checked against the queue: bob may use normal but not night', async () => {
  const r = (await bob.submit({ command: ['true'] })) as { jobId: number; profile: string };
  assert.equal(r.profile, 'python', 'no --app means the cluster default, recorded by name');
  await refused(bob.submit({ queue: 'night', command: ['true'] }), 'forbidden', /queue:submit/);
});

test('app:use is checked independently of queue:submit: bob may submit to normal but not with openfoam', async () => {
  await refused(
    bob.submit({ app: 'openfoam', tasks: 32, resreq: 'select[ib]', command: ['true'] }),
    'forbidden',
    /app:use.*openfoam|openfoam.*app:use/,
  );
  const r = (await alice.submit({ app: 'openfoam', command: ['true'] })) as { jobId: number };
  assert.ok(r.jobId > 0, 'alice (cfd_user) may use openfoam on the normal queue granted by basic_user');
});

test('app:use on an alias is checked against its target, and the target name is recorded', async () => {
  await refused(bob.submit({ app: 'openfoam-old', command: ['true'] }), 'forbidden', /openfoam/);
  const r = (await alice.submit({ app: 'openfoam-old', command: ['true'] })) as { jobId: number; profile: string };
  assert.equal(r.profile, 'openfoam');
  const shown = (await alice.showJob(r.jobId)) as { profile: { recorded: string; resolved: string } };
  assert.deepEqual([shown.profile.recorded, shown.profile.resolved], ['openfoam', 'openfoam']);
});

test('a job resource requirement naming an unknown resource is refused at submit', async () => {
  await refused(
    alice.submit({ resreq: 'select[infiniband]', command: ['true'] }),
    'rejected',
    /infiniband.*not defined in resources\.yaml/,
  );
  await refused(alice.submit({ resreq: 'select[ib', command: ['true'] }), 'rejected', /resource requirement: .*column/);
});

test('an unknown profile is refused at submit, naming it', async () => {
  await refused(
    alice.submit({ app: 'fluent', command: ['true'] }),
    'rejected',
    /application profile fluent is not defined/,
  );
});

test('the additive rule is enforced at submit with the profile value in the message', async () => {
  await refused(
    alice.submit({ app: 'openfoam', resreq: 'rusage[license_foam=2]', command: ['true'] }),
    'rejected',
    /openfoam.*license_foam=1/,
  );
  await refused(alice.submit({ env: { XCE_JOBID: '7' }, command: ['true'] }), 'rejected', /XCE_JOBID/);
});

test('app:view governs listing and showing profiles', async () => {
  const bobApps = (await bob.listApps()) as { apps: Array<{ name: string; usable: boolean }> };
  assert.ok(bobApps.apps.length >= 5, 'basic_user has app:view on all');
  assert.equal(bobApps.apps.find((a) => a.name === 'openfoam')?.usable, false);
  const carolApps = (await carol.listApps()) as { apps: unknown[] };
  assert.deepEqual(carolApps.apps, [], 'no app:view, no profiles listed');
  // A profile carol may not view is answered as one that does not exist (issue 21: no existence oracle).
  await refused(carol.showApp('python'), 'not-found', /^application profile python is not defined$/);
});

test('cluster_admin is the one bypass', async () => {
  const r = (await admin.submit({ app: 'openfoam', queue: 'night', command: ['true'] })) as { jobId: number };
  assert.ok(r.jobId > 0);
  await refused(bob.call('cluster.status', {}), 'forbidden', /cluster/);
  await refused(bob.call('token.issue', { user: 'alice' }), 'forbidden', /cluster:admin/);
});

test('restart re-checks app:use for the job profile', async () => {
  const r = (await alice.submit({ app: 'openfoam', command: ['sleep', '1000'] })) as { jobId: number };
  await alice.call('jobs.kill', { id: r.jobId });
  // The admin takes openfoam away from cfd_user.
  const files = cluster.configFiles({ 'rbac.yaml': (t) => t.replace('values: [openfoam, mpich]', 'values: [mpich]') });
  const up = (await admin.call('config.upgrade', { files })) as { applied: boolean };
  assert.equal(up.applied, true);
  await refused(alice.call('jobs.restart', { id: r.jobId }), 'forbidden', /app:use/);
  // Put it back for the other tests.
  await admin.call('config.upgrade', { files: cluster.configFiles() });
});

test('a configuration with a dangling default_application is refused and the current one stays', async () => {
  const files = cluster.configFiles({
    'xce.yaml': (t) => t.replace('default_application: python', 'default_application: nosuch'),
  });
  await refused(admin.call('config.upgrade', { files }), 'rejected', /nosuch/);
  const r = (await bob.submit({ command: ['true'] })) as { profile: string };
  assert.equal(r.profile, 'python');
});

test('a user sees only their own jobs unless granted job:view', async () => {
  const own = (await carol.call('jobs.list', {})) as { jobs: unknown[] };
  assert.deepEqual(own.jobs, []);
  const all = (await bob.listJobs()) as { jobs: Array<{ user: string }> };
  assert.ok(
    all.jobs.some((j) => j.user === 'alice'),
    'basic_user has job:view',
  );
});

// ---- bad input on a raw connection ----

function raw(): Promise<{
  ws: WebSocket;
  ask(frame: string | Buffer): Promise<Record<string, unknown>>;
  closed: Promise<number>;
}> {
  const ws = new WebSocket(`ws://${cluster.addresses()[0]}/api`);
  const queue: Array<(r: Record<string, unknown>) => void> = [];
  ws.on('message', (d) => queue.shift()?.(JSON.parse(d.toString()) as Record<string, unknown>));
  ws.on('error', () => undefined);
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  return new Promise((resolve, reject) => {
    ws.once('open', () =>
      resolve({
        ws,
        closed,
        ask: (frame) =>
          new Promise((r) => {
            queue.push(r);
            ws.send(frame);
          }),
      }),
    );
    ws.once('error', reject);
  });
}

test('malformed JSON, an unknown operation and wrong types get clear errors and the connection keeps serving', async () => {
  const c = await raw();
  try {
    const a = await c.ask('{"id": 1, "op": ');
    assert.deepEqual([a['ok'], (a['error'] as { code: string }).code], [false, 'bad-frame']);
    const b = await c.ask(JSON.stringify({ id: 2, op: 'jobs.frobnicate', args: {} }));
    assert.equal((b['error'] as { code: string }).code, 'unknown-op');
    const d = await c.ask(JSON.stringify({ id: 3, op: 'jobs.show', token: 'x', args: { id: 'seven' } }));
    assert.equal((d['error'] as { code: string }).code, 'bad-request');
    assert.match((d['error'] as { message: string }).message, /args\.id/);
    const e = await c.ask(
      JSON.stringify({ id: 4, op: 'apps.list', token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.forged', args: {} }),
    );
    assert.equal((e['error'] as { code: string }).code, 'unauthenticated');
    const f = await c.ask(JSON.stringify({ id: 5, op: 'apps.list', args: {} }));
    assert.equal((f['error'] as { code: string }).code, 'unauthenticated', 'a missing token is refused');
    const ok = await c.ask(JSON.stringify({ id: 6, op: 'login', args: { user: 'bob', password: 'bob-dev' } }));
    assert.equal(ok['ok'], true, 'the same connection still serves');
    const wrong = await c.ask(JSON.stringify({ id: 7, op: 'login', args: { user: 'bob', password: 'nope' } }));
    assert.match((wrong['error'] as { message: string }).message, /user name or password is not correct/);
  } finally {
    c.ws.close();
  }
});

test('an oversized frame closes that connection only; the daemon keeps serving and nothing is lost', async () => {
  const before = (await admin.listJobs({ limit: 10_000 })) as { jobs: unknown[] };
  const c = await raw();
  c.ws.send(Buffer.alloc(API_FRAME_BYTES_MAX + 1, 0x20));
  const code = await c.closed;
  assert.equal(code, 1009, 'closed with "message too big"');
  const afterJobs = (await admin.listJobs({ limit: 10_000 })) as { jobs: unknown[] };
  assert.equal(afterJobs.jobs.length, before.jobs.length);
});

test('the role API accepts the app scope type; the grant takes effect through the replicated configuration', async () => {
  await refused(bob.submit({ app: 'mpich', tasks: 2, command: ['true'] }), 'forbidden', /app:use/);
  const basic = [
    { name: 'queue:submit', type: 'queue' as const, values: ['normal', 'priority'] },
    { name: 'app:view', type: 'app' as const, values: ['all'] },
    { name: 'job:view' },
  ];
  const r = (await admin.call('roles.set', {
    name: 'basic_user',
    permissions: [...basic, { name: 'app:use', type: 'app', values: ['python', 'mpich'] }],
  })) as { action: string };
  assert.equal(r.action, 'replaced');
  const ok = (await bob.submit({ app: 'mpich', tasks: 2, command: ['true'] })) as { jobId: number };
  assert.ok(ok.jobId > 0, 'the new app:use grant on mpich is in force');
  const list = await admin.call('roles.list', {});
  assert.deepEqual(
    list.roles.find((x) => x.name === 'basic_user')?.grants.find((g) => g.permission === 'app:use'),
    { permission: 'app:use', scopeType: 'app', values: ['python', 'mpich'] },
  );
  const created = (await admin.call('roles.set', {
    name: 'viewer',
    permissions: [{ name: 'app:view', type: 'app', values: ['all'] }],
  })) as { action: string };
  assert.equal(created.action, 'created');
  // A grant naming an alias grants on its profile (the rename workflow; the upgrade warns about it).
  await admin.call('roles.set', {
    name: 'old_name',
    permissions: [{ name: 'app:use', type: 'app', values: ['openfoam-old'] }],
  });
  const roles = await admin.call('roles.list', {});
  assert.deepEqual(roles.roles.find((x) => x.name === 'old_name')?.grants[0]?.values, ['openfoam']);
  assert.equal(((await admin.call('roles.delete', { name: 'old_name' })) as { action: string }).action, 'deleted');
  await refused(bob.call('roles.set', { name: 'x', permissions: [] }), 'forbidden', /cluster:admin/);
  assert.equal(((await admin.call('roles.delete', { name: 'viewer' })) as { action: string }).action, 'deleted');
  await admin.call('roles.set', {
    name: 'basic_user',
    permissions: [...basic, { name: 'app:use', type: 'app', values: ['python'] }],
  });
  await refused(bob.submit({ app: 'mpich', tasks: 2, command: ['true'] }), 'forbidden', /app:use/);
});

test('the Prometheus endpoint reports term, role, indexes, apply lag, fsync latency and jobs by state', async () => {
  const text = await (await fetch(`http://${cluster.addresses()[0]}/metrics`)).text();
  for (const re of [
    /^xce_raft_term\{node="1"\} [1-9]/m,
    /^xce_raft_role\{node="1"\} 3$/m,
    /^xce_raft_commit_index\{node="1"\} \d+/m,
    /^xce_raft_applied_index\{node="1"\} \d+/m,
    /^xce_raft_apply_lag_entries\{node="1"\} \d+/m,
    /^xce_wal_fsync_seconds_count\{node="1"\} [1-9]/m,
    /^xce_jobs\{state="PEND",node="1"\} \d+/m,
    /^xce_raft_proposals_total\{node="1"\} [1-9]/m,
  ]) {
    assert.match(text, re);
  }
});
