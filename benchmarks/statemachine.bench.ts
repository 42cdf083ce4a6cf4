// The state machine's hot paths: the facts codec (hand-written vs capnp-es vs JSON), apply of
// SubmitFacts, and the snapshot of 1,000,000 jobs (write, restore, size, heap).
//
//   node --expose-gc dist/benchmarks/statemachine.bench.js [--jobs 1000000] [--quick] [--only codec|apply|snapshot]
//
// --quick runs small sizes (a smoke run). Figures go to benchmarks/README.md ("statemachine").

import { PerformanceObserver } from 'node:perf_hooks';

import * as capnp from 'capnp-es';
import { Bench } from 'tinybench';

import * as S from '../schema/facts.js';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { decodeFact, encodeFact } from '../statemachine/facts-codec.js';
import type { Fact, JobSpec } from '../statemachine/facts.js';
import { caseJobSpec } from './case-job.js';
import { liveMerge } from '../statemachine/jobs.js';
import { restore, snapshot } from '../statemachine/snapshot.js';
import { editJob, emptyState, type ControllerState } from '../statemachine/state.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import { median } from '../harness/stats.js';
import { parseCommandLine } from '../harness/cli-args.js';

const PARTS = ['codec', 'apply', 'snapshot'] as const;
const cl = parseCommandLine(
  'statemachine.bench',
  'node --expose-gc dist/benchmarks/statemachine.bench.js [--jobs N] [--quick] [--only codec|apply|snapshot]\n' +
    '  --jobs N     jobs in the snapshot (default 1,000,000; 20,000 with --quick)\n' +
    '  --quick      small sizes (a smoke run)\n' +
    '  --only PART  run one part: codec, apply or snapshot',
  { jobs: { type: 'string' }, quick: { type: 'boolean' }, only: { type: 'string' } },
);
const quick = cl.values.quick === true;
const SNAPSHOT_JOBS = cl.whole('jobs', quick ? 20_000 : 1_000_000);
const APPLY_BATCH = quick ? 20_000 : 200_000;
const APPLY_ROUNDS = quick ? 2 : 5;
/** --only codec|apply|snapshot runs one part (to iterate on it without the others' noise). */
const only = cl.values.only;
if (only !== undefined && !(PARTS as readonly string[]).includes(only))
  cl.fail(`--only takes one of ${PARTS.join(', ')}, not "${only}"`);
const gc = (globalThis as { gc?: () => void }).gc;

const T0 = 1_764_547_200_000;

/** A typical submit: a profile, a small -R, a task count, two env vars, a command. */
function typicalSpec(i: number): JobSpec {
  return caseJobSpec(i, {
    resreq: 'select[mem>64000] span[ptile=16]',
    tasks: 64,
    jobName: `pipe-${i}`,
    extraEnv: [{ name: 'OMP_NUM_THREADS', value: '1' }],
  });
}

function submitFact(i: number, clients = 1000): Fact {
  return {
    clientId: `c-${(i % clients).toString(16).padStart(24, '0')}`,
    sequence: Math.floor(i / clients) + 1,
    timeMs: T0 + i,
    body: submitBody(typicalSpec(i)),
  };
}

/** alice's submit of `spec` to the normal queue with the openfoam profile. */
function submitBody(spec: JobSpec): Fact['body'] {
  return {
    kind: 'submit',
    user: 'alice',
    queue: 'normal',
    profile: 'openfoam',
    profileRequested: null,
    spec,
    dependency: null,
    dependencyKill: false,
  };
}

interface Timed<T> {
  value: T;
  wall_ms: number;
  cpu_ms: number;
  user_ms: number;
  system_ms: number;
  start_ms: number;
}

/** Wall and CPU time (the whole process: includes GC helper threads) of one call. */
function timed<T>(fn: () => T): Timed<T> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const wall_ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return {
    value,
    wall_ms,
    cpu_ms: (c.user + c.system) / 1000,
    user_ms: c.user / 1000,
    system_ms: c.system / 1000,
    start_ms: t0,
  };
}

