// The job layer without its wrapper shell (direct-job.ts): the same jobs run both ways, through the
// wrapper and without it, and must be the same to the job and to the worker, down to the failure wording.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartInfo } from '../worker-protocol.js';
import { JobRun, type JobRunOptions, type RunOutcome } from './job-run.js';
import { planDirectJob, resolveCommand } from './direct-job.js';
import { FIXED_PATH } from './env.js';
import { spawnDirect, type SpawnLayer, type SpawnRequest } from './layer-child.js';
import {
  inScratchDir,
  JOB_VIEW_PROBE,
  jobRunOptions,
  type RanJob,
  runJob,
  setUpFailureCases,
  startInfo,
} from '../../testing/worker-fixtures.js';

type Way = 'wrapper' | 'direct';
const WAYS: readonly Way[] = ['wrapper', 'direct'];

interface Ran extends RanJob {
  /** The requests the job layer was started with (file and whether it may run without the wrapper). */
  readonly requests: readonly SpawnRequest[];
}

/** Options of a worker running jobs as its own user (no identity switch), through the wrapper or without it. */
function options(way: Way, spawnLayer: SpawnLayer = spawnDirect): JobRunOptions {
  return jobRunOptions({ asRoot: false, setpriv: null, jobWrapperAlways: way === 'wrapper', spawnLayer });
}

/** Runs `info` as the worker's own user (no identity switch), through the wrapper or without it, with the requests its layers were started with. */
async function run(way: Way, info: StartInfo): Promise<Ran> {
  const requests: SpawnRequest[] = [];
  const spawnLayer: SpawnLayer = (req, events) => {
    requests.push(req);
    return spawnDirect(req, events);
  };
  return { ...(await runJob(info, options(way, spawnLayer))), requests };
}

/** `over` run each way, each in its own subdirectory of `dir` (`<cwd>` in the output). */
async function both(dir: string, over: Partial<StartInfo>): Promise<Record<Way, Ran>> {
  const result: Partial<Record<Way, Ran>> = {};
  for (const way of WAYS) {
    const cwd = join(dir, way);
    mkdirSync(cwd, { recursive: true });
    result[way] = await run(way, startInfo(cwd, { jobId: 7, ...over }));
  }
  return result as Record<Way, Ran>;
}

const inDir = (body: (dir: string) => Promise<void>): Promise<void> => inScratchDir('xce-direct-', body);

test('a plain job runs without its wrapper shell: its own program is the process the worker sees start', () =>
  inDir(async (dir) => {
    const r = await both(dir, { command: ['sleep', '0.2'] });
    assert.equal(r.direct.cmdline, 'sleep\u00000.2\u0000', 'the job process is sleep itself from its start');
    assert.equal(r.direct.requests.length, 1);
    assert.notEqual(r.direct.requests[0]?.direct, undefined);
    assert.equal(r.wrapper.requests[0]?.direct, undefined);
    for (const way of WAYS) assert.deepEqual([r[way].outcome.kind, exitOf(r[way].outcome)], ['finished', 0], way);
  }));

