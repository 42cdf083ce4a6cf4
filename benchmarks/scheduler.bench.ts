// The scheduler's pass (scheduler/): 1,000 hosts (`--hosts N`), 100,000 pending jobs under a profile with
// select and rusage terms, on one core.
//
//   node dist/benchmarks/scheduler.bench.js [--quick] [--hosts 1000] [--restored]
//
// --restored: the pending jobs are those of a snapshot of them restored (statemachine/snapshot.ts),
// as a controller that started from a snapshot holds them (their specs partly lazy: lazy-parts.ts).
//
// Goals (issue 7): at least 20,000 jobs placed per second; a profile change re-merging all 100,000
// pending jobs in under 0.5 s end to end (the ConfigFact applied + a whole pass over the pending
// jobs with their new reasons or placements). Figures go to benchmarks/README.md ("scheduler").

import { Bench } from 'tinybench';

import { ClusterPools, HostView } from '../scheduler/host-view.js';
import { schedulePass, type PassResult } from '../scheduler/pass.js';
import { Placer } from '../scheduler/placement.js';
import { TestCluster } from '../testing/scheduler-cluster.js';
import { jobLiveMerge } from '../statemachine/jobs.js';
import { restore, snapshot } from '../statemachine/snapshot.js';
import { median } from '../harness/stats.js';
import { parseCommandLine } from '../harness/cli-args.js';

const cl = parseCommandLine(
  'scheduler.bench',
  'node dist/benchmarks/scheduler.bench.js [--quick] (20,000 jobs, 3 rounds) [--hosts 1000] (hosts in the cluster) ' +
    '[--restored] (the pending jobs restored from a snapshot)',
  { quick: { type: 'boolean' }, hosts: { type: 'string' }, restored: { type: 'boolean' } },
);
const quick = cl.values.quick === true;
const RESTORED = cl.values.restored === true;
const HOSTS = cl.whole('hosts', 1_000, 20, 100_000);
const PENDING = quick ? 20_000 : 100_000;
const ROUNDS = quick ? 3 : 7;

/** HOSTS hosts (1,000 by default): 128 slots, 256 GB (262144 MB) each; 9 in 10 with InfiniBand; 20 racks. */
function hostsYaml(slots: number): string {
  let s = '';
  for (let i = 0; i < HOSTS; i++) {
    const name = `node${String(i).padStart(4, '0')}`;
    const bools = i % 10 === 9 ? '[x86_64]' : '[ib, x86_64]';
    s += `  - { name: ${name}, slots: ${slots}, mem: 256G, resources: ${bools}, numeric: { mem: 262144 }, strings: { rack: r${i % 20} } }\n`;
  }
  return s;
}

const RESOURCES = `  - { name: ib, type: boolean }
  - { name: x86_64, type: boolean }
  - { name: mem, type: numeric }
  - { name: gpu, type: numeric }
  - { name: rack, type: string }
  - { name: license_foam, type: numeric, scope: cluster, total: 1000000 }
`;

/** The profile: select and rusage terms (host-scoped mem per task, a license per job). */
function apps(variant: 'base' | 'env' | 'tight'): string {
  const rusage = variant === 'tight' ? 'mem=2000,license_foam=2' : 'mem=2000,license_foam=1';
  const env =
    variant === 'env' ? '{ FOAM_INST_DIR: /opt/openfoam, FOAM_VERSION: "12" }' : '{ FOAM_INST_DIR: /opt/openfoam }';
  return `  - name: serial
    mode: direct
  - name: openfoam
    mode: direct
    launch_type: openmpi
    resreq: "select[ib && mem>8000] rusage[${rusage}]"
    tasks: { min: 1, max: 512 }
    env: ${env}
    job_pre_post_exec: allow
`;
}

/** The pending jobs' own -R (a few shapes, as users write them); 1 in 4 restates the license. */
const OWN_RESREQ = [
  null,
  'select[rack!=r7]',
  'rusage[license_foam=1]',
  null,
  'order[-mem]',
  null,
  'span[ptile=2]',
  null,
];