/** Garbage-collection pauses (main thread) as the runtime reports them, to split a timing. */
const gcPauses: { start_ms: number; duration_ms: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push({ start_ms: e.startTime, duration_ms: e.duration });
}).observe({ entryTypes: ['gc'] });

/** Milliseconds of GC pause inside a timed call (the observer reports after a turn of the event loop). */
async function gcPause_ms(t: Timed<unknown>): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  let ms = 0;
  for (const p of gcPauses) if (p.start_ms >= t.start_ms && p.start_ms < t.start_ms + t.wall_ms) ms += p.duration_ms;
  return ms;
}

const split = async (t: Timed<unknown>): Promise<string> =>
  `${(t.wall_ms / 1000).toFixed(2)} s wall; CPU ${(t.cpu_ms / 1000).toFixed(2)} s (user ${(t.user_ms / 1000).toFixed(2)}, system ${(t.system_ms / 1000).toFixed(2)}); GC pauses ${((await gcPause_ms(t)) / 1000).toFixed(2)} s`;

const mib = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;
const rate = (n: number): string => `${Math.round(n).toLocaleString('en-US')}/s`;

// ---- 1. codec ----

function capnpEsEncode(f: Fact): ArrayBuffer {
  const b = f.body;
  if (b.kind !== 'submit') throw new Error('submit only');
  const msg = new capnp.Message();
  const root = msg.initRoot(S.Fact);
  root.clientId = f.clientId ?? '';
  root.sequence = BigInt(f.sequence);
  root.timeMs = BigInt(f.timeMs);
  const s = root._initSubmit();
  s.user = b.user;
  s.queue = b.queue;
  s.profile = b.profile ?? '';
  const spec = s._initSpec();
  spec.resreq = b.spec.resreq ?? '';
  spec.tasks = b.spec.tasks ?? 0;
  const env = spec._initEnv(b.spec.env.length);
  b.spec.env.forEach((e, i) => {
    env.get(i).name = e.name;
    env.get(i).value = e.value;
  });
  spec._initLimits().runtimeS = BigInt(b.spec.limits.runtime_s ?? 0);
  const cmd = spec._initCommand(b.spec.command.length);
  b.spec.command.forEach((c, i) => cmd.set(i, c));
  spec.cwd = b.spec.cwd ?? '';
  spec.stdoutPath = b.spec.stdoutPath ?? '';
  spec.jobName = b.spec.jobName ?? '';
  return msg.toArrayBuffer();
}

function capnpEsDecode(buf: ArrayBuffer): unknown {
  const root = new capnp.Message(buf, false).getRoot(S.Fact);
  const s = root.submit;
  const spec = s.spec;
  return {
    clientId: root.clientId,
    sequence: root.sequence,
    timeMs: root.timeMs,
    user: s.user,
    queue: s.queue,
    profile: s.profile,
    resreq: spec.resreq,
    tasks: spec.tasks,
    env: spec.env.map((e: S.EnvVar) => ({ name: e.name, value: e.value })),
    runtime: spec.limits.runtimeS,
    command: spec.command.map((c: string) => c),
    cwd: spec.cwd,
    stdout: spec.stdoutPath,
    jobName: spec.jobName,
  };
}

/** A small submit (about 300 bytes): the size the capnp-es figures were measured on. */
function smallSubmitFact(): Fact {
  return {
    clientId: 'c-0123456789abcdef01234567',
    sequence: 42,
    timeMs: T0,
    body: submitBody({ ...typicalSpec(1), resreq: null, env: [], limits: {}, stdoutPath: null, jobName: null }),
  };
}

