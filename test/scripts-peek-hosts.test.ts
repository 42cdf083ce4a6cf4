// Issue 13, end to end with real controllers and workers: job scripts (an LSF script with #BSUB
// lines submitted unchanged runs, its output in out.%J; an unknown directive is refused naming its
// line; a script above 1 MiB is refused naming the limit), `xcecli jobs peek` (the output of a
// running job, refused for another user's job without job:view), `xcecli queues`, and
// `xceadmin hosts close|open` (a closed host gets no new job, reopened it gets them again).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { untilEnded, untilJob, workerHost } from '../testing/e2e.js';

const dist = new URL('../', import.meta.url).pathname;

let cluster: TestCluster;
const homes = new Map<string, string>();

before(async () => {
  cluster = await TestCluster.start({
    controllers: 1,
    workers: [workerHost('node01'), workerHost('node02')],
    // Without job:view, users see (and peek at) their own jobs only.
    edit: { 'rbac.yaml': (t) => t.replace('      - { name: job:view }\n', '') },
  });
  await cluster.waitForWorkers();
  for (const user of ['alice', 'bob', 'admin']) {
    homes.set(user, mkdtempSync(join(tmpdir(), `xce-h13-${user}-`)));
    const r = run(user, 'xcecli', ['login', '-u', user, '--password-stdin'], `${user}-dev\n`);
    assert.equal(r.code, 0, r.err);
  }
});
after(async () => {
  await cluster?.stop();
});

