// The execution engine with real processes: layers, environments, identity, limits, launchers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { StartInfo } from '../worker-protocol.js';
import { workerIsRoot } from './identity.js';
import { findExecutable } from './launch.js';
import { JobRun, type JobRunOptions, type RunOutcome } from './job-run.js';
import { FIXED_PATH } from './env.js';
import { inScratchDir, jobRunOptions, startInfo } from '../../testing/worker-fixtures.js';

const ROOT = workerIsRoot();
const NOT_ROOT = 'the worker only switches users when it runs as root; this test runs as a normal user';

/** Runs `body` in a fresh directory a job run as `nobody` can write; removes it after. */
const inDir = (body: (dir: string) => Promise<void>): Promise<void> => inScratchDir('xce-run-', body);

const info = (dir: string, over: Partial<StartInfo> = {}): StartInfo =>
  startInfo(dir, {
    jobId: 42,
    profile: 'openfoam',
    profileLabel: 'openfoam@3f2a9c',
    command: ['/bin/sh', '-c', 'echo hello'],
    ...over,
  });

const options = jobRunOptions;

async function runJob(
  i: StartInfo,
  o: JobRunOptions = options(),
): Promise<{ outcome: RunOutcome; started: number | null }> {
  let started: number | null = null;
  const r = new JobRun(i, o, { onStarted: (pid) => (started = pid) });
  return { outcome: await r.done, started };
}

/** A process that exists and is not a zombie (an orphan waits for init to reap it). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The lines of a file the job wrote in `dir`. */
const lines = (dir: string, file: string): string[] => readFileSync(join(dir, file), 'utf8').trim().split('\n');