test('the job sees the same argv[0], environment, working directory, stdin and output descriptors both ways', () =>
  inDir(async (dir) => {
    const script = [...JOB_VIEW_PROBE, 'ls /proc/self/fd | sort -n | tr "\\n" " "', 'echo to-stderr >&2'].join('; ');
    const r = await both(dir, {
      command: ['sh', '-c', script, 'job-zero'],
      jobEnv: [{ name: 'CASE', value: "it's" }],
    });
    assert.equal(r.direct.out, r.wrapper.out);
    assert.equal(r.direct.err, r.wrapper.err);
    assert.match(r.direct.out, /^sh -c .* job-zero \n<cwd>\n/);
    assert.match(r.direct.out, /\nCASE=it's\n/);
    assert.match(r.direct.out, /\nOLDPWD=\/\n/);
    assert.match(r.direct.out, /\nPWD=<cwd>\n/);
    assert.match(
      r.direct.out,
      /\nstdin done\nflags:\s+0102001\n/,
      'append, write-only: no O_NONBLOCK left from the probe',
    );
    // The descriptors the job has open (ls's listing of its own) are the same too: nothing leaked by the launcher.
    assert.match(r.direct.out, /\n0 1 2 3 /);
  }));

test('exit codes and signals are the same both ways', () =>
  inDir(async (dir) => {
    const cases: Array<[string[], string]> = [
      [['sh', '-c', 'exit 3'], 'exit 3'],
      [['sh', '-c', 'kill -TERM $$'], 'signal SIGTERM'],
      [['false'], 'exit 1'],
    ];
    for (const [command, want] of cases) {
      const r = await both(dir, { command });
      for (const way of WAYS) assert.equal(endOf(r[way].outcome), want, `${command.join(' ')} (${way})`);
    }
  }));

test('what the wrapper does itself is left to it: not found (127), not executable (126), a script without #!', () =>
  inDir(async (dir) => {
    const plain = join(dir, 'plain.sh');
    writeFileSync(plain, 'echo ran as a shell script\n');
    chmodSync(plain, 0o755);
    const noexec = join(dir, 'noexec');
    writeFileSync(noexec, '#!/bin/sh\necho never\n');
    chmodSync(noexec, 0o644);
    for (const [command, want] of [
      [['xce-no-such-command'], 'exit 127'],
      [[noexec], 'exit 126'],
      [[plain], 'exit 0'],
    ] as Array<[string[], string]>) {
      const r = await both(dir, { command });
      assert.equal(r.direct.err, r.wrapper.err, command[0]);
      assert.equal(r.direct.out, r.wrapper.out, command[0]);
      if (command[0] === plain) assert.equal(r.direct.out, 'ran as a shell script\n');
      for (const way of WAYS) assert.equal(endOf(r[way].outcome), want, `${command[0]} (${way})`);
      const plan = planDirectJob({ cwd: dir, out: 'o', err: 'e', argv: command, fused: true }, { PATH: FIXED_PATH });
      assert.equal(plan.kind, 'fallback', `${command[0]}: the wrapper runs it`);
    }
  }));

test('a failed set-up is the same launch error both ways, and the job never started', () =>
  inDir(async (dir) => {
    const cases = setUpFailureCases(dir);
    for (const [over, want] of cases) {
      for (const way of WAYS) {
        const r = await run(way, startInfo(dir, { command: ['true'], ...over }));
        assert.equal(r.outcome.kind, 'launch-error', way);
        assert.match(r.outcome.reason ?? '', want, way);
        assert.equal(r.cmdline, null, `${way}: no started status`);
      }
    }
  }));

test('an output path that is a FIFO is opened by the wrapper, as the job: the launcher never waits on it', () =>
  inDir(async (dir) => {
    const fifo = join(dir, 'out.fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    for (const way of WAYS) {
      // No reader: opening the FIFO to write waits. The job's own process waits, not the one starting layers.
      const stuck = new JobRun(startInfo(dir, { command: ['echo', 'never'], stdout: fifo }), options(way), {
        onStarted: () => undefined,
      });
      const other = await run(way, startInfo(dir, { command: ['true'] }));
      assert.equal(endOf(other.outcome), 'exit 0', `${way}: another job runs meanwhile`);
      stuck.kill('test over');
      assert.match((await stuck.done).reason ?? '', /test over/, way);
    }
  }));

test('the command is found as dash finds it; a relative PATH entry or an unset PATH leaves it to the wrapper', () => {
  assert.equal(resolveCommand('true', '/', FIXED_PATH)?.endsWith('/true'), true);
  assert.equal(resolveCommand('true', '/', `/nonexistent:${FIXED_PATH}`)?.endsWith('/true'), true);
  assert.equal(resolveCommand('true', '/', `bin:${FIXED_PATH}`), null);
  assert.equal(resolveCommand('true', '/', `:${FIXED_PATH}`), null);
  assert.equal(resolveCommand('true', '/', undefined), null);
  assert.equal(resolveCommand('sh', '/bin', FIXED_PATH)?.endsWith('/sh'), true);
  assert.equal(resolveCommand('./sh', '/bin', FIXED_PATH), '/bin/sh');
  assert.equal(resolveCommand('xce-no-such-command', '/', FIXED_PATH), null);
  const env = { PATH: FIXED_PATH, USER: 'u' };
  const plan = planDirectJob({ cwd: '/', out: '/dev/null', err: '/dev/null', argv: ['true'], fused: true }, env);
  assert.equal(plan.kind, 'exec', '/dev/null is opened like a file');
  if (plan.kind === 'exec') for (const fd of plan.fds ?? []) closeSync(fd);
  const tty = planDirectJob({ cwd: '/', out: '/dev/tty', err: '/dev/null', argv: ['true'], fused: true }, env);
  assert.notEqual(tty.kind, 'exec', 'any other device is left to the wrapper');
});

function exitOf(o: RunOutcome): number | null {
  return o.kind === 'finished' ? o.exitCode : null;
}

function endOf(o: RunOutcome): string {
  if (o.kind !== 'finished') return `${o.kind}: ${o.reason ?? ''}`;
  return o.signal !== null ? `signal ${o.signal}` : `exit ${o.exitCode ?? '?'}`;
}
