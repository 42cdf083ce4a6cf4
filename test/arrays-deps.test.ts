// Job arrays and dependencies with real controllers and workers: a 1,000-element array under %20
// never has more than 20 elements running and finishes every one (each with its own index, output
// and record); the CLI's array and dependency refusals (one clear line, no state change); a
// dependency that can never be met pends saying so or, with --dep-never kill, is killed; and a
// three-stage done() pipeline survives a SIGKILL of the leader, each stage running once, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until, type TestCluster } from '../harness/cluster.js';
import { runCli, submitJob, untilEnded, untilJob, withCluster, workerHost, type CliRun } from '../testing/e2e.js';
import { elementId } from '../model/job-id.js';

interface Details {
  id: number;
  label: string;
  state: string;
  runNumber: number;
  dispatchTimeMs: number | null;
  startTimeMs: number | null;
  endTimeMs: number | null;
  exitCode: number | null;
  pendReason: string | null;
  reason: string | null;
}

interface Row {
  id: number;
  label: string;
  state: string;
  array?: { size: number; limit: number; counts: Record<string, number> };
}

function cli(cluster: TestCluster, home: string, args: string[], input?: string): CliRun {
  return runCli(cluster, home, 'xcecli', args, input);
}

/** The most intervals [from, to) open at once. */
function maxOverlap(intervals: ReadonlyArray<readonly [number, number]>): number {
  const events = intervals.flatMap(([a, b]) => [
    [a, 1],
    [b, -1],
  ]);
  events.sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!); // an end before a start at the same time
  let open = 0;
  let max = 0;
  for (const [, d] of events) max = Math.max(max, (open += d!));
  return max;
}