function build(slots: number): TestCluster {
  const c = new TestCluster({ hosts: hostsYaml(slots), resources: RESOURCES, apps: apps('base') });
  for (let i = 0; i < PENDING; i++) {
    const resreq = OWN_RESREQ[i % OWN_RESREQ.length] ?? null;
    c.submit(
      'openfoam',
      { resreq, tasks: resreq === 'span[ptile=2]' ? 2 : 1, env: [{ name: 'CASE', value: `case-${i % 100}` }] },
      i % 3 === 0 ? 'urgent' : 'normal',
    );
  }
  // The same state, its jobs as a restore builds them (every field of the state replaced by the restored one's).
  if (RESTORED) Object.assign(c.state, restore(snapshot(c.state)));
  return c;
}

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function runs(label: string, f: () => void): number[] {
  const out: number[] = [];
  f(); // warm-up
  for (let k = 0; k < ROUNDS; k++) {
    const t0 = process.hrtime.bigint();
    f();
    out.push(ms(t0));
  }
  console.log(`${label}: median ${median(out).toFixed(1)} ms (rounds: ${out.map((x) => x.toFixed(0)).join(', ')})`);
  return out;
}

let t0 = process.hrtime.bigint();
const roomy = build(128); // 900 ib hosts x 128 slots = 115,200 slots: every pending job fits
console.log(
  `set-up: ${HOSTS} hosts, ${fmt(PENDING)} pending jobs submitted through apply${RESTORED ? ', snapshot, restored,' : ''} in ${ms(t0).toFixed(0)} ms`,
);
const everyone = roomy.hostNames();
const NONE = new Set<number>();
const UNBOUNDED = { maxDispatches: Number.MAX_SAFE_INTEGER, exclude: NONE };

// 1. Jobs placed per second: one pass places every pending job (decisions + frozen records).
let last: PassResult | null = null;
const placeAll = runs(`pass placing all ${fmt(PENDING)} jobs`, () => {
  last = schedulePass(roomy.state, everyone, UNBOUNDED);
});
const placed = (last as PassResult | null)?.decisions.length ?? 0;
if (placed !== PENDING) throw new Error(`expected every job placed, got ${placed}`);
const placedPerS = (placed / median(placeAll)) * 1000;
console.log(`  → ${fmt(placedPerS)} jobs placed/s (goal ≥ 20,000/s)`);

// 2. A full cluster: 32 slots per host (28,800 on ib hosts): about a third placed, the rest get a reason.
const tight = build(32);
let full: PassResult | null = null;
const fullRounds = runs(`pass over ${fmt(PENDING)} jobs on a cluster that holds a third`, () => {
  full = schedulePass(tight.state, tight.hostNames(), UNBOUNDED);
});
const f = full as PassResult | null;
console.log(
  `  → ${fmt(f?.decisions.length ?? 0)} placed, ${fmt(f?.pending.size ?? 0)} pending with a reason, e.g. "${[...(f?.pending.values() ?? [])][0]}"; ${fmt((PENDING / median(fullRounds)) * 1000)} jobs considered/s`,
);

// 3. A profile change, end to end: the ConfigFact applied, then a pass re-merging every pending job.
function profileChange(
  label: string,
  a: 'base' | 'env' | 'tight',
  b: 'base' | 'env' | 'tight',
  check: (r: PassResult) => void,
): number[] {
  let flip = false;
  return runs(label, () => {
    flip = !flip;
    const r = roomy.configure({ hosts: hostsYaml(128), resources: RESOURCES, apps: apps(flip ? b : a) });
    if (r.kind !== 'configApplied') throw new Error(JSON.stringify(r));
    check(schedulePass(roomy.state, everyone, UNBOUNDED));
  });
}
const admitted = profileChange(
  `profile change (env added), ConfigFact + pass re-merging and placing ${fmt(PENDING)} jobs`,
  'base',
  'env',
  (r) => {
    if (r.decisions.length !== PENDING) throw new Error('not all placed');
  },
);
const refusedAll = profileChange(
  `profile change (rusage[license_foam=2]), ConfigFact + pass: every job that restates the license refused`,
  'base',
  'tight',
  (r) => {
    if (r.pending.size === 0 && r.decisions.length !== PENDING) throw new Error('unexpected');
  },
);

