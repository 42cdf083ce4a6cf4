// Issue 20, end to end with real processes: a worker that registers fewer slots than hosts.yaml
// allows (`xcecd --slots 2`, hosts.yaml 64) never has more than 2 jobs running at once, also after
// the leader is SIGKILLed (its registration is a replicated fact: the new leader schedules with the
// same capacity); `xcecli hosts` and `xceadmin cluster status` say why. And `jobs list` pages: the
// footer, `next` in --json, `--after`, and numeric flags that say what they expect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../harness/cluster.js';
import { cliHome, runCli } from '../testing/e2e.js';

const JOBS = 6;
const SLOTS_REASON = 'node01: registers 2 slots, hosts.yaml allows 64: using 2';

interface Row {
  id: number;
  state: string;
  hosts: string;
}

/** Slots held on node01 by the jobs of a listing (`hosts` is `node01:1`). */
function slotsOnNode01(jobs: readonly Row[]): number {
  let n = 0;
  for (const j of jobs)
    if (j.state === 'RUN')
      for (const part of j.hosts.split(',')) if (part.startsWith('node01:')) n += Number(part.slice(7));
  return n;
}

/** The most intervals [start, end) that overlap at any instant. */
function mostAtOnce(spans: ReadonlyArray<readonly [number, number]>): number {
  const edges = spans.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]);
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!); // an end before a start at the same instant
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d!));
  return most;
}

test('a worker registering 2 of the 64 slots hosts.yaml allows runs at most 2 jobs at once, across a failover; the host view and cluster status say why', async () => {
  const cluster = await TestCluster.start({
    controllers: 3,
    schedulerGrace_ms: 1_000,
    workers: [{ host: 'node01', slots: 2, extraArgs: ['--run-as-self'] }],
  });
  const home = cliHome('h20');
  const run = (bin: 'xcecli' | 'xceadmin', args: string[], input?: string) => runCli(cluster, home, bin, args, input);
  try {
    const alice = await cluster.client('alice');
    const ids: number[] = [];
    for (let i = 0; i < JOBS; i++)
      ids.push((await alice.submit({ app: 'python', command: ['sleep', '2'], cwd: cluster.dir })).jobId);

    // Every look at the replicated state holds at most 2 slots on node01.
    let most = 0;
    let waitedForSlots = false;
    const look = async (): Promise<readonly Row[]> => {
      const jobs = (await alice.listJobs({})).jobs as Row[];
      const held = slotsOnNode01(jobs);
      assert.ok(held <= 2, `node01 holds ${held} slots: ${JSON.stringify(jobs)}`);
      most = Math.max(most, held);
      if (held === 2 && jobs.some((j) => j.state === 'PEND')) waitedForSlots = true;
      return jobs;
    };
    await until('two jobs running on node01', async () => (await look(), most === 2), 30_000, 100);
    const leader = await cluster.leader();
    await cluster.kill(leader, 'SIGKILL');
    assert.notEqual(await cluster.waitForLeader(), leader);
    await until(
      'every job to finish',
      async () => (await look()).every((j) => j.state === 'DONE' || j.state === 'EXIT'),
      90_000,
      100,
    );
    assert.equal(most, 2);
    assert.ok(waitedForSlots, 'jobs pended while two ran');
    // What the worker reported: never more than 2 of them running at once on node01.
    const spans: Array<[number, number]> = [];
    for (const id of ids) {
      const d = await alice.showJob(id);
      assert.equal(d.state, 'DONE', `job ${id}: ${JSON.stringify(d)}`);
      spans.push([d.startTimeMs!, d.endTimeMs!]);
    }
    assert.ok(mostAtOnce(spans) <= 2, `at most 2 at once: ${JSON.stringify(spans)}`);

    // The host view and cluster status, from the CLI, on the new leader's cluster.
    assert.equal(run('xcecli', ['login', '-u', 'admin', '--password-stdin'], 'admin-dev\n').code, 0);
    const hosts = run('xcecli', ['hosts']);
    assert.equal(hosts.code, 0, hosts.err);
    assert.match(hosts.out, /\nnode01 +\S+ +2 +0 +64 +2 +8G\n/);
    assert.ok(hosts.out.includes(`${SLOTS_REASON}\n`), hosts.out);
    const json = JSON.parse(run('xcecli', ['--json', 'hosts']).out) as {
      hosts: Array<{ name: string; slots: number }>;
    };
    assert.equal(json.hosts.find((h) => h.name === 'node01')?.slots, 2);
    const status = run('xceadmin', ['cluster', 'status']);
    assert.equal(status.code, 0, status.err);
    assert.ok(status.out.includes(`  ${SLOTS_REASON}\n`), status.out);

    // Paging: 6 jobs, 4 a page.
    const page1 = run('xcecli', ['jobs', 'list', '--limit', '4']);
    assert.equal(page1.code, 0, page1.err);
    assert.ok(page1.out.endsWith(`\n4 of ${JOBS} jobs shown; --after ${ids[2]} for more\n`), page1.out);
    const json1 = JSON.parse(run('xcecli', ['--json', 'jobs', 'list', '--limit', '4']).out) as {
      jobs: Row[];
      total: number;
      next: number | null;
    };
    assert.deepEqual(
      json1.jobs.map((j) => j.id),
      ids.slice(2).reverse(),
    );
    assert.equal(json1.total, JOBS);
    assert.equal(json1.next, ids[2]);
    const json2 = JSON.parse(run('xcecli', ['--json', 'jobs', 'list', '--after', String(json1.next)]).out) as {
      jobs: Row[];
      next: number | null;
    };
    assert.deepEqual(
      json2.jobs.map((j) => j.id),
      ids.slice(0, 2).reverse(),
    );
    assert.equal(json2.next, null);
    assert.ok(
      run('xcecli', ['jobs', 'list', '--after', String(json1.next)]).out.endsWith(`\n2 of ${JOBS} jobs shown\n`),
    );
    assert.match(run('xcecli', ['jobs', 'list', '--help']).out, /--limit <n> +at most this many jobs \(default 1000/);

    // Numeric flags say what they expect.
    const bad = run('xcecli', ['jobs', 'list', '--limit', 'abc']);
    assert.equal(bad.code, 2);
    assert.equal(bad.err, 'xcecli: --limit must be a positive integer, got "abc"\n');
    assert.equal(
      run('xcecli', ['jobs', 'list', '--after', '1.5']).err,
      'xcecli: --after must be a positive integer, got "1.5"\n',
    );
    const ttl = run('xceadmin', ['token', 'issue', 'bob', '--ttl', 'soon']);
    assert.equal(ttl.code, 2);
    assert.equal(ttl.err, 'xceadmin: --ttl must be a positive integer, got "soon"\n');
    const member = run('xceadmin', ['cluster', 'remove-member', 'two']);
    assert.equal(member.code, 2);
    assert.equal(member.err, 'xceadmin: node id must be a positive integer, got "two"\n');
  } catch (err) {
    process.stderr.write(cluster.dumpLogs() + '\n');
    throw err;
  } finally {
    await cluster.stop();
  }
});
