// Issue 13, end to end with three real controllers and two workers: `xcecli hosts show NAME` (like
// `bhosts -l`: status ok / closed with its reason / unavail / lost, slots used and total, memory,
// resources, the jobs running there, other users' jobs counted but not shown), `xcecli jobs show`
// with a job's script (its size and first lines; `--script` the whole), and `xcecli jobs peek`
// through a client that knows only a follower controller.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import { runCli, untilEnded, untilJob, workerHost, type CliRun } from '../testing/e2e.js';

let cluster: TestCluster;
const homes = new Map<string, string>();

before(async () => {
  cluster = await TestCluster.start({
    controllers: 3,
    hostLost_ms: 1_500,
    workers: [workerHost('node01'), workerHost('node02')],
    // Without job:view, users see their own jobs only (hosts show counts the others').
    edit: { 'rbac.yaml': (t) => t.replace('      - { name: job:view }\n', '') },
  });
  await cluster.waitForWorkers();
  for (const user of ['alice', 'bob', 'admin']) {
    homes.set(user, mkdtempSync(join(tmpdir(), `xce-h13d-${user}-`)));
    const r = run(user, 'xcecli', ['login', '-u', user, '--password-stdin'], { input: `${user}-dev\n` });
    assert.equal(r.code, 0, r.err);
  }
});
after(async () => {
  await cluster?.stop();
});

function run(
  user: string,
  bin: 'xcecli' | 'xceadmin',
  args: string[],
  o: { input?: string; cwd?: string; controllers?: string[] } = {},
): CliRun {
  const { input, cwd, controllers } = o;
  return runCli(cluster, homes.get(user)!, bin, args, input ?? '', {
    cwd: cwd ?? cluster.dir,
    ...(controllers !== undefined ? { controllers } : {}),
    timeout_ms: 60_000,
  });
}

interface Details {
  state: string;
  record: { hosts: Array<{ host: string }> } | null;
}

interface HostDetail {
  name: string;
  status: string | null;
  slots: number;
  slotsUsed: number;
  mem_bytes: number;
  closed: { reason: string | null; user: string } | null;
  resources: { booleans: string[]; numerics: Array<{ name: string; value: number; used: number }> };
  jobs: Array<{ id: number; label: string; user: string; state: string; tasks: number; name: string | null }>;
  otherJobs: number;
}

/** A 15-line job script that prints a tick every 0.1 s for a minute. */
const TICKS =
  '#!/bin/sh\n#XCE --app python -o ticks.%J\n#XCE -J ticker\n' +
  Array.from({ length: 10 }, (_, i) => `# comment line ${i + 4}\n`).join('') +
  'i=0\nwhile [ $i -lt 600 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done\n';

