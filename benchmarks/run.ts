// `npm run bench [-- --quick] [--out DIR]`: every benchmark in one go, one JSON result with the
// machine's description, and SVG charts beside it.
//   1. the machine: CPU model, cores, Node version, and the raw fsync rate (300-byte append +
//      fdatasync in a loop for about a second) measured first, on the result directory's disk;
//   2. the micro-benchmarks (dist/benchmarks/*.bench.js), each a child process with its own
//      arguments (--quick where the script takes it); their output is kept in the result;
//   3. the WAL's group commit swept over 1..256 concurrent appenders, in process (wal/wal.ts);
//   4. the cluster: submits/s and p50/p99 against client count, and failover times over leader
//      kills (measureLoad / measureFailover of cluster.bench.ts on three real xcectld processes).
// --quick runs small sizes (a CI smoke check, under two minutes). Ctrl-C stops the child or the
// cluster in progress and leaves no process behind.

import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestCluster, repoRoot } from '../harness/cluster.js';
import type { Entry } from '../raft/types.js';
import { Wal } from '../wal/wal.js';
import { measureFailover, measureLoad } from './cluster.bench.js';
import { writeResults, type BenchResult, type Machine, type MicroRun } from './render/result.js';
import { median } from '../harness/stats.js';
import { parseCommandLine } from '../harness/cli-args.js';

const ENTRY_BYTES = 300;
export const WAL_APPENDERS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

interface Plan {
  readonly quick: boolean;
  readonly fsync_ms: number;
  readonly walRound_ms: number;
  readonly walRounds: number;
  readonly clients: readonly number[];
  readonly load_s: number;
  readonly kills: number;
  /** A micro-benchmark child is killed after this long. */
  readonly childLimit_ms: number;
}

const QUICK: Plan = {
  quick: true,
  fsync_ms: 1_000,
  walRound_ms: 250,
  walRounds: 1,
  clients: [1, 8, 32],
  load_s: 2,
  kills: 3,
  childLimit_ms: 60_000,
};
const FULL: Plan = {
  quick: false,
  fsync_ms: 1_000,
  walRound_ms: 500,
  walRounds: 3,
  clients: [1, 4, 16, 64, 256],
  load_s: 5,
  kills: 20,
  childLimit_ms: 15 * 60_000,
};

/** Whether a script's source declares the option `name` of `type` to parseCommandLine (harness/cli-args.ts). */
export function declaresOption(source: string, name: string, type: 'boolean' | 'string'): boolean {
  return new RegExp(`(^|[\\s{,])'?${name}'?:\\s*\\{\\s*type:\\s*'${type}'`, 'm').test(source);
}

/** Arguments per micro-benchmark (read from each script's own option declarations); null: skip in this mode. */
function argsFor(
  name: string,
  source: string,
  quick: boolean,
  scratch: string,
): { args: string[]; node: string[] } | null {
  if (name === 'cluster') return null; // run in process below
  const node = name === 'statemachine' ? ['--expose-gc'] : [];
  // A script that writes its own result file (`--out FILE`) writes it to the scratch directory.
  if (!quick)
    return { args: declaresOption(source, 'out', 'string') ? ['--out', join(scratch, `${name}.json`)] : [], node };
  if (declaresOption(source, 'quick', 'boolean')) return { args: ['--quick'], node };
  if (name === 'worker') return { args: ['--jobs', '50'], node };
  if (name === 'raft') return { args: [], node }; // about 8 s, no size argument
  return null; // wal (about a minute; the in-process sweep covers its group commit) and jobs (a cluster run)
}

export function measureFsync(dir: string, ms: number): number {
  const path = join(dir, `fsync-probe-${process.pid}`);
  const fd = openSync(path, 'w');
  const buf = Buffer.alloc(ENTRY_BYTES, 7);
  let n = 0;
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < ms) {
      writeSync(fd, buf);
      fdatasyncSync(fd);
      n++;
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return n / ((performance.now() - t0) / 1000);
}

export async function walSweep(
  dir: string,
  plan: Pick<Plan, 'walRound_ms' | 'walRounds'>,
): Promise<Array<{ appenders: number; perSecond: number }>> {
  const { wal } = await Wal.open(join(dir, 'wal-sweep'), { logger: { info: () => undefined, warn: () => undefined } });
  const data = new Uint8Array(ENTRY_BYTES).fill(9);
  const out: Array<{ appenders: number; perSecond: number }> = [];
  try {
    const rates = new Map<number, number[]>(WAL_APPENDERS.map((a) => [a, []]));
    for (let r = 0; r < plan.walRounds; r++) {
      for (const a of WAL_APPENDERS) {
        let next = wal.lastIndex + 1;
        let done = 0;
        const t0 = performance.now();
        const end = t0 + plan.walRound_ms;
        await Promise.all(
          Array.from({ length: a }, async () => {
            while (performance.now() < end) {
              const e: Entry = { index: next++, term: 1, type: 0, data };
              await wal.save(undefined, [e]);
              done++;
            }
          }),
        );
        rates.get(a)!.push(done / ((performance.now() - t0) / 1000));
        await wal.compact(wal.lastIndex);
      }
    }
    for (const a of WAL_APPENDERS) out.push({ appenders: a, perSecond: median(rates.get(a)!) });
  } finally {
    await wal.close();
  }
  return out;
}

let child: ChildProcess | null = null;
let cluster: TestCluster | null = null;

