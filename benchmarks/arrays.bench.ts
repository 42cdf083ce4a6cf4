// Job arrays (issue 13): a 100,000-element array accepted in one submit (the SubmitFact's bytes in
// the log, the leader's admission + encode, and apply on a controller), and the scheduler's pass
// over 100,000 array elements against 100,000 separate pending jobs of the same values (goal: not
// slower than 2x), plus the snapshot's bytes of either state. On one core; prints to stdout only.
//
//   node dist/benchmarks/arrays.bench.js [--quick] [--expose-gc for the heap figures]

import { schedulePass } from '../scheduler/pass.js';
import { admitSubmit } from '../statemachine/admission.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import { submitFactFor } from '../statemachine/jobs.js';
import { snapshot } from '../statemachine/snapshot.js';
import { SPEC, TestCluster } from '../testing/scheduler-cluster.js';
import { median } from '../harness/stats.js';
import { parseCommandLine } from '../harness/cli-args.js';

const quick =
  parseCommandLine('arrays.bench', 'node dist/benchmarks/arrays.bench.js [--quick] (20,000 jobs, 3 rounds)', {
    quick: { type: 'boolean' },
  }).values.quick === true;
const HOSTS = 1_000;
const JOBS = quick ? 20_000 : 100_000;
const ROUNDS = quick ? 3 : 7;

function hostsYaml(): string {
  let s = '';
  for (let i = 0; i < HOSTS; i++)
    s += `  - { name: node${String(i).padStart(4, '0')}, slots: 128, mem: 256G, resources: [ib, x86_64], numeric: { mem: 262144 } }\n`;
  return s;
}
const TEXTS = { hosts: hostsYaml() };
const OWN = { ...SPEC, resreq: 'select[ib]', env: [{ name: 'CASE', value: 'sweep' }] };

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const gc = (globalThis as { gc?: () => void }).gc;
const heapMb = (): number => {
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

// 1. One submit of a JOBS-element array: admission and encoding (the leader), the bytes, apply.
const arrays = new TestCluster(TEXTS);
const config = arrays.state.config!.cluster;
const heap0 = heapMb();
let t0 = process.hrtime.bigint();
const body = submitFactFor(config, 'alice', 'normal', 'serial', { ...OWN, jobName: `sweep[1-${JOBS}]` });
const admitted = admitSubmit(config, 'alice', body);
if (!admitted.ok) throw new Error(admitted.message);
const bytes = encodeFact({ clientId: 'bench-client', sequence: 1, timeMs: Date.now(), body: admitted.submit });
const leaderMs = ms(t0);
t0 = process.hrtime.bigint();
const r = arrays.fact(admitted.submit);
const applyMs = ms(t0);
if (r.kind !== 'submitted') throw new Error(JSON.stringify(r));
const arrayHeap = heapMb() - heap0;
console.log(
  `array submit of ${fmt(JOBS)} elements: one SubmitFact of ${bytes.length} bytes in the log; leader admission + encode ${leaderMs.toFixed(2)} ms; apply (elements made) ${applyMs.toFixed(1)} ms; ${arrays.state.jobs.size} elements`,
);

// 2. The same jobs submitted one by one.
const separate = new TestCluster(TEXTS);
const heap1 = heapMb();
t0 = process.hrtime.bigint();
for (let i = 0; i < JOBS; i++) separate.submit('serial', OWN);
console.log(`${fmt(JOBS)} separate submits applied in ${ms(t0).toFixed(0)} ms`);
const separateHeap = heapMb() - heap1;
if (gc !== undefined)
  console.log(
    `heap: the array ${arrayHeap.toFixed(1)} MB (${((arrayHeap * 2 ** 20) / JOBS).toFixed(0)} B per element), the separate jobs ${separateHeap.toFixed(1)} MB (${((separateHeap * 2 ** 20) / JOBS).toFixed(0)} B per job)`,
  );
console.log(
  `snapshot: the array state ${fmt(snapshot(arrays.state).length)} bytes, the separate jobs ${fmt(snapshot(separate.state).length)} bytes`,
);

// 3. The scheduler's pass over every pending job (each is placed: 128,000 slots).
const everyone = arrays.hostNames();
const OPTS = { maxDispatches: Number.MAX_SAFE_INTEGER, exclude: new Set<number>() };
function rounds(label: string, c: TestCluster): number {
  const out: number[] = [];
  let placed = 0;
  schedulePass(c.state, everyone, OPTS); // warm-up
  for (let k = 0; k < ROUNDS; k++) {
    const t = process.hrtime.bigint();
    placed = schedulePass(c.state, everyone, OPTS).decisions.length;
    out.push(ms(t));
  }
  const m = median(out);
  console.log(
    `pass, ${label}: median ${m.toFixed(1)} ms, ${fmt(placed)} placed (rounds: ${out.map((x) => x.toFixed(0)).join(', ')})`,
  );
  return m;
}
// Alternated so that neither side gets the warmer machine.
const a1 = rounds(`${fmt(JOBS)} array elements`, arrays);
const s1 = rounds(`${fmt(JOBS)} separate jobs`, separate);
const a2 = rounds(`${fmt(JOBS)} array elements (again)`, arrays);
const s2 = rounds(`${fmt(JOBS)} separate jobs (again)`, separate);
const ratio = (a1 + a2) / (s1 + s2);
console.log(`array / separate pass time: ${ratio.toFixed(2)}x (goal: at most 2x) ${ratio <= 2 ? 'OK' : 'TOO SLOW'}`);

// 4. The same array under %50: the limit is checked per element (most pend: the array's limit).
const limited = new TestCluster(TEXTS);
const lr = limited.fact(submitFactFor(config, 'alice', 'normal', 'serial', { ...OWN, jobName: `sweep[1-${JOBS}]%50` }));
if (lr.kind !== 'submitted') throw new Error(JSON.stringify(lr));
rounds(`${fmt(JOBS)} array elements under %50`, limited);
