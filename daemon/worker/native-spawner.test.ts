// The native spawner xce-spawn (native-spawner.ts, native/xce-spawn.c): the same jobs run through
// the /bin/sh wrapper and through xce-spawn must be the same to the job and to the worker: argv,
// environment, cwd, stdin, descriptors, the rlimits `ulimit` would set, signal dispositions and
// mask, session and group, exit codes, signals, set-up failures' wording, fallbacks, what is left
// in the group. Skipped only where there is no C compiler (then xce-spawn cannot have been built).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StartInfo } from '../worker-protocol.js';
import { JobRun, type JobRunOptions, type RunOutcome } from './job-run.js';
import { spawnDirect } from './layer-child.js';
import { Launcher } from './launcher.js';
import { spawnLayerWith } from './native-child.js';
import { type NativeEvents, NativeSpawner } from './native-spawner.js';
import { processAlive } from './proc.js';
import { chooseSpawner, NATIVE_SPAWNER, SpawnerError } from './spawner.js';
import {
  inScratchDir,
  JOB_VIEW_PROBE,
  jobRunOptions,
  type RanJob,
  runJob,
  setUpFailureCases,
  startInfo,
  waitFor,
} from '../../testing/worker-fixtures.js';

type Way = 'wrapper' | 'native';
const WAYS: readonly Way[] = ['wrapper', 'native'];
const NO_CC = spawnSync(process.env.CC ?? 'cc', ['--version'], { stdio: 'ignore' }).error !== undefined;
const skip = NO_CC ? 'no C compiler (cc) on this host: xce-spawn is not built, xcecd uses Node spawn' : false;
const native = new NativeSpawner(NATIVE_SPAWNER);
after(() => native.close());

function options(way: Way): JobRunOptions {
  return jobRunOptions(
    way === 'wrapper'
      ? { asRoot: false, setpriv: null, jobWrapperAlways: true, spawnLayer: spawnDirect }
      : { asRoot: false, setpriv: null, spawnLayer: spawnLayerWith(native), directLimits: true },
  );
}

type Ran = RanJob;

function run(way: Way, info: StartInfo, whileRunning?: (r: JobRun) => void): Promise<Ran> {
  return runJob(info, options(way), whileRunning);
}

/** `over` run both ways, each in its own subdirectory of `dir` (`<cwd>` in the output). */
async function both(dir: string, over: Partial<StartInfo>, n = 0): Promise<Record<Way, Ran>> {
  const r: Partial<Record<Way, Ran>> = {};
  for (const way of WAYS) {
    const cwd = join(dir, `${way}${n}`);
    spawnSync('mkdir', ['-p', cwd]);
    r[way] = await run(way, startInfo(cwd, { jobId: 7, ...over }));
  }
  return r as Record<Way, Ran>;
}

function endOf(o: RunOutcome): string {
  if (o.kind !== 'finished') return `${o.kind}: ${o.reason ?? ''}`;
  return o.signal !== null ? `signal ${o.signal}` : `exit ${o.exitCode ?? '?'}`;
}

const inDir = (body: (dir: string) => Promise<void>): Promise<void> => inScratchDir('xce-native-', body);
const LIMITS = { memory_bytes: 3 * 1024 ** 3 + 5, cpu_s: 3600 };

test('a job with limits runs through xce-spawn and sees what the wrapper gives it', { skip }, () =>
  inDir(async (dir) => {
    const script = [
      ...JOB_VIEW_PROBE,
      'ls /proc/self/fd | sort -n | tr "\\n" " "; echo',
      'echo "v $(ulimit -S -v) $(ulimit -H -v) t $(ulimit -S -t) $(ulimit -H -t)"',
      'set -- $(ps -o sid=,pgid= -p $$); [ "$1" = $$ ] && [ "$2" = $$ ] && echo "own session and group"',
      'echo to-stderr >&2',
    ].join('; ');
    const r = await both(dir, {
      command: ['sh', '-c', script, 'job-zero'],
      jobEnv: [{ name: 'CASE', value: "it's" }],
      limits: LIMITS,
    });
    assert.equal(r.native.cmdline?.split('\0')[0], 'sh', 'the job process is the job itself: no wrapper');
    // The descriptors apart: Node's spawn passes on what this test process inherited without close-on-exec
    // (the wrapper's job has it too), xce-spawn closed everything above 2 at its start.
    const fdLine = /\n0 1 2 3 [\d ]*\n/;
    assert.equal(r.native.out.replace(fdLine, '\n<fds>\n'), r.wrapper.out.replace(fdLine, '\n<fds>\n'));
    assert.equal(r.native.err, r.wrapper.err);
    assert.match(r.native.out, /\nv 3145729 3145729 t 3600 3605\n/);
    // The job's own first process (no shell between): its signal mask and dispositions as exec left them.
    const sig = await both(
      dir,
      { command: ['grep', '-E', '^Sig(Blk|Ign|Cgt)', '/proc/self/status'], limits: LIMITS },
      1,
    );
    assert.equal(sig.native.out, sig.wrapper.out);
    assert.match(sig.native.out, /^SigBlk:\s+0+\nSigIgn:\s+0+\n/, 'none blocked or ignored');
    assert.match(r.native.out, /\nown session and group\n/);
    assert.match(r.native.out, /\nstdin done\nflags:\s+0102001\n/);
    assert.match(r.native.out, /\n0 1 2 3 \n/, 'nothing of the spawner leaks into the job');
    for (const way of WAYS) assert.equal(endOf(r[way].outcome), 'exit 0', way);
  }),
);