function run(user: string, bin: 'xcecli' | 'xceadmin', args: string[], input?: string, cwd?: string) {
  const r = spawnSync(process.execPath, [join(dist, 'cli', `${bin}.js`), ...args], {
    input: input ?? '',
    cwd: cwd ?? cluster.dir,
    encoding: 'utf8',
    env: {
      ...process.env,
      XCE_CONFIG_DIR: homes.get(user)!,
      XCE_CONTROLLERS: cluster.addresses().join(','),
      NO_COLOR: '1',
    },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

interface Details {
  state: string;
  record: { hosts: Array<{ host: string }> } | null;
}

const hostsOf = (d: Details): string[] => (d.record?.hosts ?? []).map((h) => h.host);

const LSF_SCRIPT = (dir: string): string => `#!/bin/sh
# An LSF job script, as it is: bsub < job.sh would run it.
#BSUB -J lsf-hello
#BSUB -n 1
#BSUB -q normal
#BSUB -R "select[ib]"
#BSUB -o out.%J
#BSUB -e err.%J
#BSUB -W 10
#BSUB -app python
#BSUB -cwd ${dir}
echo "hello from job $XCE_JOBID, args: $*"
echo "to stderr" >&2
`;

test('an #BSUB script submitted unchanged runs, its output in out.%J; stdin and #XCE work; an unknown directive is refused with its line', async () => {
  const dir = mkdtempSync(join(cluster.dir, 'scripts-'));
  writeFileSync(join(dir, 'job.sh'), LSF_SCRIPT(dir));
  const sub = run('alice', 'xcecli', ['--json', 'jobs', 'submit', 'job.sh', 'one', 'two'], undefined, dir);
  assert.equal(sub.code, 0, sub.err);
  const id = (JSON.parse(sub.out) as { jobId: number }).jobId;
  const alice = await cluster.client('alice');
  const done = await untilEnded<Details>(alice, id, 30_000);
  assert.equal(done.state, 'DONE', JSON.stringify(done));
  assert.equal(readFileSync(join(dir, `out.${id}`), 'utf8'), `hello from job ${id}, args: one two\n`);
  assert.equal(readFileSync(join(dir, `err.${id}`), 'utf8'), 'to stderr\n');
  const show = JSON.parse(run('alice', 'xcecli', ['--json', 'jobs', 'show', String(id)]).out) as Record<
    string,
    unknown
  >;
  assert.equal(JSON.stringify(show).includes('lsf-hello'), true, 'the #BSUB -J name is the job name');

  // `xcecli jobs submit < job.sh`: #XCE lines; the command line wins (-o here over the script's).
  const xce = `#!/bin/sh\n#XCE --app python -R "select[x86_64]"\n#XCE -o from-script.%J\necho "stdin script"\n`;
  const sub2 = run('alice', 'xcecli', ['--json', 'jobs', 'submit', '-o', `${dir}/stdin.%J.%I`], xce, dir);
  assert.equal(sub2.code, 0, sub2.err);
  const id2 = (JSON.parse(sub2.out) as { jobId: number }).jobId;
  assert.equal((await untilEnded<Details>(alice, id2, 30_000)).state, 'DONE');
  assert.equal(readFileSync(join(dir, `stdin.${id2}.0`), 'utf8'), 'stdin script\n');
  assert.equal(existsSync(join(dir, `from-script.${id2}`)), false, 'the command line -o wins');

  // Refused before anything is sent: an unknown #XCE option (named, with its line), an unsupported #BSUB one, a big script.
  const before = (await alice.listJobs({})).jobs.length;
  writeFileSync(join(dir, 'bad.sh'), '#!/bin/sh\n#XCE -n 1\n#XCE --frobnicate 3\necho no\n');
  const bad = run('alice', 'xcecli', ['jobs', 'submit', 'bad.sh'], undefined, dir);
  assert.equal(bad.code, 2, bad.err);
  assert.match(bad.err, /^xcecli: bad\.sh:3: #XCE --frobnicate: unknown option/);
  writeFileSync(join(dir, 'mem.sh'), '#!/bin/sh\n#BSUB -M 4000\necho no\n');
  const mem = run('alice', 'xcecli', ['jobs', 'submit', 'mem.sh'], undefined, dir);
  assert.equal(mem.code, 2, mem.err);
  assert.match(mem.err, /mem\.sh:2: #BSUB -M is not supported by xcecli/);
  writeFileSync(join(dir, 'big.sh'), `#!/bin/sh\n#${'x'.repeat(1024 * 1024)}\n`);
  const big = run('alice', 'xcecli', ['jobs', 'submit', 'big.sh'], undefined, dir);
  assert.equal(big.code, 2, big.err);
  assert.match(big.err, /larger than the limit of 1048576 bytes \(1 MiB\)/);
  assert.equal((await alice.listJobs({})).jobs.length, before, 'no job was submitted by a refused script');
});

test('jobs peek shows the output of a running job (and follows it), and is refused for another user without job:view', async () => {
  const dir = mkdtempSync(join(cluster.dir, 'peek-'));
  const script =
    '#!/bin/sh\n#XCE --app python -o peek.%J\ni=0\nwhile [ $i -lt 600 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done\n';
  writeFileSync(join(dir, 'ticks.sh'), script);
  const sub = run('alice', 'xcecli', ['--json', 'jobs', 'submit', 'ticks.sh'], undefined, dir);
  assert.equal(sub.code, 0, sub.err);
  const id = (JSON.parse(sub.out) as { jobId: number }).jobId;
  const alice = await cluster.client('alice');
  await untilJob<Details>(alice, id, 'the job to run', (d) => d.state === 'RUN', 30_000);
  const first = await until(
    'peek to show output',
    async () => {
      const r = run('alice', 'xcecli', ['jobs', 'peek', String(id)]);
      return r.code === 0 && r.out.includes('tick 0\n') ? r : undefined;
    },
    30_000,
    200,
  );
  assert.match(first.out, /^tick 0\ntick 1\n/);
  const follow = run('alice', 'xcecli', ['--json', 'jobs', 'peek', String(id), '--follow', '--for', '2']);
  assert.equal(follow.code, 0, follow.err);
  const pieces = follow.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { offset: number; text: string; host: string });
  assert.ok(pieces.length >= 2, `--follow printed new output as it came: ${follow.out}`);
  const text = pieces.map((p) => p.text).join('');
  const last = Number(/tick (\d+)\n$/.exec(text)?.[1]);
  assert.ok(last > 0 && text.endsWith(`tick ${last}\n`), 'followed to the newest line');
  assert.ok(['node01', 'node02'].includes(pieces[0]!.host));

  const bob = run('bob', 'xcecli', ['jobs', 'peek', String(id)]);
  assert.equal(bob.code, 1, bob.err);
  assert.match(
    bob.err,
    /job \d+ does not exist, or is another user's \(peeking at another user's job needs job:view\)/,
  );
  assert.equal(bob.out, '');
  const admin = run('admin', 'xcecli', ['jobs', 'peek', String(id), '--bytes', '8']);
  assert.equal(admin.code, 0, admin.err);
  assert.ok(admin.out.length <= 8 && admin.out.length > 0, `the tail is bounded: ${JSON.stringify(admin.out)}`);

  assert.equal(run('alice', 'xcecli', ['jobs', 'kill', String(id)]).code, 0);
  assert.equal((await untilEnded<Details>(alice, id, 30_000)).state, 'EXIT');
  const ended = run('alice', 'xcecli', ['jobs', 'peek', String(id)]);
  assert.equal(ended.code, 1);
  assert.match(ended.err, /has finished \(EXIT\): its output is in peek\.%J/);
});

test('queues list and show; a closed host gets no new job, reopened it gets them; the reason is shown', async () => {
  const q = JSON.parse(run('alice', 'xcecli', ['--json', 'queues']).out) as {
    queues: Array<{ name: string; priority: number; canSubmit: boolean; deprecations: string[] }>;
  };
  assert.deepEqual(
    q.queues.map((x) => x.name),
    ['priority', 'normal', 'night'],
  );
  assert.equal(q.queues.find((x) => x.name === 'night')!.canSubmit, true); // alice is a cfd_user
  assert.equal(q.queues.find((x) => x.name === 'night')!.deprecations.length, 2);
  const show = run('bob', 'xcecli', ['queues', 'show', 'night']);
  assert.equal(show.code, 0, show.err);
  assert.match(show.out, /You submit   no \(no queue:submit on this queue\)/);
  const missing = run('bob', 'xcecli', ['queues', 'show', 'nosuch']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /queue nosuch is not defined/);

  assert.equal(run('alice', 'xceadmin', ['hosts', 'close', 'node01']).code, 1, 'closing needs cluster:admin');
  const close = run('admin', 'xceadmin', ['hosts', 'close', 'node01', '--reason', 'disk replacement']);
  assert.equal(close.code, 0, close.err);
  const hosts = run('alice', 'xcecli', ['hosts']);
  assert.match(hosts.out, /node01\s+closed/);
  assert.match(hosts.out, /node01: closed by admin: disk replacement \(since /);
  const hj = JSON.parse(run('alice', 'xcecli', ['--json', 'hosts']).out) as {
    hosts: Array<{ name: string; closed: { reason: string } | null }>;
  };
  assert.equal(hj.hosts.find((h) => h.name === 'node01')!.closed!.reason, 'disk replacement');

  const alice = await cluster.client('alice');
  const submit = async (): Promise<number> =>
    (await alice.submit({ app: 'python', command: ['sleep', '1'], cwd: cluster.dir })).jobId as number;
  const onClosed: number[] = [];
  for (let i = 0; i < 4; i++) onClosed.push(await submit());
  for (const id of onClosed) {
    const d = await untilEnded<Details>(alice, id, 30_000);
    assert.equal(d.state, 'DONE');
    assert.deepEqual(hostsOf(d), ['node02'], `job ${id} ran on the open host`);
  }
  assert.equal(run('admin', 'xceadmin', ['hosts', 'open', 'node01']).code, 0);
  assert.equal(run('admin', 'xceadmin', ['hosts', 'close', 'node02']).code, 0);
  const reopened: number[] = [];
  for (let i = 0; i < 2; i++) reopened.push(await submit());
  for (const id of reopened) assert.deepEqual(hostsOf(await untilEnded<Details>(alice, id, 30_000)), ['node01']);
  const openTwice = run('admin', 'xceadmin', ['hosts', 'open', 'node01']);
  assert.equal(openTwice.code, 1);
  assert.match(openTwice.err, /host node01 is not closed/);
  assert.equal(run('admin', 'xceadmin', ['hosts', 'open', 'node02']).code, 0);
});
