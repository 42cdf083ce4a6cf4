// Jobs actually run: one controller, real workers, real processes. The layers, the two
// environments, limits, pend reasons and the live re-merge after a profile upgrade.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { submitJob, untilEnded } from '../testing/e2e.js';

let cluster: TestCluster;
let alice: XceClient;
let admin: XceClient;
let work: string;

/** A serial profile whose outer layer records what it saw (the brief's openfoam, without MPI). */
function layersProfile(dir: string): string {
  const rec = (tag: string) =>
    `echo "${tag} XCE_JOBID=$XCE_JOBID APP_HOME=$APP_HOME MY_CASE=\${MY_CASE:-unset}" >> ${dir}/layers-$XCE_JOBID.log`;
  return `
  - name: layers
    description: "records its layers"
    launch_type: serial
    resreq: "select[ib]"
    env: { APP_HOME: /opt/app }
    limits: { runtime: 1h }
    pre_exec: '${rec('profile-pre')}'
    post_exec: '${rec('profile-post')}'
    job_pre_post_exec: allow
  - name: failing-pre
    launch_type: serial
    pre_exec: "exit 3"
`;
}

before(async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  work = mkdtempSync(join(tmpdir(), 'xce-jobs-'));
  mkdirSync(work, { recursive: true });
  cluster = await TestCluster.start({
    controllers: 1,
    schedulerGrace_ms: 200,
    edit: {
      'applications.yaml': (t) => `${t.trimEnd()}\n${layersProfile(work)}`,
      'rbac.yaml': (t) => t.replace('values: [openfoam, mpich]', 'values: [openfoam, mpich, layers, failing-pre]'),
    },
    workers: [
      { host: 'node01', slots: 8, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] },
      // A worker that switches to the submitter (root only): the submitters have no account here.
      { host: 'gpu01', slots: 2, bools: ['x86_64'], nums: { mem: 524288, gpu: 4 } },
    ],
  });
  [alice, admin] = await Promise.all([cluster.client('alice'), cluster.client('admin')]);
});

after(async () => {
  await cluster.stop();
});

interface Details {
  state: string;
  reason: string | null;
  pendReason: string | null;
  exitCode: number | null;
  record: { profilePreExec: string | null } | null;
  recordLabel: string | null;
  profileChangedSinceDispatch: boolean | null;
}

async function job(id: number): Promise<Details> {
  return (await alice.showJob(id)) as Details;
}

const finished = (id: number, limit_ms?: number): Promise<Details> => untilEnded(alice, id, limit_ms);

/** Submits a job of alice's (in the work directory unless it says otherwise). */
const submitted = (job: Parameters<XceClient['submit']>[0]): Promise<number> => submitJob(alice, { cwd: work, ...job });

test('xcecli jobs submit --app python -- echo hello runs to DONE with its output in its file', async () => {
  const out = join(work, 'hello.out');
  const d = await finished(
    await submitted({
      app: 'python',
      resreq: 'select[ib]',
      command: ['echo', 'hello'],
      stdout: out,
    }),
  );
  assert.equal(d.state, 'DONE', JSON.stringify(d));
  assert.equal(readFileSync(out, 'utf8'), 'hello\n');
});