async function benchCodec(): Promise<void> {
  const fact = submitFact(12345);
  const small = smallSubmitFact();
  const bytes = encodeFact(fact);
  const esBytes = capnpEsEncode(fact);
  const json = JSON.stringify(fact);
  const bench = new Bench({ time: quick ? 200 : 1000 });
  bench
    .add('hand codec: encode SubmitFact', () => {
      encodeFact(fact);
    })
    .add('hand codec: decode SubmitFact', () => {
      decodeFact(bytes);
    })
    .add('hand codec: encode + decode SubmitFact', () => {
      decodeFact(encodeFact(fact));
    })
    .add('hand codec: encode + decode small SubmitFact', () => {
      decodeFact(encodeFact(small));
    })
    .add('capnp-es: encode SubmitFact', () => {
      capnpEsEncode(fact);
    })
    .add('capnp-es: decode every field', () => {
      capnpEsDecode(esBytes);
    })
    .add('JSON: stringify + parse', () => {
      JSON.parse(JSON.stringify(fact));
    });
  await bench.run();
  console.log(
    `\n## codec (SubmitFact: ${bytes.length} bytes Cap'n Proto, ${json.length} bytes JSON; small SubmitFact: ${encodeFact(small).length} bytes)`,
  );
  for (const t of bench.tasks) {
    const r = t.result;
    if (r.state !== 'completed') throw new Error(`${t.name}: ${r.state}`);
    console.log(
      `${t.name.padEnd(44)} ${rate(r.throughput.p50).padStart(14)}  (median ${(r.latency.p50 * 1000).toFixed(2)} µs)`,
    );
  }
}

// ---- 2. apply ----

function configured(): ControllerState {
  const s = emptyState();
  const r = apply(
    s,
    { clientId: null, sequence: 0, timeMs: T0, body: { kind: 'config', files: testClusterFiles(), user: null } },
    1,
  );
  if (r.kind !== 'configApplied') throw new Error(JSON.stringify(r));
  return s;
}

function benchApply(): void {
  const facts = Array.from({ length: APPLY_BATCH }, (_, i) => submitFact(i));
  const encoded = facts.map(encodeFact);
  const fromBytes: number[] = [];
  const fromBytesCpu: number[] = [];
  const fromDecoded: number[] = [];
  const fromDecodedCpu: number[] = [];
  for (let round = 0; round < APPLY_ROUNDS; round++) {
    let s = configured();
    const a = timed(() => {
      for (let i = 0; i < encoded.length; i++) apply(s, encoded[i]!, i + 2);
    });
    fromBytes.push(encoded.length / (a.wall_ms / 1000));
    fromBytesCpu.push(encoded.length / (a.cpu_ms / 1000));
    if (s.jobs.size !== APPLY_BATCH) throw new Error(`only ${s.jobs.size} jobs accepted`);
    s = configured();
    const b = timed(() => {
      for (let i = 0; i < facts.length; i++) apply(s, facts[i]!, i + 2);
    });
    fromDecoded.push(facts.length / (b.wall_ms / 1000));
    fromDecodedCpu.push(facts.length / (b.cpu_ms / 1000));
  }
  console.log(
    `\n## apply (${APPLY_BATCH.toLocaleString('en-US')} SubmitFacts into a fresh state, ${APPLY_ROUNDS} rounds, median; wall / per CPU-second)`,
  );
  console.log(
    `apply from bytes (decode + apply)           ${rate(median(fromBytes)).padStart(14)} / ${rate(median(fromBytesCpu))}`,
  );
  console.log(
    `apply of decoded facts                      ${rate(median(fromDecoded)).padStart(14)} / ${rate(median(fromDecodedCpu))}`,
  );
}

// ---- 3. snapshot ----

/**
 * SNAPSHOT_JOBS submits applied from bytes, as a controller applies its log (the heap then holds what
 * a controller's does: the decoder shares repeated env lists, argvs and limits between jobs); a
 * quarter of them ran and finished, with a frozen dispatch record.
 */