// 4. The same change with the batch the loop proposes (maxDispatches 1,000): every job re-merged and
//    its reason refreshed, the first 1,000 placed, the rest deferred to the next pass.
let flipBatch = false;
const BATCH = { maxDispatches: 1_000, exclude: NONE };
const batched = runs(
  `profile change (env added), ConfigFact + pass with a batch of 1,000 over ${fmt(PENDING)} jobs`,
  () => {
    flipBatch = !flipBatch;
    const r = roomy.configure({ hosts: hostsYaml(128), resources: RESOURCES, apps: apps(flipBatch ? 'env' : 'base') });
    if (r.kind !== 'configApplied') throw new Error(JSON.stringify(r));
    const p = schedulePass(roomy.state, everyone, BATCH);
    if (p.decisions.length + p.deferred !== PENDING) throw new Error('jobs missing');
  },
);
const configOnly = runs(`the ConfigFact alone (loadConfig of ${fmt(HOSTS)} hosts + usage rebuild)`, () => {
  flipBatch = !flipBatch;
  roomy.configure({ hosts: hostsYaml(128), resources: RESOURCES, apps: apps(flipBatch ? 'env' : 'base') });
});

// Micro: the pieces of the pass (tinybench).
const config = roomy.state.config!.cluster;
const job = roomy.state.jobs.get(1)!;
const merged = jobLiveMerge(roomy.state, job);
if (!merged.ok) throw new Error('merge refused');
const bench = new Bench({ time: quick ? 200 : 1000 });
bench
  .add(`HostView + ClusterPools for ${fmt(HOSTS)} hosts`, () => {
    new HostView(config, roomy.state.usage, everyone);
    new ClusterPools(config, roomy.state.usage);
  })
  .add(`select host set, ${fmt(HOSTS)} hosts (new pass: compile + evaluate select[ib && mem>8000])`, () => {
    const view = new HostView(config, roomy.state.usage, everyone);
    new Placer(view, new ClusterPools(config, roomy.state.usage)).requirement(merged.effective.resreq);
  })
  .add('liveMerge of one pending job', () => {
    if (!jobLiveMerge(roomy.state, job).ok) throw new Error('refused');
  });
await bench.run();
const micro: string[] = [];
for (const t of bench.tasks) {
  const r = t.result;
  if (r === undefined || !('latency' in r)) continue;
  micro.push(`| ${t.name} | ${(r.latency.p50 * 1000).toFixed(2)} µs |`);
}

console.log('\n| measure | median |');
console.log('|---|---|');
console.log(
  `| jobs placed/s (one pass placing all ${fmt(PENDING)}) | ${fmt(placedPerS)}/s (${median(placeAll).toFixed(0)} ms per pass) |`,
);
console.log(`| pass over ${fmt(PENDING)} on a cluster holding a third | ${median(fullRounds).toFixed(0)} ms |`);
console.log(
  `| profile change (admitted), ConfigFact + pass re-merging and placing all | ${median(admitted).toFixed(0)} ms |`,
);
console.log(`| profile change (tightened), ConfigFact + pass | ${median(refusedAll).toFixed(0)} ms |`);
console.log(
  `| profile change (admitted), ConfigFact + pass with a batch of 1,000 | ${median(batched).toFixed(0)} ms |`,
);
console.log(`| the ConfigFact alone | ${median(configOnly).toFixed(0)} ms |`);
for (const m of micro) console.log(m);
