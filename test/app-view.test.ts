// app:view end to end (issue 21 item 6), with real processes: a controller, a worker that runs the
// job, and xcecli as a user runs it. dave may see every job (job:view) but holds app:view only on
// python: another user's job with the `secretapp` profile shows him the job, never the profile's
// values, in --json as in human output; and his refusals do not tell which profiles exist.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { hashPassword } from '../daemon/auth.js';
import { cliHome, runCli, type CliRun } from '../testing/e2e.js';
import { startWithProfiles } from '../testing/profile-cluster.js';

/** Values of the profile that only its viewers may see. */
const SECRET_ENV_NAME = 'SECRET_LICENSE_TOKEN';
const SECRET_ENV_VALUE = 's3cr3t-9f8e7d6c';
const SECRET_PRE = 'secret-pre-marker';
const SECRET_POST = 'secret-post-marker';

/** The profile the tests are about (an applications.yaml entry). */
const SECRET_PROFILE = `
  - name: secretapp
    description: "a profile with a secret in its env"
    launch_type: serial
    resreq: "select[x86_64]"
    limits: { runtime: 1h }
    env: { ${SECRET_ENV_NAME}: ${SECRET_ENV_VALUE} }
    pre_exec: "true ${SECRET_PRE}"
    post_exec: "true ${SECRET_POST}"
    job_pre_post_exec: allow
`;

let cluster: TestCluster;
let alice: XceClient;
let homes: Record<'alice' | 'dave', string>;

before(async () => {
  const daveHash = await hashPassword('dave-dev', 1024);
  cluster = await startWithProfiles(SECRET_PROFILE, {
    'rbac.yaml': (t) =>
      t
        .replace('values: [openfoam, mpich]', 'values: [openfoam, mpich, secretapp]')
        .replace(
          'bindings:',
          `  - name: auditor\n    permissions:\n      - { name: job:view }\n      - { name: app:view, type: app, values: [python] }\nbindings:\n  - { role: auditor, users: [dave] }`,
        ),
    'users.yaml': (t) => `${t.trimEnd()}\n  - name: dave\n    groups: []\n    password: "${daveHash}"\n`,
  });
  alice = await cluster.client('alice');
  homes = { alice: cliHome('alice'), dave: cliHome('dave') };
  for (const u of ['alice', 'dave'] as const)
    assert.equal(xcecli(u, ['login', '-u', u, '--password-stdin'], `${u}-dev\n`).code, 0);
});

after(async () => {
  await cluster.stop();
});

const xcecli = (user: 'alice' | 'dave', args: string[], input?: string): CliRun =>
  runCli(cluster, homes[user], 'xcecli', args, input);

test("jobs show --json of another user's job: the job, none of its profile's values", async () => {
  const sub = (await alice.submit({ app: 'secretapp', env: { MY_CASE: 'pipe' }, command: ['sleep', '120'] })) as {
    jobId: number;
  };
  const id = sub.jobId;
  // Dispatched, so the frozen record (which holds the profile's env and pre/post-exec) exists too.
  await until(
    `job ${id} to be dispatched`,
    async () => ((await alice.call('jobs.show', { id })) as { record: unknown }).record !== null || undefined,
    30_000,
  );

  const own = xcecli('alice', ['jobs', 'show', String(id), '--json']);
  assert.equal(own.code, 0, own.err);
  assert.ok(own.out.includes(SECRET_ENV_VALUE), 'the owner sees her job whole (so the check below could see a leak)');

  const json = xcecli('dave', ['jobs', 'show', String(id), '--json']);
  assert.equal(json.code, 0, json.err);
  const all = json.out + json.err;
  for (const s of [SECRET_ENV_VALUE, SECRET_ENV_NAME, SECRET_PRE, SECRET_POST, 'x86_64'])
    assert.ok(!all.includes(s), `${s} must not appear:\n${all}`);
  const d = JSON.parse(json.out) as Record<string, unknown>;
  assert.deepEqual([d['id'], d['user'], d['queue']], [id, 'alice', 'normal']);
  assert.ok(d['state'] === 'RUN' || d['state'] === 'DONE' || d['state'] === 'EXIT', String(d['state']));
  assert.equal(d['profileValuesHidden'], 'hidden: no app:view on profile secretapp');
  assert.match(JSON.stringify(d['env']), /MY_CASE/, "the job's own env stays");

  const human = xcecli('dave', ['jobs', 'show', String(id)]);
  assert.equal(human.code, 0, human.err);
  for (const s of [SECRET_ENV_VALUE, SECRET_ENV_NAME, SECRET_PRE, SECRET_POST])
    assert.ok(!(human.out + human.err).includes(s), `${s} must not appear:\n${human.out}`);
  assert.match(human.out, /^Profile +secretapp +\(hidden: no app:view on profile secretapp\)$/m);

  await alice.call('jobs.kill', { id });
});

test("dave's refusals for a hidden profile read as for one that does not exist", () => {
  const hidden = xcecli('dave', ['--json', 'jobs', 'list', '--app', 'openfoam']);
  const missing = xcecli('dave', ['--json', 'jobs', 'list', '--app', 'nosuchapp']);
  assert.deepEqual([hidden.code, missing.code], [1, 1]);
  assert.deepEqual(JSON.parse(hidden.out), {
    ok: false,
    error: { code: 'not-found', message: 'application profile openfoam is not defined' },
  });
  assert.deepEqual(JSON.parse(missing.out), {
    ok: false,
    error: { code: 'not-found', message: 'application profile nosuchapp is not defined' },
  });
  const alias = xcecli('dave', ['apps', 'show', 'openfoam-old']);
  assert.equal(alias.code, 1);
  assert.equal(alias.err, 'xcecli: application profile openfoam-old is not defined\n');
  const shown = xcecli('dave', ['--json', 'apps', 'list']);
  assert.deepEqual(
    (JSON.parse(shown.out) as { apps: Array<{ name: string }> }).apps.map((a) => a.name),
    ['python'],
  );
});