function snapshotState(): ControllerState {
  const state = configured();
  let index = 1;
  for (let i = 0; i < SNAPSHOT_JOBS; i++) apply(state, encodeFact(submitFact(i, 5000)), ++index);
  const cfg = state.config!.cluster;
  for (const job of state.jobs.values()) {
    if (job.id % 4 !== 0) continue;
    const m = liveMerge(cfg, job.profile, job.spec);
    if (!m.ok) throw new Error(m.reason);
    const run = editJob(state, job);
    run.record = buildDispatchRecord(m.effective, m.hash, [
      { host: 'n1', tasks: 32 },
      { host: 'n2', tasks: 32 },
    ]);
    run.runNumber = 1;
    run.state = 'DONE';
    run.dispatchTimeMs = T0 + 1;
    run.started = true;
    run.pid = 1000 + job.id;
    run.startTimeMs = T0 + 2;
    run.endTimeMs = T0 + 3;
  }
  return state;
}

/**
 * What `jobs list` reads of every finished job (held encoded: lazy-parts.ts), and `jobs show`'s full
 * decode of one, over all of them.
 */
function readFinished(restored: ControllerState): { finished: number; list: Timed<number>; show: Timed<number> } {
  let finished = 0;
  const list = timed(() => {
    let n = 0;
    for (const j of restored.jobs.values()) {
      if (j.state !== 'DONE' && j.state !== 'EXIT') continue;
      finished++;
      n +=
        (j.record?.profile ?? '').length +
        (j.record?.hosts.length ?? 0) +
        (j.spec.jobName ?? '').length +
        j.spec.command.length;
    }
    return n;
  });
  const show = timed(() => {
    let n = 0;
    for (const j of restored.jobs.values())
      if (j.state === 'DONE' || j.state === 'EXIT')
        n += JSON.stringify(j.record).length + JSON.stringify(j.spec).length;
    return n;
  });
  return { finished, list, show };
}

async function benchSnapshot(): Promise<void> {
  let state: ControllerState | null = snapshotState();
  gc?.();
  const before = process.memoryUsage();
  const w = timed(() => snapshot(state!));
  const bytes = w.value;
  const afterWrite = process.memoryUsage();
  const size = bytes.length;
  const nJobs = state.jobs.size;
  state = null;
  gc?.();
  const beforeRestore = process.memoryUsage();
  const rs = timed(() => restore(bytes));
  const afterRestore = process.memoryUsage();
  if (rs.value.jobs.size !== nJobs) throw new Error('restore lost jobs');
  const { finished, list, show } = readFinished(rs.value);
  console.log(
    `\n## snapshot of ${nJobs.toLocaleString('en-US')} jobs (3/4 pending, 1/4 finished with a dispatch record)`,
  );
  console.log(`size                                        ${mib(size)} (${Math.round(size / nJobs)} bytes/job)`);
  console.log(`write                                       ${await split(w)}`);
  console.log(`restore                                     ${await split(rs)}`);
  console.log(
    `heap used: state built ${mib(before.heapUsed)}, after write ${mib(afterWrite.heapUsed)}; before restore ${mib(beforeRestore.heapUsed)}, after restore ${mib(afterRestore.heapUsed)}`,
  );
  console.log(
    `array buffers (the snapshot, outside the JS heap): ${mib(afterWrite.arrayBuffers)} after write, ${mib(afterRestore.arrayBuffers)} after restore (the restored state reads its finished jobs from it); rss peak seen ${mib(Math.max(afterWrite.rss, afterRestore.rss))}`,
  );
  console.log(
    `reading ${finished.toLocaleString('en-US')} finished jobs after restore: list fields ${(list.wall_ms / 1000).toFixed(2)} s wall (${((list.wall_ms * 1000) / finished).toFixed(2)} µs/job); full record + spec as JSON ${(show.wall_ms / 1000).toFixed(2)} s wall (${((show.wall_ms * 1000) / finished).toFixed(2)} µs/job)`,
  );
  if (gc === undefined) console.log('(run with node --expose-gc for heap figures after collection)');
}

if (only === undefined || only === 'codec') await benchCodec();
if (only === undefined || only === 'apply') benchApply();
if (only === undefined || only === 'snapshot') await benchSnapshot();