test('the layers run in order: profile pre, job pre, job, job post, profile post; the outer layer never sees the job env', async () => {
  const jobId = await submitted({
    app: 'layers',
    env: { MY_CASE: 'cavity' },
    preExec: `echo "job-pre MY_CASE=$MY_CASE APP_HOME=$APP_HOME" >> ${work}/layers-$XCE_JOBID.log`,
    postExec: `echo "job-post MY_CASE=$MY_CASE" >> ${work}/layers-$XCE_JOBID.log`,
    command: ['sh', '-c', `echo "job MY_CASE=$MY_CASE APP_HOME=$APP_HOME" >> ${work}/layers-$XCE_JOBID.log`],
  });
  const d = await finished(jobId);
  assert.equal(d.state, 'DONE', JSON.stringify(d));
  const lines = readFileSync(join(work, `layers-${jobId}.log`), 'utf8')
    .trim()
    .split('\n');
  assert.deepEqual(lines, [
    `profile-pre XCE_JOBID=${jobId} APP_HOME=/opt/app MY_CASE=unset`,
    'job-pre MY_CASE=cavity APP_HOME=/opt/app',
    'job MY_CASE=cavity APP_HOME=/opt/app',
    'job-post MY_CASE=cavity',
    `profile-post XCE_JOBID=${jobId} APP_HOME=/opt/app MY_CASE=unset`,
  ]);
  assert.ok(d.recordLabel?.startsWith('layers@'), 'the frozen record carries the profile label');
});

test('a failing profile pre-exec fails the job with a reason naming the layer', async () => {
  const d = await finished(await submitted({ app: 'failing-pre', resreq: 'select[ib]', command: ['true'] }));
  assert.equal(d.state, 'EXIT');
  assert.match(d.reason ?? '', /profile pre-exec exited with code 3/);
});

test('a runtime limit kills the job with a reason saying so', async () => {
  const d = await finished(
    await submitted({
      app: 'python',
      resreq: 'select[ib]',
      limits: { runtime: '1s' },
      command: ['sleep', '30'],
    }),
  );
  assert.equal(d.state, 'EXIT');
  assert.match(d.reason ?? '', /runtime limit 1s reached/);
});

test('a job that no host can take pends with a reason a user understands', async () => {
  const jobId = await submitted({ app: 'python', resreq: 'select[aarch64]', command: ['true'] });
  const d = await until('a pend reason', async () => {
    const x = await job(jobId);
    return x.pendReason && x.pendReason !== 'waiting for the scheduler' ? x : undefined;
  });
  assert.equal(d.state, 'PEND');
  assert.match(d.pendReason ?? '', /aarch64/);
  await alice.call('jobs.kill', { id: jobId });
});

test("a profile removed by a live upgrade makes its pending jobs pend with the brief's reason; running ones keep their record; putting it back releases them", async () => {
  const running = (await alice.submit({ app: 'layers', command: ['sleep', '30'], cwd: work })) as { jobId: number };
  await until('the layers job to start', async () => (await job(running.jobId)).state === 'RUN');
  // A pending job under the same profile (it asks for a host that no worker offers).
  const pending = (await alice.submit({ app: 'layers', resreq: 'select[aarch64]', command: ['true'], cwd: work })) as {
    jobId: number;
  };
  await until('the pending job to have a placement reason', async () =>
    /aarch64/.test((await job(pending.jobId)).pendReason ?? ''),
  );

  const without = cluster.configFiles({
    'applications.yaml': (t) => t.replace(/\n  - name: layers[\s\S]*?(?=\n  - name: failing-pre)/, ''),
  });
  const up = await admin.call('config.upgrade', { files: without });
  assert.equal(up.applied, true);
  assert.deepEqual(
    up.inUse,
    [{ name: 'layers', isAlias: false, pendingJobs: 1 }],
    'the upgrade reply lists the removed profile still named by pending jobs, with counts',
  );
  assert.equal((await job(pending.jobId)).pendReason, 'application profile layers is not defined');
  await assert.rejects(
    alice.submit({ app: 'layers', command: ['true'] }),
    /application profile layers is not defined/,
    'new submits naming it are refused',
  );

  const runningNow = await job(running.jobId);
  assert.equal(runningNow.state, 'RUN', 'running jobs are unaffected');
  assert.equal(runningNow.profileChangedSinceDispatch, true, 'details say the profile changed since dispatch');
  assert.ok(runningNow.record?.profilePreExec?.includes('profile-pre'), 'the running job keeps its frozen record');

  await admin.call('config.upgrade', { files: cluster.configFiles() });
  await until('the pending job to be released from the missing-profile reason', async () =>
    /aarch64/.test((await job(pending.jobId)).pendReason ?? ''),
  );
  assert.equal((await job(running.jobId)).profileChangedSinceDispatch, false, 'the same profile is back: same hash');
  await alice.call('jobs.kill', { id: running.jobId });
  await alice.call('jobs.kill', { id: pending.jobId });
  const killed = await finished(running.jobId);
  assert.equal(killed.state, 'EXIT');
  assert.match(killed.reason ?? '', /killed by alice|SIGTERM|signal/i);
});

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const aliceExists = spawnSync('id', ['alice']).status === 0;