test('exit codes and signals are the same both ways, a signal sent to the job included', { skip }, () =>
  inDir(async (dir) => {
    const cases: Array<[string[], string]> = [
      [['sh', '-c', 'exit 3'], 'exit 3'],
      [['sh', '-c', 'kill -TERM $$'], 'signal SIGTERM'],
      [['sh', '-c', 'kill -SEGV $$'], 'signal SIGSEGV'],
      [['false'], 'exit 1'],
    ];
    for (const [command, want] of cases) {
      const r = await both(dir, { command, limits: LIMITS });
      for (const way of WAYS) assert.equal(endOf(r[way].outcome), want, `${command.join(' ')} (${way})`);
    }
    const killed: string[] = [];
    for (const way of WAYS) {
      const info = startInfo(dir, { command: ['sleep', '30'], limits: LIMITS });
      const r = await run(way, info, (j) => j.kill('killed by the test'));
      killed.push(JSON.stringify({ ...r.outcome, time_ms: 0 }));
    }
    assert.equal(killed[0], killed[1]);
    assert.match(killed[1] ?? '', /"signal":"SIGTERM"/);
  }),
);

test('set-up failures have the same wording both ways; an output FIFO is left to the wrapper', { skip }, () =>
  inDir(async (dir) => {
    const cases = setUpFailureCases(dir);
    for (const [over, want] of cases) {
      for (const way of WAYS) {
        const r = await run(way, startInfo(dir, { command: ['true'], limits: LIMITS, ...over }));
        assert.equal(r.outcome.kind, 'launch-error', way);
        assert.match(r.outcome.kind === 'launch-error' ? r.outcome.reason : '', want, way);
        assert.equal(r.cmdline, null, `${way}: never started`);
      }
    }
    const fifo = join(dir, 'out.fifo');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const stuck = new JobRun(startInfo(dir, { command: ['echo', 'never'], stdout: fifo }), options('native'), {
      onStarted: () => undefined,
    });
    const other = await run('native', startInfo(dir, { command: ['true'], limits: LIMITS }));
    assert.equal(endOf(other.outcome), 'exit 0', 'another job runs meanwhile: nothing waits on the FIFO');
    stuck.kill('test over');
    assert.match((await stuck.done).reason ?? '', /test over/);
  }),
);

test('what a job leaves in its group is killed when it ends', { skip }, () =>
  inDir(async (dir) => {
    const r = await run('native', startInfo(dir, { command: ['sh', '-c', 'sleep 30 & echo $! >gc.pid'] }));
    assert.equal(endOf(r.outcome), 'exit 0');
    const pid = Number(readFileSync(join(dir, 'gc.pid'), 'utf8'));
    await waitFor('the grandchild to be killed', () => !processAlive(pid, null));
  }),
);

/** One job straight through a spawner: its events as text. */
function direct(s: NativeSpawner, dir: string, argv: string[], limits = {}): Promise<string[]> {
  return new Promise((resolve) => {
    const seen: string[] = [];
    const done = (e: string): void => resolve([...seen, e]);
    const events: NativeEvents = {
      spawned: () => seen.push('spawned'),
      failed: (m) => done(`failed ${m}`),
      unwritable: (w) => done(`unwritable ${w}`),
      fallback: () => done('fallback'),
      ended: (code, sig, lost) => done(`ended ${code} ${sig} ${lost ?? ''}`.trim()),
    };
    const [file = '', ...args] = argv;
    const req = { file, argv0: file, args, cwd: dir, env: {}, out: join(dir, 'o'), err: join(dir, 'e'), limits };
    s.spawn(req, events);
  });
}