test('a 1,000-element array with %20: never more than 20 running, every element finishes with its own index; array and dependency refusals; --dep-never', () =>
  withCluster(
    { controllers: 1, schedulerGrace_ms: 500, workers: [workerHost('node01', 16), workerHost('node02', 16)] },
    async (cluster) => {
      const home = mkdtempSync(join(tmpdir(), 'xce-arrays-home-'));
      assert.equal(cli(cluster, home, ['login', '-u', 'alice', '--password-stdin'], 'alice-dev\n').code, 0);
      const alice = await cluster.client('alice');

      const sub = cli(cluster, home, [
        '--json',
        'jobs',
        'submit',
        '--app',
        'python',
        '-J',
        'sweep[1-1000]%20',
        '--cwd',
        cluster.dir,
        '--',
        'sh',
        '-c',
        'echo "index $XCE_ARRAY_INDEX of $XCE_JOBID"',
      ]);
      assert.equal(sub.code, 0, sub.err);
      const submitted = JSON.parse(sub.out) as { jobId: number; arraySize: number };
      assert.equal(submitted.arraySize, 1000);
      const id = submitted.jobId;

      // While it runs: the folded row never counts more than 20 running.
      let maxRunning = 0;
      const row = await until(
        'all 1,000 elements to finish',
        async () => {
          const l = (await alice.call('jobs.list', {})) as { jobs: Row[] };
          const r = l.jobs.find((j) => j.id === id);
          assert.ok(r?.array !== undefined, 'the array is one folded row');
          maxRunning = Math.max(maxRunning, r.array.counts['RUN'] ?? 0);
          return (r.array.counts['DONE'] ?? 0) === 1000 ? r : undefined;
        },
        300_000,
        100,
      );
      assert.equal(row.state, 'DONE');
      assert.ok(maxRunning <= 20, `at most 20 running at once in the list, saw ${maxRunning}`);
      assert.ok(maxRunning > 1, `elements ran side by side (saw at most ${maxRunning})`);

      // Every element's record: one run, DONE, and the controller's own times never overlap by more than 20.
      const details: Details[] = [];
      for (let from = 1; from <= 1000; from += 50) {
        const batch = Array.from({ length: 50 }, (_, k) => alice.showJob(elementId(id, from + k)));
        details.push(...((await Promise.all(batch)) as Details[]));
      }
      for (const d of details) {
        assert.equal(d.state, 'DONE', `${d.label} finished`);
        assert.equal(d.runNumber, 1, `${d.label} ran once`);
      }
      const overlap = maxOverlap(details.map((d) => [d.dispatchTimeMs!, d.endTimeMs!] as const));
      assert.ok(overlap <= 20, `dispatched-to-ended intervals overlap at most 20 times, found ${overlap}`);
      assert.equal(
        readFileSync(join(cluster.dir, `xce-${id}_737.out`), 'utf8').trim(),
        `index 737 of ${id}`,
        'XCE_ARRAY_INDEX and XCE_JOBID in the element environment, its own output file',
      );
      const expanded = (await alice.call('jobs.list', { expand: true, limit: 2000 })) as { jobs: Row[] };
      assert.equal(expanded.jobs.filter((j) => j.label.startsWith(`${id}[`)).length, 1000, '--expand: one row each');
      const human = cli(cluster, home, ['jobs', 'list']);
      assert.match(human.out, new RegExp(`${id} .*sweep\\[1,000: 1,000 DONE, %20\\]`));

      // Refusals: one clear line each, exit 1, no job made.
      const before = ((await alice.call('jobs.list', {})) as { total: number }).total;
      const refused = (args: string[], re: RegExp): void => {
        const r = cli(cluster, home, ['jobs', 'submit', '--app', 'python', ...args, '--', 'true']);
        assert.equal(r.code, 1, r.err);
        assert.equal(r.err.trim().split('\n').length, 1, `one line: ${r.err}`);
        assert.match(r.err, re);
      };
      refused(['-J', 'bad[1-x]'], /job array "bad\[1-x\]": "1-x" is not an index, a range FROM-TO or FROM-TO:STEP/);
      refused(
        ['-J', 'big[1-100001]'],
        /its 100001 elements are more than the cluster's array_size_max \(100000, xce\.yaml\)/,
      );
      refused(['-w', 'done(999999)'], /dependency "done\(999999\)": job 999999 does not exist/);
      refused(['-w', 'done(nosuch)'], /there is no job named nosuch of user alice/);
      refused(['-J', 'me', '-w', 'done(me)'], /a job cannot depend on itself \(me names this job\)/);
      refused(['-w', 'done(1'], /dependency "done\(1": expected "\)" after done\(1 at column 7/);
      assert.equal(((await alice.call('jobs.list', {})) as { total: number }).total, before, 'nothing was added');

      // A dependency that can never be met: pends saying so, or (--dep-never kill) is killed.
      const failed = await submitJob(alice, { app: 'python', command: ['false'], cwd: cluster.dir });
      await untilEnded(alice, failed);
      const waits = await submitJob(alice, {
        app: 'python',
        command: ['true'],
        cwd: cluster.dir,
        dependency: `done(${failed})`,
      });
      const pending = await untilJob<Details>(alice, waits, 'the never reason', (d) =>
        (d.pendReason ?? '').includes('can never be satisfied'),
      );
      assert.equal(
        pending.pendReason,
        `dependency done(${failed}) can never be satisfied: job ${failed} exited with 1`,
      );
      const killed = cli(cluster, home, [
        '--json',
        'jobs',
        'submit',
        '--app',
        'python',
        '-w',
        `exit(${id})`,
        '--dep-never',
        'kill',
        '--',
        'true',
      ]);
      assert.equal(killed.code, 0, killed.err);
      const k = await untilEnded<Details>(alice, (JSON.parse(killed.out) as { jobId: number }).jobId);
      assert.equal(k.state, 'EXIT');
      assert.equal(k.runNumber, 0, 'it never ran');
      assert.match(
        k.reason ?? '',
        /^killed \(--dep-never kill\): dependency exit\(\d+\) can never be satisfied: element \d+\[1\] finished successfully \(DONE\)$/,
      );
      // Kill works on one element and on a whole array.
      const small = await submitJob(alice, {
        app: 'python',
        name: 'hold[1-3]',
        command: ['true'],
        cwd: cluster.dir,
        dependency: `done(${failed})`,
      });
      assert.equal(cli(cluster, home, ['jobs', 'kill', `${small}[2]`]).code, 0);
      assert.equal(((await alice.showJob(elementId(small, 2))) as Details).state, 'EXIT');
      assert.equal(((await alice.showJob(elementId(small, 1))) as Details).state, 'PEND');
      assert.equal(cli(cluster, home, ['jobs', 'kill', String(small)]).code, 0);
      const whole = (await alice.showJob(small)) as Details & { array: { counts: Record<string, number> } };
      assert.deepEqual(whole.array.counts, { PEND: 0, RUN: 0, SUSP: 0, DONE: 0, EXIT: 3 });
    },
  ));

test('a three-stage done() pipeline survives a SIGKILL of the leader: each stage runs once, in order', () =>
  withCluster(
    { controllers: 3, schedulerGrace_ms: 1_000, workers: [workerHost('node01'), workerHost('node02')] },
    async (cluster) => {
      const alice = await cluster.client('alice');
      const log = join(cluster.dir, 'pipeline.log');
      const stage = (name: string, dependency?: string) =>
        submitJob(alice, {
          app: 'python',
          name,
          command: ['sh', '-c', `echo start-${name} >> ${log}; sleep 2; echo end-${name} >> ${log}`],
          cwd: cluster.dir,
          ...(dependency === undefined ? {} : { dependency }),
        });
      const a = await stage('extract');
      const b = await stage('transform', 'done(extract)');
      const c = await stage('load', `done(${b})`);
      const pendB = await untilJob<Details>(alice, b, 'stage 2 waiting', (d) => d.pendReason !== null);
      assert.match(pendB.pendReason!, new RegExp(`waiting for dependency done\\(${a}\\)`));
      // Kill the leader while stage 2 runs (stage 3 waits on it).
      await untilJob<Details>(alice, b, 'stage 2 to run', (d) => d.state === 'RUN', 60_000);
      const leader = await cluster.leader();
      await cluster.kill(leader, 'SIGKILL');
      assert.notEqual(await cluster.waitForLeader(), leader);
      const last = await untilEnded<Details>(alice, c, 90_000);
      const ds = (await Promise.all([a, b, c].map((id) => alice.showJob(id)))) as Details[];
      for (const d of [...ds, last]) {
        assert.equal(d.state, 'DONE', `job ${d.id} finished`);
        assert.equal(d.runNumber, 1, `job ${d.id} ran once`);
      }
      assert.ok(ds[1]!.dispatchTimeMs! >= ds[0]!.endTimeMs!, 'stage 2 started after stage 1 ended');
      assert.ok(ds[2]!.dispatchTimeMs! >= ds[1]!.endTimeMs!, 'stage 3 started after stage 2 ended');
      assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), [
        'start-extract',
        'end-extract',
        'start-transform',
        'end-transform',
        'start-load',
        'end-load',
      ]);
    },
  ));