test(
  'a direct job whose execution user does not exist on the host fails at launch with a reason saying so',
  {
    skip: !isRoot
      ? 'needs a root worker (this test is not running as root, so the worker runs jobs as itself)'
      : aliceExists
        ? 'user alice exists on this machine'
        : false,
  },
  async () => {
    const d = await finished(await submitted({ app: 'python', resreq: 'select[gpu>0]', command: ['true'] }));
    assert.equal(d.state, 'EXIT');
    assert.match(d.reason ?? '', /execution user alice does not exist on host gpu01/);
  },
);

const hasMpirun = spawnSync('sh', ['-c', 'command -v mpirun']).status === 0;

test(
  'an MPI job on a host without a launcher fails at launch with a reason saying so',
  { skip: hasMpirun ? 'mpirun is installed on this machine' : false },
  async () => {
    const d = await finished(
      await submitted({
        app: 'mpich',
        tasks: 2,
        resreq: 'select[ib]',
        command: ['hostname'],
      }),
    );
    assert.equal(d.state, 'EXIT');
    assert.match(d.reason ?? '', /launch type mpich needs mpirun, which is not installed on host node01/);
  },
);

test('the alias rename workflow: rename with the old name as an alias, old jobs resolve through it, new submits record the target, dropping the alias makes the stragglers pend', async () => {
  // A pending job recorded under `layers` (it waits for a host no worker offers).
  const old = (await alice.submit({ app: 'layers', resreq: 'select[aarch64]', command: ['true'], cwd: work })) as {
    jobId: number;
  };
  const renamed = cluster.configFiles({
    'applications.yaml': (t) => t.replace('  - name: layers\n', '  - name: layers2\n    aliases: [layers]\n'),
    'rbac.yaml': (t) =>
      t.replace('values: [openfoam, mpich, layers, failing-pre]', 'values: [openfoam, mpich, layers2, failing-pre]'),
  });
  await admin.call('config.upgrade', { files: renamed });
  const shown = (await alice.showJob(old.jobId)) as { profile: { display: string; resolved: string } };
  assert.equal(shown.profile.display, 'layers2 (recorded as layers)');
  const fresh = (await alice.submit({ app: 'layers', command: ['true'], cwd: work, resreq: 'select[aarch64]' })) as {
    jobId: number;
    profile: string;
  };
  assert.equal(fresh.profile, 'layers2', 'a new submit naming the alias records the target');
  // Drop the alias while the old job still names it.
  const dropped = cluster.configFiles({
    'applications.yaml': (t) => t.replace('  - name: layers\n', '  - name: layers2\n'),
    'rbac.yaml': (t) =>
      t.replace('values: [openfoam, mpich, layers, failing-pre]', 'values: [openfoam, mpich, layers2, failing-pre]'),
  });
  const up = await admin.call('config.upgrade', { files: dropped });
  assert.deepEqual(up.inUse, [{ name: 'layers', isAlias: true, pendingJobs: 1 }]);
  assert.equal((await job(old.jobId)).pendReason, 'application profile layers is not defined');
  await admin.call('config.upgrade', { files: cluster.configFiles() });
  await alice.call('jobs.kill', { id: old.jobId });
  await alice.call('jobs.kill', { id: fresh.jobId });
});
