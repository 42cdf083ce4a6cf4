// Hold and release, suspend and resume, and job modify (`bmod`) with real controllers and a real
// worker: each is a replicated fact, and each shows in `jobs show` and `jobs history`. Suspend is
// checked on the job's process itself (/proc: stopped, then running again), modify against RBAC and
// the additive rule of the new profile, and the CLI's output, --json and exit codes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { ApiError } from '../cli/client.js';
import { runCli, submitJob, untilEnded, untilJob, workerHost, type CliRun } from '../testing/e2e.js';

/** The build this test is part of: the CLI run is its own. */

let cluster: TestCluster;
let alice: XceClient;
let bob: XceClient;
let admin: XceClient;
let work: string;
let home: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'xce-control-'));
  home = mkdtempSync(join(tmpdir(), 'xce-control-home-'));
  cluster = await TestCluster.start({ controllers: 3, schedulerGrace_ms: 200, workers: [workerHost('node01', 4)] });
  [alice, bob, admin] = await Promise.all([cluster.client('alice'), cluster.client('bob'), cluster.client('admin')]);
});

after(async () => {
  await cluster.stop();
});

interface Event {
  action: string;
  user: string | null;
  timeMs: number;
  detail: string | null;
}
interface Details {
  state: string;
  queue: string;
  pendReason: string | null;
  heldBy: string | null;
  tasks: number | null;
  profile: { recorded: string | null };
  events: Event[];
  modifications: { user: string | null; timeMs: number; changes: string }[];
}
interface History {
  events: { event: string; detail: string; timeMs: number | null }[];
}

const show = async (c: XceClient, id: number): Promise<Details> => (await c.showJob(id)) as unknown as Details;
const history = async (c: XceClient, id: number): Promise<History> =>
  (await c.call('jobs.history', { id })) as unknown as History;

/** The refusal a call ends with (it must be refused). */
async function refusal(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  assert.fail('the call was not refused');
}

function cli(args: string[], input?: string): CliRun {
  return runCli(cluster, home, 'xcecli', args, input, { timeout_ms: 60_000 });
}

/** A job that can never be placed (no host has that much memory): it stays pending for modify. */
const unplaceable = (job: Partial<Parameters<XceClient['submit']>[0]>): Promise<number> =>
  submitJob(alice, { command: ['true'], cwd: work, resreq: 'select[mem>99999999]', ...job });

/** The state of process `pid` as /proc tells it (`T`: stopped; `S`/`R`: running or sleeping). */
function procState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
}

test('jobs modify --app moves a pending job to another profile, recorded with who and when; conflicts and missing app:use are refused', async () => {
  const id = await unplaceable({ app: 'python' });
  const r = (await alice.call('jobs.modify', {
    id,
    changes: { app: 'mpich', tasks: 4, queue: 'night' },
  })) as unknown as { changes: string; user: string };
  assert.equal(r.user, 'alice');
  assert.match(r.changes, /--app python -> mpich/);
  assert.match(r.changes, /-q normal -> night/);
  assert.match(r.changes, /-n \(none\) -> 4/);
  const d = await show(alice, id);
  assert.equal(d.state, 'PEND');
  assert.equal(d.profile.recorded, 'mpich');
  assert.equal(d.queue, 'night');
  assert.equal(d.tasks, 4, 'the live merge uses the new values');
  assert.equal(d.modifications.length, 1);
  assert.equal(d.modifications[0]!.user, 'alice');
  assert.ok(d.modifications[0]!.timeMs > 0);

  // Back to python with -n 4: the job's own value conflicts with the profile's range, named.
  const conflict = await refusal(alice.call('jobs.modify', { id, changes: { app: 'python' } }));
  assert.equal(conflict.code, 'rejected');
  assert.match(conflict.message, /application profile python requires between 1 and 1 tasks/);
  // No app:use on pytorch-gpu (alice may view it, not use it).
  const noUse = await refusal(alice.call('jobs.modify', { id, changes: { app: 'pytorch-gpu', tasks: 1 } }));
  assert.equal(noUse.code, 'forbidden');
  assert.match(noUse.message, /app:use/);
  // bob may neither modify alice's job (no job:control) nor change it at all.
  const notOwner = await refusal(bob.call('jobs.modify', { id, changes: { tasks: 2 } }));
  assert.equal(notOwner.code, 'forbidden');
  const after = await show(alice, id);
  assert.equal(after.profile.recorded, 'mpich', 'a refused modify changes nothing');
  assert.equal(after.modifications.length, 1);

  const h = await history(alice, id);
  assert.ok(h.events.some((e) => e.event === 'modified' && /by alice: --app python -> mpich/.test(e.detail)));
  await alice.call('jobs.kill', { id });
});

