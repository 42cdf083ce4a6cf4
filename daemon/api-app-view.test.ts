// Issue 21 items 6 and 8 on one node whose Raft is a stand-in (propose = apply at the next index):
// app:view governs a profile's values wherever they appear (jobs show / list of another user's
// job, apps list / show), a refusal never tells which profiles exist, and every error answer
// carries the request id and a code, never an internal message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiServer } from './api-server.js';
import { WRITE_OPS, type Op } from '../api/protocol.js';
import { TokenAuthority } from './auth.js';
import { createLogger } from './log.js';
import { testClusterFiles, type TestClusterOptions } from '../testing/test-cluster.js';
import { StandInNode, standInApi, T0 } from '../testing/api-node.js';

const SECRET = new TextEncoder().encode('api-app-view-test-secret-0123456789abcdef');

/** olga: job:view (sees every job) and app:view on serial only; no app:view on openfoam. */
const AUDITOR: TestClusterOptions['extraRoles'] = [
  {
    name: 'auditor',
    permissions: ['{ name: job:view }', '{ name: app:view, type: app, values: [serial] }'],
    users: ['olga'],
  },
];

type Answer = Awaited<ReturnType<ApiServer['handle']>>;

async function setup(o: TestClusterOptions = { extraRoles: AUDITOR }) {
  const node = StandInNode.configured(testClusterFiles(o));
  const tokens = new TokenAuthority(SECRET, 'testcluster');
  const logged: string[] = [];
  const log = createLogger({ component: 'api' }, { sink: { write: (l) => void logged.push(l) }, format: 'json' });
  const api = standInApi(node, testClusterFiles(o), tokens, () => T0 + 60_000, log);
  const tokenOf = new Map<string, string>();
  for (const u of ['alice', 'bob', 'carol', 'olga', 'root']) tokenOf.set(u, await tokens.issue(u));
  let id = 100;
  let seq = 0;
  const call = (user: string, op: string, args: Record<string, unknown>): Promise<Answer> =>
    api.handle(
      JSON.stringify({
        id: ++id,
        op,
        token: tokenOf.get(user),
        args,
        ...(WRITE_OPS.has(op as Op) ? { session: { client: `client-${user}-00001`, seq: ++seq } } : {}),
      }),
    );
  const ok = async (user: string, op: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const r = await call(user, op, args);
    assert.equal(r.ok, true, JSON.stringify(r));
    return (r as { result: Record<string, unknown> }).result;
  };
  return { node, api, call, ok, logged };
}

function error(r: Answer): { code: string; message: string } {
  assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
  return (r as { error: { code: string; message: string } }).error;
}

/** Every value of openfoam's own (test-cluster.ts): none may reach a viewer without app:view on it. */
const FOAM_VALUES = [
  /FOAM_INST_DIR/,
  /\/opt\/openfoam/,
  /pre\.sh/,
  /post\.sh/,
  /select\[ib\]/,
  /license_foam/,
  /openmpi/,
  /86400/,
  /128/,
];