test('a limit the wrapper could not set goes back to it; an exec failure is worded as Node words it', { skip }, () =>
  inDir(async (dir) => {
    // A non-root spawner whose hard RLIMIT_AS is 1 GiB cannot give a job 2 GiB: `ulimit -v` would fail.
    const low = join(dir, 'low-spawn');
    const drop = process.getuid?.() === 0 ? 'exec setpriv --reuid=nobody --regid=nogroup --clear-groups ' : 'exec ';
    writeFileSync(low, `#!/bin/sh\nulimit -v 1048576\n${drop}${NATIVE_SPAWNER}\n`, { mode: 0o755 });
    const s = new NativeSpawner(low);
    try {
      assert.deepEqual(await direct(s, dir, ['/bin/true'], { memory_bytes: 2 * 1024 ** 3 }), ['fallback']);
    } finally {
      s.close();
    }
    assert.deepEqual(await direct(native, dir, ['/nonexistent/prog']), ['failed spawn /nonexistent/prog ENOENT']);
    assert.deepEqual(await direct(native, dir, [dir]), [`failed spawn ${dir} EACCES`]);
    assert.deepEqual(await direct(native, join(dir, 'gone'), ['/bin/true']), ['unwritable stdout']);
  }),
);

test('when xce-spawn dies its jobs are killed and reported lost; the next job starts a new one', { skip }, () =>
  inDir(async (dir) => {
    const s = new NativeSpawner(NATIVE_SPAWNER);
    const sleeping = direct(s, dir, ['/bin/sleep', '30']);
    await waitFor('the sleep to start', () => s.pid !== null && spawnSync('pgrep', ['-P', String(s.pid)]).status === 0);
    process.kill(s.pid as number, 'SIGKILL');
    const [spawned, ended] = await sleeping;
    assert.equal(spawned, 'spawned');
    assert.match(
      ended ?? '',
      /^ended null SIGKILL killed by the launcher: its native spawner xce-spawn died \(killed by SIGKILL\)$/,
    );
    assert.deepEqual(await direct(s, dir, ['/bin/true']), ['spawned', 'ended 0 null']);
    s.close();
  }),
);

test('xce-spawn refuses a malformed request stream, saying what is wrong', { skip }, async () => {
  const p = spawn(NATIVE_SPAWNER, [], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  p.stdin.end(Buffer.from([5, 0, 0, 0, 9, 1, 0, 0, 0]));
  const code = await new Promise((resolve) => p.on('close', resolve));
  assert.equal(code, 2);
  assert.equal(stderr, 'xce-spawn: unknown request type\n');
});

test('--spawner: native names the missing program; auto falls back to node, saying why', { skip }, () => {
  assert.throws(
    () => chooseSpawner('native', '/nonexistent/xce-spawn'),
    (e: Error) => {
      assert.ok(e instanceof SpawnerError);
      assert.match(e.message, /^--spawner native: \/nonexistent\/xce-spawn is not there/);
      return true;
    },
  );
  assert.deepEqual(chooseSpawner('auto', '/nonexistent/xce-spawn').path, null);
  assert.match(chooseSpawner('auto', '/nonexistent/xce-spawn').line, /^spawner: node \(the native spawner/);
  assert.equal(chooseSpawner('node').path, null);
  assert.equal(chooseSpawner('auto').path, NATIVE_SPAWNER);
  assert.equal(chooseSpawner('auto').line, `spawner: native (${NATIVE_SPAWNER})`);
});

test('through the launcher process: a job with limits runs without its wrapper, as in xcecd', { skip }, () =>
  inDir(async (dir) => {
    const launcher = new Launcher();
    launcher.native = NATIVE_SPAWNER;
    try {
      const opts = jobRunOptions({ asRoot: false, setpriv: null, spawnLayer: launcher.spawn, directLimits: true });
      let cmdline = '';
      const info = startInfo(dir, { command: ['sh', '-c', 'sleep 0.2; ulimit -v'], limits: LIMITS });
      const r = new JobRun(info, opts, {
        onStarted: (pid) => (cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')),
      });
      assert.equal(endOf(await r.done), 'exit 0');
      assert.equal(cmdline, 'sh\0-c\0sleep 0.2; ulimit -v\0', 'the job itself, no wrapper');
      assert.equal(readFileSync(join(dir, 'xce-1.out'), 'utf8'), '3145729\n');
    } finally {
      launcher.close();
    }
  }),
);

test('the cpu limit ends a busy job the same way both ways: SIGXCPU, `cpu limit 1s reached`', { skip }, () =>
  inDir(async (dir) => {
    // runtime_s is a guard so a broken CPU limit cannot hang the test.
    const r = await both(dir, {
      command: ['/bin/sh', '-c', 'while :; do :; done'],
      limits: { cpu_s: 1, runtime_s: 30 },
    });
    for (const way of WAYS) {
      const o = r[way].outcome;
      assert.deepEqual([endOf(o), o.reason], ['signal SIGXCPU', 'cpu limit 1s reached'], way);
    }
  }),
);