test('hosts show (jobs, resources, closed, lost); jobs show with its script; peek via a follower', async () => {
  const dir = mkdtempSync(join(cluster.dir, 'hs-'));
  writeFileSync(join(dir, 'ticks.sh'), TICKS);
  const sub = run('alice', 'xcecli', ['--json', 'jobs', 'submit', 'ticks.sh'], { cwd: dir });
  assert.equal(sub.code, 0, sub.err);
  const id = (JSON.parse(sub.out) as { jobId: number }).jobId;
  const alice = await cluster.client('alice');
  const running = await untilJob<Details>(alice, id, 'the job to run', (d) => d.state === 'RUN', 30_000);
  const host = running.record!.hosts[0]!.host;
  const other = host === 'node01' ? 'node02' : 'node01';

  // The host the job runs on: text and --json.
  const text = run('alice', 'xcecli', ['hosts', 'show', host]);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, new RegExp(`^Host +${host}\\nStatus +ok\\n`));
  assert.match(text.out, /\nSlots +1 used of 4 \(hosts\.yaml \d+, registered 4\)\n/);
  assert.match(text.out, /\nResources +ib x86_64 /);
  assert.match(text.out, new RegExp(`\\nJobs +1 running\\n  ${id} +RUN +alice +1 task\\(s\\)  ticker\\n`));
  const mine = JSON.parse(run('alice', 'xcecli', ['--json', 'hosts', 'show', host]).out) as HostDetail;
  assert.equal(mine.status, 'ok');
  assert.equal(mine.slotsUsed, 1);
  assert.deepEqual(
    mine.jobs.map((j) => [j.id, j.user, j.state, j.tasks]),
    [[id, 'alice', 'RUN', 1]],
  );
  assert.equal(mine.otherJobs, 0);
  assert.ok(mine.resources.booleans.includes('ib'));
  // Bob may not see alice's job: counted, not shown.
  const bobs = JSON.parse(run('bob', 'xcecli', ['--json', 'hosts', 'show', host]).out) as HostDetail;
  assert.deepEqual(bobs.jobs, []);
  assert.equal(bobs.otherJobs, 1);
  assert.match(run('bob', 'xcecli', ['hosts', 'show', host]).out, /\nJobs +none running \(and 1 of other users\)\n/);
  const missing = run('alice', 'xcecli', ['hosts', 'show', 'nosuch']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /host nosuch is not in hosts\.yaml/);
  assert.equal(missing.out, '');

  // jobs show: the script's size and first lines; --script the whole of it.
  const show = run('alice', 'xcecli', ['jobs', 'show', String(id)]);
  assert.equal(show.code, 0, show.err);
  const bytes = Buffer.byteLength(TICKS);
  assert.match(show.out, new RegExp(`\\nScript +${bytes} bytes, 15 line\\(s\\), first lines:\\n  \\| #!/bin/sh\\n`));
  assert.match(show.out, /\n {2}\| # comment line 10\n {2}\.\.\. 5 more line\(s\): xcecli jobs show ID --script\n/);
  assert.doesNotMatch(show.out, /while \[/);
  const whole = run('alice', 'xcecli', ['jobs', 'show', String(id), '--script']);
  assert.match(whole.out, /\n {2}\| while \[ \$i -lt 600 \]; do echo "tick \$i"; i=\$\(\(i\+1\)\); sleep 0\.1; done\n/);
  assert.doesNotMatch(whole.out, /more line/);
  const js = JSON.parse(run('alice', 'xcecli', ['--json', 'jobs', 'show', String(id), '--script']).out) as {
    script: { bytes: number; lines: number; head: string; text: string };
  };
  assert.equal(js.script.text, TICKS);
  assert.equal(js.script.bytes, bytes);
  assert.equal(js.script.lines, 15);
  const jn = JSON.parse(run('alice', 'xcecli', ['--json', 'jobs', 'show', String(id)]).out) as {
    script: Record<string, unknown>;
  };
  assert.equal(jn.script['text'], undefined, 'without --script, not the whole script');
  assert.equal((jn.script['head'] as string).split('\n').length, 10);
  // A command job has no script.
  const cmd = (await alice.submit({ app: 'python', command: ['true'], cwd: cluster.dir })).jobId as number;
  assert.doesNotMatch(run('alice', 'xcecli', ['jobs', 'show', String(cmd)]).out, /Script/);

  // jobs peek through a client that knows only a follower controller.
  const leader = await cluster.leader();
  const follower = [...cluster.ports.keys()].find((n) => n !== leader)!;
  const peeked = await until(
    'peek through a follower to show output',
    async () => {
      const r = run('alice', 'xcecli', ['jobs', 'peek', String(id)], { controllers: [cluster.address(follower)] });
      return r.code === 0 && r.out.startsWith('tick 0\n') ? r : undefined;
    },
    30_000,
    300,
  );
  assert.match(peeked.out, /^tick 0\ntick 1\n/);

  // Closed: the status and the reason.
  assert.equal(run('admin', 'xceadmin', ['hosts', 'close', host, '--reason', 'bad DIMM']).code, 0);
  const closed = run('alice', 'xcecli', ['hosts', 'show', host]);
  assert.match(
    closed.out,
    /\nStatus +closed \(ok\)\nClosed +by admin since \S+: bad DIMM \(xceadmin hosts open NAME\)\n/,
  );
  const cj = JSON.parse(run('alice', 'xcecli', ['--json', 'hosts', 'show', host]).out) as HostDetail;
  assert.deepEqual(cj.closed && [cj.closed.user, cj.closed.reason], ['admin', 'bad DIMM']);
  assert.equal(run('admin', 'xceadmin', ['hosts', 'open', host]).code, 0);

  // Lost: the other host's worker dies; unavail at once, lost after the host-lost timeout.
  await cluster.killWorker(other, 'SIGKILL');
  const lost = await until(
    `host ${other} to be lost`,
    async () => {
      const r = JSON.parse(run('alice', 'xcecli', ['--json', 'hosts', 'show', other]).out) as HostDetail;
      return r.status === 'lost' ? r : undefined;
    },
    30_000,
    300,
  );
  assert.equal(lost.slotsUsed, 0);
  assert.match(run('alice', 'xcecli', ['hosts']).out, new RegExp(`\\n${other} +lost `));

  assert.equal(run('alice', 'xcecli', ['jobs', 'kill', String(id)]).code, 0);
  assert.equal((await untilEnded<Details>(alice, id, 30_000)).state, 'EXIT');
});
