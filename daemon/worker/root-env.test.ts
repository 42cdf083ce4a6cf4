// A job's environment never reaches a process that runs as root (issue 21: "root through a job's
// environment"). The dynamic loader honours LD_PRELOAD, LD_DEBUG_OUTPUT, GCONV_PATH ... for any
// program exec'd as root without AT_SECURE, so the identity switch must start with a fixed, minimal
// environment and the job's is applied only after it. LD_DEBUG=files with LD_DEBUG_OUTPUT proves
// it without a compiler: the loader writes `<prefix>.<pid>` for every program started with it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { StartInfo } from '../worker-protocol.js';
import { FIXED_PATH } from './env.js';
import { workerIsRoot } from './identity.js';
import { JobRun, type JobRunOptions, type RunOutcome } from './job-run.js';
import { findExecutable } from './launch.js';
import { jobRunOptions, scratchDir, startInfo } from '../../testing/worker-fixtures.js';

const ROOT = workerIsRoot();
const NOT_ROOT = 'only a root worker switches identity; this test runs as a normal user';
const NOBODY_UID = 65534;

function info(dir: string, ldOutput: string): StartInfo {
  const record = (layer: string): string => `echo "${layer} $LD_DEBUG" >> layers.log`;
  return startInfo(dir, {
    jobId: 77,
    user: 'nobody',
    profile: 'p',
    profileLabel: 'p@0',
    command: ['/bin/sh', '-c', record('job')],
    jobEnv: [
      { name: 'LD_DEBUG', value: 'files' },
      { name: 'LD_DEBUG_OUTPUT', value: ldOutput },
    ],
    profilePreExec: record('profile-pre'),
    profilePostExec: record('profile-post'),
    jobPreExec: record('job-pre'),
    jobPostExec: record('job-post'),
  });
}

const options = (setpriv: string | null): JobRunOptions => jobRunOptions({ asRoot: true, setpriv });

async function run(i: StartInfo, o: JobRunOptions): Promise<RunOutcome> {
  return new JobRun(i, o, { onStarted: () => undefined }).done;
}

for (const via of ['setpriv', 'node uid/gid'] as const) {
  test(
    `a job's LD_DEBUG_OUTPUT into a directory only root may write stays empty (switch through ${via})`,
    { skip: ROOT ? false : NOT_ROOT },
    async () => {
      const setpriv = via === 'setpriv' ? findExecutable('setpriv', FIXED_PATH) : null;
      if (via === 'setpriv' && setpriv === null) return; // util-linux setpriv not installed: the other variant covers the switch
      const dir = scratchDir('xce-rootenv-', 0o777);
      const rootOnly = scratchDir('xce-rootonly-', 0o700);
      try {
        const outcome = await run(info(dir, join(rootOnly, 'ld')), options(setpriv));
        assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0, JSON.stringify(outcome));
        assert.deepEqual(readdirSync(rootOnly), [], "a process running as root honoured the job's LD_DEBUG_OUTPUT");
        // The job's own layers still get the job's environment (after the switch), the profile's do not.
        assert.deepEqual(
          readFileSync(join(dir, 'layers.log'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => l.trimEnd()),
          ['profile-pre', 'job-pre files', 'job files', 'job-post files', 'profile-post'],
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(rootOnly, { recursive: true, force: true });
      }
    },
  );

  test(
    `the loader variables a job sets apply to its own processes, as the user, never as root (switch through ${via})`,
    { skip: ROOT ? false : NOT_ROOT },
    async () => {
      const setpriv = via === 'setpriv' ? findExecutable('setpriv', FIXED_PATH) : null;
      if (via === 'setpriv' && setpriv === null) return;
      const dir = scratchDir('xce-rootenv-', 0o777);
      const open = scratchDir('xce-ldout-', 0o777);
      try {
        const outcome = await run(info(dir, join(open, 'ld')), options(setpriv));
        assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0, JSON.stringify(outcome));
        const files = readdirSync(open);
        assert.ok(files.length > 0, 'the job layers ran with LD_DEBUG (the user may debug their own programs)');
        const owners = [...new Set(files.map((f) => statSync(join(open, f)).uid))];
        assert.deepEqual(owners, [NOBODY_UID], `loader output written by uids ${owners.join(', ')}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        rmSync(open, { recursive: true, force: true });
      }
    },
  );
}
