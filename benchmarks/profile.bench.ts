// Application profiles' hot paths: the additive-rule merge (the scheduler re-merges every pending
// job when a profile changes), resreq parsing (every submit), the content hash, and loading the
// whole configuration (config build, live upgrade, controller start).
//
//   node dist/benchmarks/profile.bench.js [--quick]
//
// Goals (issue 4): merge >= 500,000/s on one core (100,000 pending jobs re-merged in < 0.2 s);
// parse >= 200,000/s. Figures go to benchmarks/README.md ("profiles").

import { readdirSync, readFileSync } from 'node:fs';
import { Bench } from 'tinybench';

import { loadConfig } from '../model/config.js';
import { jobOwnValues } from '../model/job-own-values.js';
import { merge } from '../model/merge.js';
import type { JobOwnValues, Profile } from '../model/profile-types.js';
import { profileHash } from '../model/profile-hash.js';
import { formatResReq, parseResReq } from '../model/resreq.js';
import { parseCommandLine } from '../harness/cli-args.js';

const quick =
  parseCommandLine('profile.bench', 'node dist/benchmarks/profile.bench.js [--quick] (shorter runs)', {
    quick: { type: 'boolean' },
  }).values.quick === true;
const PENDING_JOBS = 100_000;

const CONFIGS = new URL('../../configs/', import.meta.url);
const files = readdirSync(CONFIGS)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => ({ path: f, text: readFileSync(new URL(f, CONFIGS), 'utf8') }));
const loaded = loadConfig(files);
if (!loaded.ok) throw new Error('the shipped configuration does not load');
const openfoam = loaded.config.profiles.get('openfoam') as Profile;

/** A realistic pending job under openfoam: a select term, a reservation, a span, tasks, env, a limit. */
const RESREQ = 'select[mem>64000 && (a100 || h100)] rusage[mem=4000] span[ptile=16]';
function typicalJob(i: number): JobOwnValues {
  return jobOwnValues({
    resreq: RESREQ,
    tasks: 64,
    env: { CASE: `case-${i % 100}`, OMP_NUM_THREADS: '1' },
    limits: { runtime: '1h' },
  });
}
const job = typicalJob(0);
const pending = Array.from({ length: PENDING_JOBS }, (_, i) => typicalJob(i));
const refused = jobOwnValues({ resreq: 'rusage[license_foam=2]' });

const rate = (n: number): string => `${Math.round(n).toLocaleString('en-US')}/s`;

const bench = new Bench({ time: quick ? 200 : 1500 });
bench
  .add('merge (openfoam + typical job, accepted)', () => {
    const r = merge(openfoam, job);
    if (!r.ok) throw new Error('refused');
  })
  .add('merge (refused: changes rusage)', () => {
    if (merge(openfoam, refused).ok) throw new Error('accepted');
  })
  .add('parseResReq (typical -R)', () => {
    parseResReq(RESREQ);
  })
  .add('parseResReq (profile resreq)', () => {
    parseResReq('select[ib] rusage[license_foam=1]');
  })
  .add('formatResReq', () => {
    formatResReq(job.resreq!);
  })
  .add('profileHash (openfoam)', () => {
    profileHash(openfoam);
  })
  .add('loadConfig (shipped configs/, 7 files)', () => {
    if (!loadConfig(files).ok) throw new Error('config');
  });
await bench.run();

console.log(`profile benchmarks (${quick ? 'quick' : 'full'}), node ${process.version}`);
for (const t of bench.tasks) {
  const r = t.result;
  if (r === undefined || !('throughput' in r)) continue;
  console.log(
    `${t.name.padEnd(44)} ${rate(r.throughput.p50).padStart(14)}  (median ${(r.latency.p50 * 1000).toFixed(2)} µs)`,
  );
}

// The scheduler's case: a profile changed, every pending job re-merges. Median of 5 rounds.
const rounds: number[] = [];
for (let k = 0; k < (quick ? 2 : 5); k++) {
  const t0 = process.hrtime.bigint();
  let accepted = 0;
  for (const j of pending) if (merge(openfoam, j).ok) accepted++;
  rounds.push(Number(process.hrtime.bigint() - t0) / 1e6);
  if (accepted !== PENDING_JOBS) throw new Error('a pending job was refused');
}
rounds.sort((a, b) => a - b);
console.log(
  `re-merge of ${PENDING_JOBS.toLocaleString('en-US')} pending jobs: median ${rounds[Math.floor(rounds.length / 2)]!.toFixed(1)} ms (rounds: ${rounds.map((x) => x.toFixed(1)).join(', ')})`,
);