test('hold keeps a job pending with "held by user U" (the owner or job:control only); release lets it run', async () => {
  const id = await unplaceable({ app: 'python' });
  const forbidden = await refusal(bob.call('jobs.hold', { id }));
  assert.equal(forbidden.code, 'forbidden');
  await admin.call('jobs.hold', { id }); // an administrator may hold any job
  const held = await show(alice, id);
  assert.equal(held.state, 'PEND');
  assert.equal(held.heldBy, 'admin');
  assert.equal(held.pendReason, 'held by user admin');
  const list = (await alice.call('jobs.list', { state: 'PEND' })) as unknown as {
    jobs: { id: number; pendReason: string | null }[];
  };
  assert.equal(list.jobs.find((j) => j.id === id)?.pendReason, 'held by user admin');
  const again = await refusal(alice.call('jobs.hold', { id }));
  assert.match(again.message, /already held by user admin/);

  // While held, a modify to something placeable does not make it run; release does.
  await alice.call('jobs.modify', { id, changes: { resreq: 'select[mem>1000]' } });
  // A job submitted after it runs and ends: the scheduler has had its passes, and left the held one.
  const later = await submitJob(alice, { app: 'python', command: ['true'], cwd: work });
  assert.equal((await untilEnded<Details>(alice, later)).state, 'DONE');
  assert.equal((await show(alice, id)).state, 'PEND', 'a held job is not dispatched');
  await alice.call('jobs.release', { id });
  await untilEnded<Details>(alice, id);
  const h = await history(alice, id);
  const names = h.events.map((e) => e.event);
  assert.ok(names.indexOf('held') > names.indexOf('submitted'));
  assert.ok(names.indexOf('modified') > names.indexOf('held'));
  assert.ok(names.indexOf('released') > names.indexOf('modified'));
  assert.ok(names.indexOf('dispatched') > names.indexOf('released'));
  assert.match(h.events.find((e) => e.event === 'held')!.detail, /by admin/);
});