async function aliceFoamJob(
  ok: (user: string, op: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>,
): Promise<number> {
  const r = await ok('alice', 'jobs.submit', {
    job: {
      app: 'openfoam',
      name: 'case1',
      env: { MYVAR: 'mine' },
      resreq: 'select[mem>1000]',
      limits: { memory: '4G' },
      command: ['./foam.sh'],
    },
  });
  return r['jobId'] as number;
}

test('jobs show: a viewer with job:view but no app:view sees the job but none of its profile values, pending or dispatched', async () => {
  const { node, ok } = await setup();
  const id = await aliceFoamJob(ok);
  for (const phase of ['pending', 'dispatched']) {
    if (phase === 'dispatched') node.dispatch(id);
    const full = await ok('alice', 'jobs.show', { id });
    assert.equal(full['profileValuesHidden'], null, 'the owner sees her own job whole');
    for (const re of [/FOAM_INST_DIR/, /select\[ib\]/, /license_foam/])
      assert.match(JSON.stringify(full), re, `${phase}: the owner sees ${re}`);
    assert.equal((await ok('root', 'jobs.show', { id }))['profileValuesHidden'], null, 'cluster_admin sees it whole');

    const seen = await ok('olga', 'jobs.show', { id });
    const text = JSON.stringify(seen);
    for (const re of FOAM_VALUES) assert.doesNotMatch(text, re, `${phase}: ${re} must not show: ${text}`);
    assert.equal(seen['profileValuesHidden'], 'hidden: no app:view on profile openfoam');
    // The job itself, and its own values, stay.
    assert.deepEqual(
      [seen['id'], seen['user'], seen['queue'], seen['name'], seen['command']],
      [id, 'alice', 'normal', 'case1', ['./foam.sh']],
    );
    assert.deepEqual(seen['profile'], { recorded: 'openfoam', resolved: null, display: 'openfoam', label: null });
    assert.deepEqual(
      (seen['env'] as Array<{ value: { name: string } }>).map((e) => e.value.name),
      ['MYVAR'],
    );
    assert.deepEqual(
      (seen['resreq'] as Array<{ text: string }>).map((t) => t.text),
      ['select[mem>1000]'],
    );
    assert.equal(seen['launchType'], null);
    if (phase === 'pending') {
      assert.equal(seen['state'], 'PEND');
      assert.equal(seen['pendReason'], '(hidden: no app:view on profile openfoam)');
    } else {
      assert.equal(seen['state'], 'RUN');
      const rec = seen['record'] as Record<string, unknown>;
      assert.deepEqual(rec['hosts'], [{ host: 'n1', tasks: 1 }]);
      assert.deepEqual(
        [rec['profile'], rec['profileHash'], rec['launchType'], rec['profilePreExec'], rec['profilePostExec']],
        [null, null, null, null, null],
      );
      assert.deepEqual(
        Object.keys(rec['limits'] as object),
        ['memory_bytes'],
        "the job's own lower limit stays; the profile's runtime maximum goes",
      );
      assert.deepEqual([seen['recordLabel'], seen['profileChangedSinceDispatch']], [null, null]);
      assert.equal(typeof seen['dispatchTimeMs'], 'number');
    }
  }
  // A profile olga may view is shown whole to her, on another user's job too.
  const serial = (await ok('alice', 'jobs.submit', { job: { app: 'serial', command: ['x'] } }))['jobId'] as number;
  const whole = await ok('olga', 'jobs.show', { id: serial });
  assert.equal(whole['profileValuesHidden'], null);
  assert.equal((whole['profile'] as { resolved: string }).resolved, 'serial');
});

test('jobs show hides a pend reason that quotes the profile, and names an alias-recorded profile by its recorded name only', async () => {
  const { node, ok } = await setup();
  const id = (
    await ok('alice', 'jobs.submit', { job: { app: 'openfoam', resreq: 'rusage[license_foam=1]', command: ['x'] } })
  )['jobId'] as number;
  node.config(testClusterFiles({ extraRoles: AUDITOR, foamLicenses: 2 })); // the profile no longer admits the job
  assert.match((await ok('alice', 'jobs.show', { id }))['pendReason'] as string, /license_foam=2/);
  const seen = await ok('olga', 'jobs.show', { id });
  assert.equal(seen['pendReason'], '(hidden: no app:view on profile openfoam)');
  const listed = ((await ok('olga', 'jobs.list', {}))['jobs'] as Array<Record<string, unknown>>).find(
    (j) => j['id'] === id,
  )!;
  assert.equal(listed['pendReason'], '(hidden: no app:view on profile openfoam)');
  assert.equal(listed['app'], 'openfoam');
  // openfoam renamed to foam, openfoam kept as an alias: the job recorded `openfoam`; its target
  // (foam) is not named to olga.
  node.config(testClusterFiles({ extraRoles: AUDITOR, renameOpenfoamTo: 'foam' }));
  const renamed = await ok('olga', 'jobs.show', { id });
  assert.doesNotMatch(JSON.stringify(renamed), /\bfoam\b/);
  assert.equal((renamed['profile'] as { display: string }).display, 'openfoam');
});

test('jobs list --app on a profile the user may not view is refused exactly as one that does not exist', async () => {
  const { call, ok } = await setup();
  // python exists but olga may not view it; nosuch does not exist; no job names either.
  const hidden = error(await call('olga', 'jobs.list', { app: 'python' }));
  const missing = error(await call('olga', 'jobs.list', { app: 'nosuch' }));
  assert.deepEqual(hidden, { code: 'not-found', message: 'application profile python is not defined' });
  assert.deepEqual(missing, { code: 'not-found', message: 'application profile nosuch is not defined' });
  assert.deepEqual(
    (await ok('olga', 'jobs.list', { app: 'serial' }))['jobs'],
    [],
    'a profile she may view, with no jobs: an empty list',
  );
  assert.deepEqual((await ok('root', 'jobs.list', { app: 'python' }))['jobs'], [], 'the admin may view python');
  // bob may see only his own jobs and view no profile: alice's openfoam job does not make it known to him.
  await aliceFoamJob(ok);
  assert.deepEqual(error(await call('bob', 'jobs.list', { app: 'openfoam' })), {
    code: 'not-found',
    message: 'application profile openfoam is not defined',
  });
  // A job olga may see names openfoam (its APP column shows it): the filter works for her.
  const jobs = (await ok('olga', 'jobs.list', { app: 'openfoam' }))['jobs'] as Array<{ app: string }>;
  assert.deepEqual(
    jobs.map((j) => j.app),
    ['openfoam'],
  );
});

test('apps show of a hidden profile or alias answers as for one that does not exist, never naming the target', async () => {
  const { call, ok } = await setup();
  assert.deepEqual(error(await call('olga', 'apps.show', { name: 'nosuch' })), {
    code: 'not-found',
    message: 'application profile nosuch is not defined',
  });
  assert.deepEqual(error(await call('olga', 'apps.show', { name: 'python' })), {
    code: 'not-found',
    message: 'application profile python is not defined',
  });
  assert.deepEqual(error(await call('olga', 'apps.show', { name: 'openfoam-old' })), {
    code: 'not-found',
    message: 'application profile openfoam-old is not defined',
  });
  assert.equal((await ok('olga', 'apps.show', { name: 'serial' }))['name'], 'serial');
  const admin = await ok('root', 'apps.show', { name: 'openfoam-old' });
  assert.deepEqual([admin['name'], admin['recordedAs']], ['openfoam', 'openfoam-old']);
});

test('apps list lists only viewable profiles and names the default only when it is one of them', async () => {
  const { ok } = await setup();
  const olga = await ok('olga', 'apps.list', {});
  assert.deepEqual(
    (olga['apps'] as Array<{ name: string }>).map((a) => a.name),
    ['serial'],
  );
  assert.equal(olga['defaultApplication'], 'serial');
  const carol = await ok('carol', 'apps.list', {});
  assert.deepEqual(carol['apps'], []);
  assert.equal(carol['defaultApplication'], null);
  assert.equal(((await ok('root', 'apps.list', {}))['apps'] as unknown[]).length, 3);
});

test('submit: a profile the user may neither use nor view is refused in the not-defined words; one they may view is refused as not allowed', async () => {
  const neither = await setup();
  const asNosuch = error(await neither.call('carol', 'jobs.submit', { job: { app: 'nosuch', command: ['x'] } }));
  const asFoam = error(await neither.call('carol', 'jobs.submit', { job: { app: 'openfoam', command: ['x'] } }));
  const asAlias = error(await neither.call('carol', 'jobs.submit', { job: { app: 'openfoam-old', command: ['x'] } }));
  assert.deepEqual(asNosuch, { code: 'rejected', message: 'application profile nosuch is not defined' });
  assert.deepEqual(asFoam, { code: 'rejected', message: 'application profile openfoam is not defined' });
  assert.deepEqual(asAlias, { code: 'rejected', message: 'application profile openfoam-old is not defined' });
  const dry = error(
    await neither.call('carol', 'jobs.submit', { job: { app: 'openfoam-old', command: ['x'] }, dryRun: true }),
  );
  assert.deepEqual(dry, asAlias, 'the dry run answers the same');

  const viewer = await setup({
    extraRoles: [
      { name: 'foam_viewer', permissions: ['{ name: app:view, type: app, values: [openfoam] }'], users: ['carol'] },
    ],
  });
  const e = error(await viewer.call('carol', 'jobs.submit', { job: { app: 'openfoam-old', command: ['x'] } }));
  assert.equal(e.code, 'forbidden');
  assert.match(e.message, /not allowed app:use on application profile openfoam$/);
});

test('submit without --app: a default the user may neither use nor view is refused without naming it', async () => {
  const { call } = await setup({ defaultApplication: 'python' });
  const e = error(await call('carol', 'jobs.submit', { job: { command: ['x'] } }));
  assert.deepEqual(e, {
    code: 'forbidden',
    message: "user carol may not use the cluster's default application profile; name one with --app",
  });
  assert.doesNotMatch(e.message, /python/);
});

test('restart by an operator of a job whose profile they may neither use nor view: the not-defined words', async () => {
  const { node, ok, call } = await setup({
    extraRoles: [
      {
        name: 'auditor',
        permissions: ['{ name: job:view }', '{ name: queue:submit, type: queue, values: [normal] }'],
        users: ['olga'],
      },
    ],
  });
  const id = await aliceFoamJob(ok);
  node.dispatch(id);
  node.fact({
    kind: 'status',
    jobId: id,
    runNumber: 1,
    status: { type: 'finished', exitCode: 0, signal: null, reason: null, timeMs: T0 },
  });
  const r = await call('olga', 'jobs.restart', { id });
  assert.deepEqual(error(r), { code: 'rejected', message: 'application profile openfoam is not defined' });
});

// ---- error hygiene ----

test('an operation named after an Object.prototype property is an unknown operation, answered with the request id', async () => {
  const { api } = await setup();
  for (const [i, op] of [
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '__defineGetter__',
  ].entries()) {
    const r = await api.handle(JSON.stringify({ id: 40 + i, op, args: {} }));
    assert.equal(r.id, 40 + i, JSON.stringify(r));
    const e = error(r);
    assert.equal(e.code, 'unknown-op', JSON.stringify(r));
    assert.ok(e.message.startsWith(`unknown operation "${op}"`), e.message);
  }
});

test('an unexpected exception answers `internal` with a reference, never its text; the log has the details under that reference', async () => {
  const { node, call, logged } = await setup();
  node.failReads = new TypeError("cannot read properties of undefined (reading 'secret') at /srv/xce/state.ts:42");
  const r = await call('alice', 'jobs.list', {});
  assert.equal(r.id, 101);
  const e = error(r);
  assert.equal(e.code, 'internal');
  assert.doesNotMatch(e.message, /secret|state\.ts|TypeError|undefined/);
  const ref = /reference ([0-9a-f]{12})/.exec(e.message)?.[1];
  assert.ok(ref !== undefined, e.message);
  const line = logged.find((l) => l.includes(ref));
  assert.ok(line !== undefined, `logged: ${logged.join('\n')}`);
  assert.match(line, /secret/);
  assert.match(line, /"requestId":101/);
  assert.match(line, /"op":"jobs.list"/);
  // Two failures get two references.
  const again = error(await call('alice', 'jobs.list', {}));
  assert.notEqual(/reference ([0-9a-f]{12})/.exec(again.message)?.[1], ref);
});

test('every error answer carries the request id and a code', async () => {
  const { api } = await setup();
  const cases: Array<[string, number, string]> = [
    [JSON.stringify({ id: 7, op: 'jobs.show', args: { id: 'x' } }), 7, 'bad-request'],
    [JSON.stringify({ id: 8, op: 'jobs.show', args: { id: 1 } }), 8, 'unauthenticated'],
    [JSON.stringify({ id: 9, op: 'nope', args: {} }), 9, 'unknown-op'],
    [JSON.stringify({ id: 10, op: 'jobs.show', args: { id: 1 }, extra: 1 }), 10, 'bad-request'],
    ['{"id": 11, "op": ', -1, 'bad-frame'],
    [JSON.stringify({ id: 12, op: '__proto__', args: {} }), 12, 'unknown-op'],
  ];
  for (const [frame, id, code] of cases) {
    const r = await api.handle(frame);
    assert.equal(r.id, id, frame);
    assert.equal(error(r).code, code, frame);
  }
});