/** The environment a layer recorded in <layer>.env. */
function envOf(dir: string, layer: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(join(dir, `${layer}.env`), 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** A layer script that records its name in order.log and its environment in <name>.env. */
const record = (name: string, extra = ''): string => `echo ${name} >> order.log; env > ${name}.env${extra}`;

const ALL_LAYERS = ['profile-pre', 'job-pre', 'job', 'job-post', 'profile-post'];

const layered = (dir: string, over: Partial<StartInfo> = {}): StartInfo =>
  info(dir, {
    profileEnv: [
      { name: 'FOAM_DIR', value: '/opt/openfoam' },
      { name: 'PATH', value: `/opt/openfoam/bin:${FIXED_PATH}` },
    ],
    jobEnv: [
      { name: 'CASE', value: 'cavity' },
      { name: 'BASH_ENV', value: '/tmp/evil' },
    ],
    profilePreExec: record('profile-pre'),
    jobPreExec: record('job-pre'),
    command: ['/bin/sh', '-c', `${record('job')}; echo hello; echo oops >&2`],
    jobPostExec: record('job-post'),
    profilePostExec: record('profile-post'),
    ...over,
  });

test('a job runs its layers in order: profile pre-exec, job pre-exec, job, job post-exec, profile post-exec', () =>
  inDir(async (dir) => {
    const { outcome, started } = await runJob(layered(dir));
    assert.equal(outcome.kind, 'finished');
    assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
    assert.ok(started !== null && started > 0);
    assert.deepEqual(lines(dir, 'order.log'), ALL_LAYERS);
    assert.equal(readFileSync(join(dir, 'xce-42.out'), 'utf8'), 'hello\n');
    assert.equal(readFileSync(join(dir, 'xce-42.err'), 'utf8'), 'oops\n');
  }));

test("the profile's layer sees XCE_* values, HOME, its own env and never the job's env", () =>
  inDir(async (dir) => {
    await runJob(layered(dir));
    for (const layer of ['profile-pre', 'profile-post']) {
      const env = envOf(dir, layer);
      assert.equal(env['CASE'], undefined, `${layer} must not see the job's CASE`);
      assert.equal(env['BASH_ENV'], undefined, `${layer} must not see the job's BASH_ENV`);
      const expected = {
        FOAM_DIR: '/opt/openfoam',
        PATH: `/opt/openfoam/bin:${FIXED_PATH}`,
        HOME: userInfo().homedir,
        XCE_JOBID: '42',
        XCE_RUN: '1',
        XCE_USER: userInfo().username,
        XCE_QUEUE: 'normal',
        XCE_APP: 'openfoam',
        XCE_APP_LABEL: 'openfoam@3f2a9c',
        XCE_HOSTS: 'h1:1',
        XCE_TASKS: '1',
        XCE_LAUNCH_TYPE: 'serial',
        XCE_CWD: dir,
      };
      for (const [name, value] of Object.entries(expected)) assert.equal(env[name], value, `${layer}: ${name}`);
    }
    assert.equal(envOf(dir, 'profile-pre')['XCE_JOB_EXIT_CODE'], undefined);
    assert.equal(envOf(dir, 'profile-post')['XCE_JOB_EXIT_CODE'], '0');
    assert.equal(envOf(dir, 'profile-post')['XCE_JOB_SIGNAL'], '');
    // Nothing of the worker's own environment leaks in either.
    assert.equal(envOf(dir, 'profile-pre')['NODE_TEST_CONTEXT'], undefined);
  }));

test("the job's pre-exec, the job and its post-exec see both the profile's env and the job's env", () =>
  inDir(async (dir) => {
    await runJob(layered(dir));
    for (const layer of ['job-pre', 'job', 'job-post']) {
      const env = envOf(dir, layer);
      assert.equal(env['CASE'], 'cavity', layer);
      assert.equal(env['FOAM_DIR'], '/opt/openfoam', layer);
      assert.equal(env['XCE_JOBID'], '42', layer);
      assert.equal(env['HOME'], userInfo().homedir, layer);
    }
    assert.equal(envOf(dir, 'job-post')['XCE_JOB_EXIT_CODE'], '0');
  }));

test('XCE_ variables in a job env are dropped: the system values win', () =>
  inDir(async (dir) => {
    const jobEnv = [
      { name: 'XCE_JOBID', value: '999' },
      { name: 'CASE', value: 'x' },
    ];
    await runJob(layered(dir, { jobEnv }));
    assert.equal(envOf(dir, 'job')['XCE_JOBID'], '42');
  }));

test('a failing profile pre-exec fails the job at launch with a reason naming the layer; nothing else runs', () =>
  inDir(async (dir) => {
    const profilePreExec = `${record('profile-pre')}; echo "no licence server" >&2; exit 3`;
    const { outcome, started } = await runJob(layered(dir, { profilePreExec }));
    assert.equal(outcome.kind, 'launch-error');
    assert.equal(outcome.reason, 'profile pre-exec exited with code 3 (output: no licence server)');
    assert.equal(started, null);
    assert.deepEqual(lines(dir, 'order.log'), ['profile-pre']);
  }));

test("a failing job pre-exec fails the job at launch; the profile's post-exec still runs", () =>
  inDir(async (dir) => {
    const { outcome } = await runJob(layered(dir, { jobPreExec: `${record('job-pre')}; exit 4` }));
    assert.equal(outcome.kind, 'launch-error');
    assert.equal(outcome.reason, 'job pre-exec exited with code 4');
    assert.deepEqual(lines(dir, 'order.log'), ['profile-pre', 'job-pre', 'profile-post']);
    assert.equal(envOf(dir, 'profile-post')['XCE_JOB_EXIT_CODE'], '');
  }));

test("post-execs run after a failed job, and a failing post-exec is reported without changing the job's exit code", () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', `${record('job')}; exit 7`];
    const { outcome } = await runJob(layered(dir, { command, profilePostExec: `${record('profile-post')}; exit 5` }));
    assert.equal(outcome.kind, 'finished');
    if (outcome.kind !== 'finished') return;
    assert.equal(outcome.exitCode, 7);
    assert.equal(outcome.postExecError, 'profile post-exec exited with code 5');
    assert.deepEqual(lines(dir, 'order.log'), ALL_LAYERS);
    assert.equal(envOf(dir, 'job-post')['XCE_JOB_EXIT_CODE'], '7');
  }));

test('the runtime limit kills the job with the reason `runtime limit 1s reached`, then the post-execs run', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', `${record('job')}; exec sleep 30`];
    const { outcome } = await runJob(layered(dir, { command, limits: { runtime_s: 1 } }));
    assert.equal(outcome.kind, 'finished');
    if (outcome.kind !== 'finished') return;
    assert.deepEqual([outcome.reason, outcome.signal, outcome.exitCode], ['runtime limit 1s reached', 'SIGTERM', null]);
    assert.equal(envOf(dir, 'profile-post')['XCE_JOB_SIGNAL'], 'SIGTERM');
    assert.equal(envOf(dir, 'profile-post')['XCE_JOB_EXIT_CODE'], '143');
  }));

