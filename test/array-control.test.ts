// Job arrays with a real controller and workers, through xcecli: hold and release of one element
// and of the whole array (each element the action fits), requeue of one element and of the whole
// array (each runs again), their refusals; and an LSF script whose #BSUB -J makes an array and -w a
// dependency, each element's output in out.%J.%I.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestCluster } from '../harness/cluster.js';
import { runCli, submitJob, untilJob, withCluster, workerHost, type CliRun } from '../testing/e2e.js';
import { elementId } from '../model/job-id.js';

interface Details {
  state: string;
  heldBy: string | null;
  runNumber: number;
  requeueCount: number;
  pendReason: string | null;
  array?: { counts: Record<string, number> };
}

function cli(cluster: TestCluster, home: string, args: string[], input?: string, cwd?: string): CliRun {
  return runCli(cluster, home, 'xcecli', args, input, { cwd: cwd ?? cluster.dir });
}

test('hold, release and requeue a whole job array and one element', () =>
  withCluster({ controllers: 1, schedulerGrace_ms: 300, workers: [workerHost('node01', 8)] }, async (cluster) => {
    const home = mkdtempSync(join(tmpdir(), 'xce-array-control-'));
    assert.equal(cli(cluster, home, ['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n').code, 0);
    const alice = await cluster.client('alice');
    const show = async (id: number): Promise<Details> => (await alice.showJob(id)) as Details;
    const held = async (id: number, idx: number[]): Promise<boolean[]> =>
      Promise.all(idx.map(async (i) => (await show(elementId(id, i))).heldBy === 'alice'));

    // The elements wait for a blocker (ended(B)), so they stay pending while they are held and released.
    const blocker = await submitJob(alice, { app: 'python', command: ['sleep', '600'], cwd: cluster.dir });
    const id = await submitJob(alice, {
      app: 'python',
      name: 'ctl[1-4]',
      command: ['true'],
      cwd: cluster.dir,
      dependency: `ended(${blocker})`,
    });

    // One element.
    const one = cli(cluster, home, ['--json', 'jobs', 'hold', `${id}[2]`]);
    assert.equal(one.code, 0, one.err);
    assert.deepEqual(await held(id, [1, 2, 3, 4]), [false, true, false, false]);
    assert.match((await show(elementId(id, 2))).pendReason ?? '', /held by user alice/);
    // The whole array: every element the hold fits (2 is held already).
    const all = cli(cluster, home, ['jobs', 'hold', String(id)]);
    assert.equal(all.code, 0, all.err);
    assert.deepEqual(await held(id, [1, 2, 3, 4]), [true, true, true, true]);
    const again = cli(cluster, home, ['jobs', 'hold', String(id)]);
    assert.equal(again.code, 1, 'nothing left to hold');
    assert.match(again.err, new RegExp(`job array ${id} has no pending element`));
    assert.equal(cli(cluster, home, ['jobs', 'release', `${id}[3]`]).code, 0);
    assert.deepEqual(await held(id, [1, 2, 3, 4]), [true, true, false, true]);
    assert.equal(cli(cluster, home, ['jobs', 'release', String(id)]).code, 0);
    assert.deepEqual(await held(id, [1, 2, 3, 4]), [false, false, false, false]);
    const notHeld = cli(cluster, home, ['jobs', 'release', `${id}[1]`]);
    assert.equal(notHeld.code, 1);
    assert.match(notHeld.err, new RegExp(`job ${id}\\[1\\] is not held`));

    // The blocker ends: every element runs and is DONE.
    assert.equal(cli(cluster, home, ['jobs', 'kill', String(blocker)]).code, 0);
    const allDone = (d: Details): boolean => d.array?.counts['DONE'] === 4;
    await untilJob<Details>(alice, id, 'every element to be done', allDone, 30_000);

    // Requeue one element: it runs again; then the whole array: every element runs again.
    assert.equal(cli(cluster, home, ['jobs', 'requeue', `${id}[1]`]).code, 0);
    await untilJob<Details>(
      alice,
      elementId(id, 1),
      'element 1 to run again',
      (d) => d.state === 'DONE' && d.runNumber === 2,
      30_000,
    );
    const whole = cli(cluster, home, ['--json', 'jobs', 'requeue', String(id)]);
    assert.equal(whole.code, 0, whole.err);
    await untilJob<Details>(alice, id, 'every element to be done again', allDone, 30_000);
    const runs = await Promise.all([1, 2, 3, 4].map(async (i) => (await show(elementId(id, i))).requeueCount));
    assert.deepEqual(runs, [2, 1, 1, 1]);
  }));

test('an LSF script with #BSUB -J NAME[1-3] and -w: an array after its dependency, out.%J.%I each', () =>
  withCluster({ controllers: 1, schedulerGrace_ms: 300, workers: [workerHost('node01', 8)] }, async (cluster) => {
    const home = mkdtempSync(join(tmpdir(), 'xce-array-script-'));
    assert.equal(cli(cluster, home, ['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n').code, 0);
    const alice = await cluster.client('alice');
    const dir = mkdtempSync(join(cluster.dir, 'array-script-'));
    const first = await submitJob(alice, { app: 'python', command: ['true'], cwd: dir });
    writeFileSync(
      join(dir, 'sweep.sh'),
      `#!/bin/sh\n#BSUB -J "sweep[1-3]" -app python\n#BSUB -w "done(${first})"\n#BSUB -o out.%J.%I -cwd ${dir}\necho "index $XCE_ARRAY_INDEX"\n`,
    );
    const sub = cli(cluster, home, ['--json', 'jobs', 'submit', 'sweep.sh'], undefined, dir);
    assert.equal(sub.code, 0, sub.err);
    const id = (JSON.parse(sub.out) as { jobId: number }).jobId;
    const done = await untilJob<Details>(
      alice,
      id,
      'the array to finish',
      (d) => d.array?.counts['DONE'] === 3,
      30_000,
    );
    assert.equal(done.array!.counts['EXIT'], 0);
    for (const i of [1, 2, 3]) assert.equal(readFileSync(join(dir, `out.${id}.${i}`), 'utf8'), `index ${i}\n`);
    const shown = (await alice.showJob(id)) as { dependency: { text: string } | null };
    assert.equal(shown.dependency?.text, `done(${first})`);
  }));
