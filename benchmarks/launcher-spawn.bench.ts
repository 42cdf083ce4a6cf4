// The spawn path of a job, as the launcher process runs it (daemon/worker/layer-child.ts
// spawnDirect): a fused `true` job (the set-up checks, then `exec true`, through the job layer's
// /bin/sh wrapper), N of them, 16 at once. Prints this process's CPU per spawn (what a launcher
// pays: Node's fork, the pipes, the events) and its reaped children's (the job processes), and the
// anonymous memory a fork copies. --dash: the same wrapper forked by a dash loop instead (a small
// parent), for the children's CPU without Node's fork. --direct: the job exec'd without its wrapper
// (daemon/worker/direct-job.ts), as the launcher runs a plain job of the worker's own user.
// --native: the same, started by the native spawner xce-spawn (daemon/worker/native-spawner.ts);
// --limits: each job with jobs.bench's default profile's memory limit (16G), which only --native
// runs without the wrapper. Run it with the launcher's flags to compare:
//
//   node --max-old-space-size=32 --max-semi-space-size=1 [flags] dist/benchmarks/launcher-spawn.bench.js [--jobs 400] [--dash | --direct | --native] [--limits]

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnDirect, type SpawnLayer } from '../daemon/worker/layer-child.js';
import { spawnLayerWith } from '../daemon/worker/native-child.js';
import { NativeSpawner } from '../daemon/worker/native-spawner.js';
import { NATIVE_SPAWNER } from '../daemon/worker/spawner.js';
import { jobWrapper } from '../daemon/worker/layer-process.js';
import { parseCommandLine } from '../harness/cli-args.js';
import { startInfo } from '../testing/worker-fixtures.js';

const cl = parseCommandLine(
  'launcher-spawn.bench',
  'node [flags] dist/benchmarks/launcher-spawn.bench.js [--jobs N] [--dash | --direct | --native] [--limits] (default 400 jobs)',
  {
    jobs: { type: 'string' },
    dash: { type: 'boolean' },
    direct: { type: 'boolean' },
    native: { type: 'boolean' },
    limits: { type: 'boolean' },
  },
);
const native = cl.values.native === true ? new NativeSpawner(NATIVE_SPAWNER) : null;
const spawnLayer: SpawnLayer = native === null ? spawnDirect : spawnLayerWith(native);
const LIMITS = cl.values.limits === true ? { memory_bytes: 16 * 1024 ** 3 } : undefined;
const JOBS = cl.whole('jobs', 400);
const AT_ONCE = 16;
const dir = mkdtempSync(join(tmpdir(), 'xce-spawn-'));
const wrapper = jobWrapper(startInfo(dir), true);
const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', XCE_CWD: dir, USER: 'bench' };

/** This process's reaped children's CPU (user + system), ms (/proc/self/stat: cutime, cstime in 10 ms ticks). */
function childrenCpu_ms(pid: number | 'self' = 'self'): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

function anon_kB(): number {
  return Number(/^Anonymous:\s+(\d+)/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1] ?? 0);
}

function how(): string {
  if (cl.values.dash === true) return 'forked by a dash loop';
  const way = native !== null ? ' started by xce-spawn' : cl.values.direct === true ? ' without the wrapper' : '';
  return `through spawnDirect${way}${LIMITS === undefined ? '' : ' with a 16G memory limit'}, ${AT_ONCE} at once`;
}

/** xce-spawn's own CPU and its reaped children's (the jobs), ms (/proc/<pid>/stat: utime, stime, cutime, cstime). */
function spawnerCpu_ms(): { own: number; jobs: number } {
  if (native?.pid === null || native === null) return { own: 0, jobs: 0 };
  const s = readFileSync(`/proc/${native.pid}/stat`, 'utf8');
  const f = s
    .slice(s.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { own: ((f[11] ?? 0) + (f[12] ?? 0)) * 10, jobs: childrenCpu_ms(native.pid) };
}

/** One job through spawnDirect; resolves once it ended. */
function one(i: number): Promise<void> {
  return new Promise((resolve) => {
    const args = ['-c', wrapper, 'xce-job', `j${i % 50}.out`, `j${i % 50}.err`, 'true'];
    const [out, err] = [`j${i % 50}.out`, `j${i % 50}.err`];
    const direct =
      cl.values.direct === true || native !== null
        ? { cwd: dir, out, err, argv: ['true'], fused: true, limits: LIMITS }
        : undefined;
    const req = { file: '/bin/sh', args, env, ids: null, stdin: null, readStdout: false, setUpFd: true, direct };
    spawnLayer(req, {
      spawned: () => undefined,
      failed: (m) => {
        throw new Error(m);
      },
      output: () => undefined,
      setUp: () => undefined,
      ended: () => resolve(),
    });
  });
}

try {
  const cpu0 = process.cpuUsage();
  const children0 = childrenCpu_ms();
  const t0 = performance.now();
  if (cl.values.dash === true) {
    const loop = `i=0; while [ $i -lt ${JOBS} ]; do /bin/sh -c "$W" xce-job j.out j.err true 3>/dev/null; i=$((i+1)); done`;
    execFileSync('/bin/sh', ['-c', loop], { env: { ...env, W: wrapper }, stdio: 'ignore' });
  } else {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < JOBS) await one(next++);
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
  }
  const cpu = process.cpuUsage(cpu0);
  const per = (ms: number): string => (ms / JOBS).toFixed(3);
  const spawner = spawnerCpu_ms();
  native?.close();
  process.stdout.write(
    `${JOBS} fused \`true\` jobs ${how()} ` +
      `(node ${process.execArgv.join(' ')}): ${((performance.now() - t0) / 1000).toFixed(2)} s; CPU ms per job: ` +
      `this process ${per((cpu.user + cpu.system) / 1000)}, the job processes ${per(childrenCpu_ms() - children0 + spawner.jobs)}` +
      `${native === null ? '' : `, xce-spawn ${per(spawner.own)}`}; ` +
      `this process's anonymous memory ${anon_kB()} KiB\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