/** Starts a job and kills it (reason `killed by alice`) `after_ms` after it started. */
async function killedAfter(i: StartInfo, o: JobRunOptions, after_ms: number): Promise<RunOutcome> {
  const r = new JobRun(i, o, { onStarted: () => setTimeout(() => r.kill('killed by alice'), after_ms) });
  return r.done;
}

test('a job that ignores SIGTERM is killed with SIGKILL after the grace', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', "trap '' TERM; echo ready; while :; do sleep 1; done"];
    const outcome = await killedAfter(info(dir, { command }), options({ killGrace_ms: 300 }), 200);
    assert.equal(outcome.kind === 'finished' && outcome.signal, 'SIGKILL');
    assert.equal(outcome.reason, 'killed by alice');
  }));

test('a kill ends the whole process group of the job, children included', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', 'sleep 30 & echo $! > child.pid; wait'];
    const outcome = await killedAfter(info(dir, { command }), options(), 300);
    assert.equal(outcome.kind === 'finished' && outcome.signal, 'SIGTERM');
    const child = Number(readFileSync(join(dir, 'child.pid'), 'utf8'));
    // The signal was sent before the run ended; give the kernel a bounded moment to deliver it.
    for (let i = 0; i < 50 && running(child); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(running(child), false, `the job's child ${child} still runs`);
  }));

test('memory and CPU limits are set as resource limits of the job', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', 'ulimit -v; ulimit -S -t; ulimit -H -t'];
    const { outcome } = await runJob(info(dir, { command, limits: { memory_bytes: 512 * 1024 * 1024, cpu_s: 60 } }));
    assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
    assert.deepEqual(lines(dir, 'xce-42.out'), ['524288', '60', '65']);
  }));

/** Jobs refused at launch: the start info and options, and the reason. */
const LAUNCH_ERRORS: Array<{
  name: string;
  over: Partial<StartInfo>;
  options?: Partial<JobRunOptions>;
  reason: string;
  rootOnly?: true;
}> = [
  {
    name: 'a task count above the tasks limit is refused at launch',
    over: { tasks: 8, hosts: [{ host: 'h1', tasks: 8 }], limits: { tasks: 4 } },
    reason: 'task count 8 exceeds the tasks limit 4',
  },
  {
    name: 'a missing execution user fails the job at launch: `execution user X does not exist on host h1`',
    over: { user: 'xce-no-such-user-7' },
    reason: 'execution user xce-no-such-user-7 does not exist on host h1',
    rootOnly: true,
  },
  {
    name: 'a pre-exec that hangs past the hook timeout is killed and fails the job',
    over: { profilePreExec: 'exec sleep 30' },
    options: { hookTimeout_ms: 300, killGrace_ms: 200 },
    reason: 'profile pre-exec did not finish within 1s and was killed',
  },
];

for (const c of LAUNCH_ERRORS)
  test(c.name, { skip: c.rootOnly && !ROOT ? NOT_ROOT : false }, () =>
    inDir(async (dir) => {
      const { outcome } = await runJob(info(dir, c.over), options(c.options));
      assert.deepEqual([outcome.kind, outcome.reason], ['launch-error', c.reason]);
    }),
  );

test('stdout and stderr go to the paths the job set (relative to cwd, %J is the job id)', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', 'echo out; echo err >&2'];
    await runJob(info(dir, { command, stdout: 'run-%J.log', stderr: join(dir, 'errors.txt') }));
    assert.equal(readFileSync(join(dir, 'run-42.log'), 'utf8'), 'out\n');
    assert.equal(readFileSync(join(dir, 'errors.txt'), 'utf8'), 'err\n');
    assert.equal(existsSync(join(dir, 'xce-42.out')), false);
  }));

test('a working directory that does not exist fails the job at launch', async () => {
  const { outcome } = await runJob(info('/nonexistent/xce-test-dir'));
  assert.equal(outcome.kind, 'launch-error');
  assert.match(
    outcome.reason ?? '',
    /^working directory \/nonexistent\/xce-test-dir does not exist or is not accessible to user .+ on host h1$/,
  );
});

