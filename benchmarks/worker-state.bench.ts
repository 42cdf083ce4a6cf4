// The text of one worker state-file save (daemon/worker/state-file.ts) once the worker has run
// RECENT_RUNS_MAX jobs: its recent-run list is then full (16,384 keys) and goes into every save,
// one per event-loop turn with a change while jobs run. Each round: a run ends (its key is
// remembered, the oldest goes), then the save's text is made the old way (`JSON.stringify` of the
// whole state, the list spread from the Set) and the new way (the list kept as JSON text by the
// Executor as bytes, spliced in: stateBytes). Both ways give the same bytes (checked).
//
//   node dist/benchmarks/worker-state.bench.js [--saves 2000] [--running 64]

import { RECENT_RUNS_MAX } from '../daemon/worker/executor.js';
import { idleExecutor } from '../testing/worker-fixtures.js';
import { type SavedRun, stateBytes } from '../daemon/worker/state-file.js';
import { parseCommandLine } from '../harness/cli-args.js';

const cl = parseCommandLine(
  'worker-state.bench',
  'node dist/benchmarks/worker-state.bench.js [--saves N] [--running N] (default 2000 saves, 64 running runs)',
  { saves: { type: 'string' }, running: { type: 'string' } },
);
const SAVES = cl.whole('saves', 2000);
const RUNNING = cl.whole('running', 64);

const x = idleExecutor('node01', 1024);
x.remember(Array.from({ length: RECENT_RUNS_MAX }, (_, i) => `${1_000_000 + i}.1`));
const runs: SavedRun[] = Array.from({ length: RUNNING }, (_, i) => ({
  jobId: 2_000_000 + i,
  run: 1,
  phase: 'job',
  pgid: 10_000 + i,
  procStart: '123456789',
  end: null,
  jobReason: null,
  pid: 10_000 + i,
  startedAt: 1_764_000_000_000,
}));
const head = { version: 1 as const, host: 'node01', statuses: [], runs };

/** `saves` rounds of: a run ends (its key remembered, the oldest goes), then one save's bytes made one way. */
function round(
  way: 'stringify' | 'text',
  saves: number,
  first: number,
): { save_us: number; end_us: number; bytes: number } {
  let endUs = 0;
  let saveUs = 0;
  let bytes = 0;
  for (let i = 0; i < saves; i++) {
    const r0 = performance.now();
    x.refuseStart(first + i, 1, 'bench');
    const t0 = performance.now();
    // What StateFile.saveAsync hands to writeFile: before, the text of JSON.stringify (turned into bytes there).
    const data =
      way === 'stringify'
        ? Buffer.from(JSON.stringify({ ...head, recent: x.recentKeys() }))
        : stateBytes({ ...head, recentJson: x.recentJson() });
    bytes = data.length;
    const t1 = performance.now();
    endUs += (t0 - r0) * 1000;
    saveUs += (t1 - t0) * 1000;
  }
  return { save_us: saveUs / saves, end_us: endUs / saves, bytes };
}

// The same text both ways.
if (
  JSON.stringify({ ...head, recent: x.recentKeys() }) !== stateBytes({ ...head, recentJson: x.recentJson() }).toString()
)
  throw new Error('the two ways give different texts');
const results: Record<'stringify' | 'text', number[]> = { stringify: [], text: [] };
let bytes = 0;
let endUs = 0;
let next = 3_000_000;
for (const way of ['stringify', 'text', 'text', 'stringify', 'stringify', 'text'] as const) {
  const r = round(way, SAVES, next);
  next += SAVES;
  results[way].push(r.save_us);
  bytes = r.bytes;
  if (way === 'text') endUs = Math.max(endUs, r.end_us);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
process.stdout.write(
  `state-file save with ${RECENT_RUNS_MAX} recent keys and ${RUNNING} running runs (${bytes} bytes), ${SAVES} saves per round, 3 rounds each: ` +
    `JSON.stringify of the whole state ${results.stringify.map((u) => u.toFixed(0)).join(', ')} µs/save (median ${median(results.stringify).toFixed(0)}), ` +
    `recent kept as JSON bytes ${results.text.map((u) => u.toFixed(0)).join(', ')} µs/save (median ${median(results.text).toFixed(0)}); ` +
    `a run's end with the text's upkeep: at most ${endUs.toFixed(1)} µs\n`,
);