function runChild(file: string, args: string[], nodeArgs: string[], limit_ms: number): Promise<MicroRun> {
  const name = basename(file).replace(/\.bench\.js$/, '');
  const command = `node ${[...nodeArgs, file.replace(repoRoot, ''), ...args].join(' ')}`;
  const t0 = performance.now();
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [...nodeArgs, file, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repoRoot,
    });
    child = p;
    let text = '';
    p.stdout.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      process.stdout.write(d);
    });
    p.stderr.on('data', (d: Buffer) => (text += d.toString('utf8')));
    const timer = setTimeout(() => p.kill('SIGKILL'), limit_ms);
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      child = null;
      const output = text.split('\n').filter((l) => l.trim() !== '');
      if (signal !== null)
        output.push(`(stopped by ${signal}${signal === 'SIGKILL' ? ` after the ${limit_ms} ms limit` : ''})`);
      resolve({ name, command, seconds: (performance.now() - t0) / 1000, exitCode: code, output });
    });
  });
}

type Say = (s: string) => void;

/** The machine the results belong to, with its raw fsync rate on the result directory's disk. */
function describeMachine(scratch: string, plan: Plan): Machine {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    memory_bytes: totalmem(),
    fsyncPerSecond: measureFsync(scratch, plan.fsync_ms),
  };
}

/** Every micro-benchmark beside this script, each a child process with its own arguments for the plan. */
async function runMicro(plan: Plan, scratch: string, say: Say): Promise<MicroRun[]> {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const micro: MicroRun[] = [];
  for (const f of readdirSync(here)
    .filter((x) => x.endsWith('.bench.js'))
    .sort()) {
    const name = f.replace(/\.bench\.js$/, '');
    const srcPath = join(repoRoot, 'benchmarks', `${name}.bench.ts`);
    const a = argsFor(name, existsSync(srcPath) ? readFileSync(srcPath, 'utf8') : '', plan.quick, scratch);
    if (a === null) continue;
    say(`${name}: node ${[...a.node, f, ...a.args].join(' ')}`);
    const r = await runChild(join(here, f), a.args, a.node, plan.childLimit_ms);
    micro.push(r);
    say(`${name}: exit ${r.exitCode} after ${r.seconds.toFixed(1)} s`);
  }
  return micro;
}

/** Load (per client count) and failover times on three real controllers. */
async function runCluster(plan: Plan, say: Say): Promise<Pick<BenchResult, 'load' | 'failover_ms'>> {
  say('cluster: three controllers on 127.0.0.1');
  cluster = await TestCluster.start({ controllers: 3 });
  const load = [];
  try {
    for (const n of plan.clients) {
      const r = await measureLoad(cluster, n, plan.load_s);
      load.push(r);
      say(
        `  ${String(n).padStart(3)} clients: ${r.perSecond.toFixed(0)} submits/s, p50 ${r.p50_ms.toFixed(1)} ms, p99 ${r.p99_ms.toFixed(1)} ms`,
      );
    }
    return { load, failover_ms: await measureFailover(cluster, plan.kills, (s) => say(`  ${s}`)) };
  } finally {
    await cluster.stop();
    cluster = null;
  }
}

async function main(): Promise<number> {
  const cl = parseCommandLine(
    'bench',
    'npm run bench -- [--quick] [--out DIR]\n' +
      '  --quick    small sizes (a CI smoke check, under two minutes)\n' +
      '  --out DIR  where the JSON result and the SVG charts go (default benchmarks/results/tmp, ignored by git;\n' +
      '             benchmarks/results to publish them)',
    { quick: { type: 'boolean' }, out: { type: 'string' } },
  );
  const plan = cl.values.quick === true ? QUICK : FULL;
  const outDir = cl.values.out ?? join(repoRoot, 'benchmarks', 'results', 'tmp');
  const t0 = performance.now();
  const say: Say = (s) =>
    void process.stdout.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${s}\n`);
  process.on('SIGINT', () => {
    say('Ctrl-C: stopping');
    child?.kill('SIGKILL');
    void (cluster?.stop() ?? Promise.resolve()).then(() => process.exit(130));
  });
  mkdirSync(outDir, { recursive: true });
  const scratch = mkdtempSync(join(outDir, '.scratch-'));
  try {
    say(`measuring the raw fsync rate in ${outDir}`);
    const machine = describeMachine(scratch, plan);
    say(
      `${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, ${Math.round(machine.fsyncPerSecond)} fsyncs/s`,
    );
    const micro = await runMicro(plan, scratch, say);
    say(`WAL group commit over ${WAL_APPENDERS.join(', ')} appenders`);
    const wal = await walSweep(scratch, plan);
    for (const w of wal)
      say(`  ${String(w.appenders).padStart(3)} appenders: ${Math.round(w.perSecond)} durable appends/s`);
    const { load, failover_ms } = await runCluster(plan, say);
    const seconds = (performance.now() - t0) / 1000;
    const result: BenchResult = {
      version: 1,
      date: new Date().toISOString(),
      quick: plan.quick,
      machine,
      micro,
      load,
      failover_ms,
      wal,
      seconds,
    };
    for (const p of writeResults(outDir, result)) say(`wrote ${p}`);
    const failed = micro.filter((m) => m.exitCode !== 0);
    if (failed.length > 0)
      say(`micro-benchmarks that failed: ${failed.map((m) => m.name).join(', ')} (their output is in the result)`);
    return failed.length > 0 ? 1 : 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('run.js')) process.exit(await main());