test('suspend stops the job (SIGSTOP, state SUSP), resume continues it; a suspended job can be killed; both in show and history', async () => {
  const pidFile = join(work, 'suspend.pid');
  const id = await submitJob(alice, {
    app: 'python',
    command: ['sh', '-c', `echo $$ > ${pidFile}; exec sleep 120`],
    cwd: work,
  });
  await untilJob<Details>(alice, id, 'the job to run', (d) => d.state === 'RUN');
  const pid = await until('the job to write its pid', async () => {
    try {
      const n = Number(readFileSync(pidFile, 'utf8').trim());
      return n > 0 ? n : undefined;
    } catch {
      return undefined;
    }
  });

  // A running job cannot be modified.
  const running = await refusal(alice.call('jobs.modify', { id, changes: { tasks: 1 } }));
  assert.match(running.message, new RegExp(`job ${id} is RUN \\(running\\); only a pending job can be modified`));

  await alice.call('jobs.suspend', { id });
  const susp = await untilJob<Details>(alice, id, 'the worker to stop it', (d) =>
    d.events.some((e) => e.action === 'suspended'),
  );
  assert.equal(susp.state, 'SUSP');
  await until('the process to be stopped', async () => (procState(pid) === 'T' ? true : undefined));
  assert.match(susp.events.find((e) => e.action === 'suspended')!.detail!, /SIGSTOP on host node01/);
  const twice = await refusal(alice.call('jobs.suspend', { id }));
  assert.match(twice.message, /only a running job can be suspended/);

  await alice.call('jobs.resume', { id });
  const resumed = await untilJob<Details>(alice, id, 'the worker to continue it', (d) =>
    d.events.some((e) => e.action === 'resumed'),
  );
  assert.equal(resumed.state, 'RUN');
  await until('the process to run again', async () => (procState(pid) !== 'T' ? true : undefined));

  // Suspended again, then killed: the worker continues it so that the kill is delivered.
  await alice.call('jobs.suspend', { id });
  await untilJob<Details>(
    alice,
    id,
    'the second stop',
    (d) => d.events.filter((e) => e.action === 'suspended').length === 2,
  );
  await alice.call('jobs.kill', { id });
  const ended = await untilEnded<Details>(alice, id);
  assert.equal(ended.state, 'EXIT');

  const h = await history(alice, id);
  const names = h.events.map((e) => e.event);
  for (const e of ['suspended', 'stopped by the worker', 'resumed', 'continued by the worker', 'exited'])
    assert.ok(names.includes(e), `history has ${e}: ${names.join(', ')}`);
  assert.ok(names.indexOf('resumed') > names.indexOf('suspended'));
});

test('xcecli jobs hold|release|modify: human and --json output, exit codes, --help', async () => {
  const login = cli(['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n');
  assert.equal(login.code, 0, login.err);
  const a = await unplaceable({ app: 'python' });
  const b = await unplaceable({ app: 'python' });
  const hold = cli(['jobs', 'hold', String(a), String(b)]);
  assert.equal(hold.code, 0, hold.err);
  assert.equal(hold.out, `Job <${a}>: held.\nJob <${b}>: held.\n`);
  const holdAgain = cli(['--json', 'jobs', 'hold', String(a), String(b)]);
  assert.equal(holdAgain.code, 1, 'refused: exit 1');
  const parsed = JSON.parse(holdAgain.out) as { results: { ok: boolean; jobId: number }[] };
  assert.deepEqual(
    parsed.results.map((r) => r.ok),
    [false, false],
  );
  const release = cli(['--json', 'jobs', 'release', String(a)]);
  assert.equal(release.code, 0, release.err);
  assert.deepEqual(JSON.parse(release.out), { ok: true, jobId: a, action: 'release' });

  const mod = cli(['jobs', 'modify', String(a), '--app', 'mpich', '-n', '2', '-q', 'night', '-e', 'CASE=big']);
  assert.equal(mod.code, 0, mod.err);
  assert.match(
    mod.out,
    new RegExp(
      `^Job <${a}>: modified: --app python -> mpich; -q normal -> night; -n \\(none\\) -> 2; -e \\(none\\) -> CASE=big\\n$`,
    ),
  );
  const shown = cli(['jobs', 'show', String(a)]);
  assert.match(shown.out, /Modifications\n {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}by alice: --app python -> mpich/);
  const conflict = cli(['jobs', 'modify', String(a), '--app', 'python']);
  assert.equal(conflict.code, 1);
  assert.match(
    conflict.err,
    /^xcecli: job asks for 2 tasks but application profile python requires between 1 and 1 tasks/,
  );
  const nothing = cli(['jobs', 'modify', String(a)]);
  assert.equal(nothing.code, 2, 'usage: exit 2');
  assert.match(nothing.err, /nothing to change/);
  const help = cli(['jobs', 'modify', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /--app <name>/);
  assert.match(cli(['jobs', '--help']).out, /hold <id\.\.\.>[\s\S]*suspend[\s\S]*resume[\s\S]*modify/);
  for (const id of [a, b]) await alice.call('jobs.kill', { id });
});
