// The launcher process (launcher.ts, launcher-main.ts): layers are its children, never the
// worker's; when it dies, the jobs it started are killed and reported, and the next layer starts a new one.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { StartInfo } from '../worker-protocol.js';
import { JobRun, type RunOutcome } from './job-run.js';
import { Launcher } from './launcher.js';
import { inScratchDir, jobRunOptions, startInfo, waitFor } from '../../testing/worker-fixtures.js';

const inDir = (body: (dir: string) => Promise<void>): Promise<void> => inScratchDir('xce-launcher-', body);

const sleeper = (dir: string, jobId: number, over: Partial<StartInfo> = {}): StartInfo =>
  startInfo(dir, { jobId, profile: 'p', profileLabel: 'p@1', command: ['sleep', '30'], ...over });

/** The parent pid of a process (field 4 of /proc/<pid>/stat), or null when it is gone. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** A process that exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

function startRun(info: StartInfo, launcher: Launcher): { run: JobRun; pid: () => number | null } {
  let pid: number | null = null;
  const run = new JobRun(info, jobRunOptions({ spawnLayer: launcher.spawn }), { onStarted: (p) => (pid = p) });
  return { run, pid: () => pid };
}

test('a job is a child of the launcher process, not of the worker', () =>
  inDir(async (dir) => {
    const launcher = new Launcher();
    try {
      const { run, pid } = startRun(sleeper(dir, 1), launcher);
      await waitFor('the job started', () => pid() !== null, 20_000);
      assert.notEqual(launcher.pid, null);
      assert.equal(parentOf(pid() as number), launcher.pid, 'the launcher started the job');
      assert.notEqual(launcher.pid, process.pid);
      run.kill('test over');
      const outcome = await run.done;
      assert.equal(outcome.kind === 'finished' && outcome.signal, 'SIGTERM', JSON.stringify(outcome));
    } finally {
      launcher.close();
    }
  }));

test('a launcher that dies with jobs running: they are killed and reported, and the next job gets a new launcher', () =>
  inDir(async (dir) => {
    const launcher = new Launcher();
    try {
      const bare = startRun(sleeper(dir, 2), launcher);
      const posted = startRun(sleeper(dir, 3, { jobPostExec: 'echo cleaned > post.done' }), launcher);
      await waitFor('both jobs started', () => bare.pid() !== null && posted.pid() !== null, 20_000);
      const first = launcher.pid as number;
      process.kill(first, 'SIGKILL');
      const outcomes: RunOutcome[] = await Promise.all([bare.run.done, posted.run.done]);
      for (const o of outcomes) {
        assert.equal(o.kind, 'finished', JSON.stringify(o));
        assert.equal(o.kind === 'finished' && o.signal, 'SIGKILL');
        assert.match(o.kind === 'finished' ? (o.reason ?? '') : '', /its process launcher died \(killed by SIGKILL\)/);
      }
      await waitFor('the jobs are gone', () => !running(bare.pid() as number) && !running(posted.pid() as number));
      // The post-exec ran after the job, through a new launcher.
      assert.equal(readFileSync(`${dir}/post.done`, 'utf8'), 'cleaned\n');
      assert.equal(launcher.starts, 2);
      const next = startRun(
        startInfo(dir, { jobId: 4, profile: 'p', profileLabel: 'p@1', command: ['true'] }),
        launcher,
      );
      const o = await next.run.done;
      assert.deepEqual([o.kind, o.kind === 'finished' && o.exitCode], ['finished', 0], JSON.stringify(o));
      assert.notEqual(launcher.pid, first);
    } finally {
      launcher.close();
    }
  }));

test('a request the launcher never answered fails to start when it dies, and nothing waits for it', () => {
  const launcher = new Launcher();
  const seen: string[] = [];
  launcher.spawn(
    { file: '/bin/true', args: [], env: {}, ids: null, stdin: null, readStdout: false, setUpFd: false },
    {
      spawned: () => seen.push('spawned'),
      failed: (m) => seen.push(`failed: ${m}`),
      output: () => undefined,
      setUp: () => undefined,
      ended: () => seen.push('ended'),
    },
  );
  launcher.close();
  assert.deepEqual(seen, ['failed: the process launcher died before the process started (the launcher was closed)']);
});
