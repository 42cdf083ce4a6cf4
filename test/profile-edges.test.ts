// Issue 22 end to end, with real processes (a controller, a worker that runs the job, xcecli and
// xceadmin as people run them): the values `--dry-run` shows are the ones the job's dispatch record
// holds; a zero limit, a restated span and a task range that does not fit its field are refused,
// naming the value and the rule.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, repoRoot, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { cliHome, runCli, type CliRun } from '../testing/e2e.js';
import { startWithProfiles } from '../testing/profile-cluster.js';

/** The profile the tests are about (an applications.yaml entry). */
const CAPPED_PROFILE = `
  - name: capped
    launch_type: serial
    resreq: "select[x86_64] span[hosts=1]"
    tasks: { min: 1, max: 4 }
    limits: { runtime: 1h, memory: 1G, cpu: 1h }
    env: { OMP_NUM_THREADS: "1" }
    job_pre_post_exec: allow
`;

let cluster: TestCluster;
let alice: XceClient;
let home: string;

before(async () => {
  cluster = await startWithProfiles(CAPPED_PROFILE, {
    'rbac.yaml': (t) => t.replace('values: [python]', 'values: [python, capped]'),
  });
  alice = await cluster.client('alice');
  home = cliHome('edges');
  assert.equal(run('xcecli', ['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n').code, 0);
});

after(async () => {
  await cluster.stop();
});

const run = (bin: 'xcecli' | 'xceadmin', args: string[], input?: string): CliRun =>
  runCli(cluster, home, bin, args, input);

type Row = { name?: string; section?: string; text?: string; value?: string; origin: string };
const byText = (rows: Row[]) => rows.map((r) => JSON.stringify(r)).sort();

test('the dry run shows the values the dispatched record holds', async () => {
  // The job's output goes to a directory of its own, not the tree the test runs in.
  const work = mkdtempSync(join(tmpdir(), 'xce-edges-work-'));
  const flags = ['--app', 'capped', '-n', '2', '-R', 'select[mem>1000]', '-e', 'CASE=pipe', '-l', 'memory=512M'];
  flags.push('--cwd', work);
  const dry = run('xcecli', ['--json', 'jobs', 'submit', ...flags, '--dry-run', '--', '/bin/true']);
  assert.equal(dry.code, 0, dry.err);
  const shown = JSON.parse(dry.out) as {
    tasks: number;
    launchType: string;
    resreq: Row[];
    env: Row[];
    limits: Row[];
    profileLabel: string;
  };
  const sub = run('xcecli', ['--json', 'jobs', 'submit', ...flags, '--', '/bin/true']);
  assert.equal(sub.code, 0, sub.err);
  const id = (JSON.parse(sub.out) as { jobId: number }).jobId;
  await until(
    `job ${id} to be dispatched`,
    async () => ((await alice.call('jobs.show', { id })) as { record: unknown }).record !== null || undefined,
    60_000,
  );
  const show = run('xcecli', ['--json', 'jobs', 'show', String(id)]);
  assert.equal(show.code, 0, show.err);
  const d = JSON.parse(show.out) as {
    recordLabel: string;
    record: {
      tasks: number;
      launchType: string;
      env: Array<{ value: { name: string; value: string }; origin: string }>;
      limits: Record<string, { value: number; origin: string }>;
    };
  };
  assert.equal(d.recordLabel, shown.profileLabel);
  assert.equal(d.record.tasks, shown.tasks);
  assert.equal(d.record.launchType, shown.launchType);
  assert.deepEqual(
    byText(d.record.env.map((e) => ({ name: e.value.name, value: e.value.value, origin: e.origin }))),
    byText(shown.env),
  );
  // The limits as numbers: 1h, 512M and 1h of the dry run are 3600 s, 536870912 bytes and 3600 s.
  assert.deepEqual(d.record.limits, {
    runtime_s: { value: 3600, origin: 'profile' },
    memory_bytes: { value: 512 * 1024 ** 2, origin: 'job' },
    cpu_s: { value: 3600, origin: 'profile' },
  });
  assert.deepEqual(
    shown.limits.map((l) => [l.name, l.value, l.origin]),
    [
      ['runtime', '1h', 'profile'],
      ['memory', '512M', 'job'],
      ['cpu', '1h', 'profile'],
    ],
  );
  const human = run('xcecli', ['jobs', 'show', String(id)]);
  for (const term of shown.resreq) assert.ok(human.out.includes(term.text as string), `${term.text} in\n${human.out}`);
});

test('a zero limit and a restated span are refused, naming the value and the rule', async () => {
  const zero = run('xcecli', ['jobs', 'submit', '--app', 'capped', '-l', 'runtime=0', '--dry-run', '--', '/bin/true']);
  assert.equal(zero.code, 2);
  assert.match(zero.err, /--limit runtime: a runtime limit of 0 would stop the job at once; give 1s or more/);
  // The controller refuses it too, for a client that does not check first.
  await assert.rejects(
    alice.submit({ app: 'capped', limits: { runtime: '0' }, command: ['/bin/true'] }),
    /job\.limits\.runtime: a runtime limit of 0 would stop the job at once/,
  );
  const span = run('xcecli', ['jobs', 'submit', '--app', 'capped', '-R', 'span[hosts=1]', '--', '/bin/true']);
  assert.equal(span.code, 1);
  assert.match(span.err, /job sets span\[hosts=1\], which application profile capped already sets/);
});

test("config build refuses a task range that does not fit its Cap'n Proto field, naming the field and the range", () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-edges-config-'));
  for (const f of ['xce.yaml', 'queues.yaml', 'resources.yaml', 'hosts.yaml', 'rbac.yaml', 'users.yaml'])
    writeFileSync(join(dir, f), readFileSync(join(repoRoot, 'configs', f), 'utf8'));
  writeFileSync(
    join(dir, 'applications.yaml'),
    readFileSync(join(repoRoot, 'configs', 'applications.yaml'), 'utf8').replace(
      'tasks: { min: 1, max: 1 }',
      'tasks: { min: 1, max: 99999999999 }',
    ),
  );
  const r = run('xceadmin', ['config', 'build', dir]);
  assert.equal(r.code, 1, r.out + r.err);
  assert.match(
    r.out + r.err,
    /applications\.yaml:\d+:\d+: error: python: tasks\.max: 99999999999 does not fit: TaskRange\.max \(schema\/profile\.capnp\) is a UInt32, so it takes a whole number from 1 to 4294967295/,
  );
});