const TWO_HOSTS = [
  { host: 'h1', tasks: 4 },
  { host: 'h2', tasks: 4 },
];

test('a missing MPI launcher fails the job at launch with a reason that says so', () =>
  inDir(async (dir) => {
    const { outcome } = await runJob(
      info(dir, { launchType: 'openmpi', tasks: 8, hosts: TWO_HOSTS }),
      options({ launchers: { openmpi: 'xce-no-such-mpirun', mpich: 'mpirun' } }),
    );
    assert.deepEqual(
      [outcome.kind, outcome.reason],
      ['launch-error', 'launch type openmpi needs xce-no-such-mpirun, which is not installed on host h1'],
    );
    if (findExecutable('mpirun', FIXED_PATH) === null) {
      const d = await runJob(info(dir, { launchType: 'mpich', tasks: 2, hosts: [{ host: 'h1', tasks: 2 }] }));
      assert.equal(d.outcome.reason, 'launch type mpich needs mpirun, which is not installed on host h1');
    }
  }));

test('openmpi and mpich run the command through the launcher with -np and the host list', () =>
  inDir(async (dir) => {
    const fake = join(dir, 'fake-mpirun');
    writeFileSync(fake, '#!/bin/sh\nprintf "%s\\n" "$@" > "$XCE_CWD/launcher-$XCE_LAUNCH_TYPE.args"\n', {
      mode: 0o755,
    });
    for (const launchType of ['openmpi', 'mpich'] as const) {
      const { outcome } = await runJob(
        info(dir, { launchType, tasks: 8, hosts: TWO_HOSTS, command: ['./solver', '-parallel'] }),
        options({ launchers: { openmpi: fake, mpich: fake } }),
      );
      assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
    }
    const args = (hostFlag: string): string[] => ['-np', '8', hostFlag, 'h1:4,h2:4', './solver', '-parallel'];
    assert.deepEqual(lines(dir, 'launcher-openmpi.args'), args('--host'));
    assert.deepEqual(lines(dir, 'launcher-mpich.args'), args('-hosts'));
  }));

for (const via of ['setpriv', 'node uid/gid'] as const) {
  test(
    `a root worker runs the job as the submitter (nobody), through ${via}, with the user's files`,
    { skip: ROOT ? false : NOT_ROOT },
    () =>
      inDir(async (dir) => {
        const setpriv = via === 'setpriv' ? findExecutable('setpriv', FIXED_PATH) : null;
        if (via === 'setpriv' && setpriv === null) return; // util-linux setpriv not installed: the other variant covers the switch
        const { outcome } = await runJob(
          info(dir, {
            user: 'nobody',
            profilePreExec: 'id -u > pre.uid',
            command: ['/bin/sh', '-c', 'id -u; echo "$HOME"'],
          }),
          options({ setpriv }),
        );
        assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
        const [uid, home] = lines(dir, 'xce-42.out');
        assert.equal(uid, '65534');
        assert.equal(readFileSync(join(dir, 'pre.uid'), 'utf8').trim(), '65534');
        assert.equal(home, '/nonexistent');
        assert.equal(statSync(join(dir, 'xce-42.out')).uid, 65534);
      }),
  );
}

test(
  'a user who cannot write the output directory gets a launch error, not a file written by root',
  { skip: ROOT ? false : NOT_ROOT },
  () =>
    inDir(async (dir) => {
      chmodSync(dir, 0o755);
      const { outcome } = await runJob(info(dir, { user: 'nobody' }));
      assert.equal(outcome.kind, 'launch-error');
      assert.equal(outcome.reason, `cannot write the stdout file xce-42.out as user nobody on host h1`);
      assert.equal(existsSync(join(dir, 'xce-42.out')), false);
    }),
);

test('a worker that is not root runs the job as itself, whoever submitted it', () =>
  inDir(async (dir) => {
    const { outcome } = await runJob(
      info(dir, { user: 'xce-someone-else', command: ['/bin/sh', '-c', 'id -un; echo "$XCE_USER"'] }),
      options({ asRoot: false, setpriv: null }),
    );
    assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
    assert.deepEqual(lines(dir, 'xce-42.out'), [userInfo().username, 'xce-someone-else']);
  }));

test('a kill during the profile pre-exec runs neither the job nor any post-exec', () =>
  inDir(async (dir) => {
    const r = new JobRun(layered(dir, { profilePreExec: `${record('profile-pre')}; exec sleep 30` }), options(), {
      onStarted: () => undefined,
    });
    const poll = setInterval(() => {
      if (existsSync(join(dir, 'profile-pre.env'))) r.kill('killed by alice');
    }, 20);
    const outcome = await r.done;
    clearInterval(poll);
    assert.deepEqual([outcome.kind, outcome.reason], ['finished', 'killed before the job started: killed by alice']);
    assert.deepEqual(lines(dir, 'order.log'), ['profile-pre']);
  }));

test('the CPU limit ends a busy job with SIGXCPU and the reason `cpu limit 1s reached`', () =>
  inDir(async (dir) => {
    // runtime_s is a guard so a broken CPU limit cannot hang the test.
    const command = ['/bin/sh', '-c', 'while :; do :; done'];
    const { outcome } = await runJob(info(dir, { command, limits: { cpu_s: 1, runtime_s: 30 } }));
    assert.equal(outcome.kind, 'finished');
    assert.deepEqual(
      [outcome.kind === 'finished' && outcome.signal, outcome.reason],
      ['SIGXCPU', 'cpu limit 1s reached'],
    );
  }));

test('a runtime limit above the timer range (30d) does not kill the job: it runs to its end', () =>
  inDir(async (dir) => {
    const command = ['/bin/sh', '-c', 'sleep 0.3; echo done'];
    const { outcome } = await runJob(info(dir, { command, limits: { runtime_s: 30 * 24 * 3600 } }));
    assert.equal(outcome.kind, 'finished');
    if (outcome.kind !== 'finished') return;
    assert.equal(outcome.reason, undefined);
    assert.equal(outcome.exitCode, 0);
  }));

test('a hook timeout above the timer range (30d) does not kill the pre-exec at once', () =>
  inDir(async (dir) => {
    const { outcome } = await runJob(
      info(dir, { profilePreExec: 'sleep 0.3' }),
      options({ hookTimeout_ms: 30 * 24 * 3600 * 1000 }),
    );
    assert.equal(outcome.kind, 'finished', JSON.stringify(outcome));
    assert.equal(outcome.kind === 'finished' && outcome.exitCode, 0);
  }));

test('only the layers that exist are started: one process for a job without pre/post-exec, one more per hook', () =>
  inDir(async (dir) => {
    const count = async (
      over: Partial<StartInfo>,
    ): Promise<{ processes: number; outcome: RunOutcome; started: boolean }> => {
      let started = false;
      const r = new JobRun(info(dir, over), options(), { onStarted: () => (started = true) });
      const outcome = await r.done;
      return { processes: r.processes, outcome, started };
    };
    const bare = await count({ command: ['true'] });
    assert.deepEqual([bare.outcome.kind, bare.outcome.kind === 'finished' && bare.outcome.exitCode], ['finished', 0]);
    assert.equal(bare.processes, 1, 'the set-up checks and the job share one process');
    assert.equal(bare.started, true);
    const posts = await count({ command: ['true'], jobPostExec: 'true', profilePostExec: 'true' });
    assert.equal(posts.processes, 3, 'the job (with its set-up checks) and the two post-execs');
    const all = await count({
      command: ['true'],
      profilePreExec: 'true',
      jobPreExec: 'true',
      jobPostExec: 'true',
      profilePostExec: 'true',
    });
    assert.equal(all.processes, 6, 'the set-up checks before the first pre-exec, four hooks and the job');
    // A set-up failure in the job's own process is still a launch error, and the job never started.
    const bad = await count({ command: ['true'], cwd: join(dir, 'missing') });
    assert.equal(bad.outcome.kind, 'launch-error');
    assert.match(
      bad.outcome.reason ?? '',
      /^working directory .*missing does not exist or is not accessible to user .+ on host h1$/,
    );
    assert.equal(bad.started, false, 'no started status for a job whose set-up failed');
    assert.equal(bad.processes, 1);
  }));
