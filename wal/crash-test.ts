#!/usr/bin/env node
// `npm run crash-test -- --kills N [--seed S] [--appenders K] [--segment-bytes B]`: the crash test
// of crash.test.ts, longer (the WAL, then the snapshot store with --snapshot-kills M). Prints one line per kill and a summary; exits 1 on the first lost save.

import { Command } from 'commander';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCrashTest, runSnapshotCrashTest } from './crash-harness.js';

const program = new Command()
  .name('crash-test')
  .option('--kills <n>', 'number of SIGKILLs', '200')
  .option('--seed <n>', 'seed of the workload and of the kill moments', String(Date.now() % 1_000_000))
  .option('--appenders <n>', 'concurrent appenders in the child', '8')
  .option('--segment-bytes <n>', 'segment size (small, to roll over often)', String(64 * 1024))
  .option('--kill-within-ms <n>', 'the kill lands within this many ms of the child being ready', '150')
  .option('--budget-s <n>', 'stop after this many seconds', '1800')
  .option('--snapshot-kills <n>', 'SIGKILLs of a child committing snapshots (the snapshot store test)', '20')
  .parse();
const o = program.opts<{
  kills: string;
  seed: string;
  appenders: string;
  segmentBytes: string;
  killWithinMs: string;
  budgetS: string;
  snapshotKills: string;
}>();

const dir = mkdtempSync(join(tmpdir(), 'xce-crash-'));
const seed = Number(o.seed);
console.log(
  `crash-test: seed ${seed}, ${o.kills} kills, ${o.appenders} appenders, segments of ${o.segmentBytes} B, dir ${dir}`,
);
try {
  const r = await runCrashTest({
    dir: join(dir, 'wal'),
    seed,
    kills: Number(o.kills),
    appenders: Number(o.appenders),
    segmentBytes: Number(o.segmentBytes),
    killWithinMs: Number(o.killWithinMs),
    budgetMs: Number(o.budgetS) * 1000,
    onKill: (k) =>
      console.log(
        `kill ${k.kill}: acked save #${k.ackedSave}, recovered save #${k.recoveredSave} (entries ${k.firstIndex}..${k.lastIndex}` +
          `${k.tornTailBytes ? `, torn tail of ${k.tornTailBytes} B cut` : ''})`,
      ),
  });
  const sr = await runSnapshotCrashTest({
    location: join(dir, 'snap'),
    seed,
    kills: Number(o.snapshotKills),
    budgetMs: Number(o.budgetS) * 1000,
  });
  console.log(`crash-test: snapshot store OK: ${sr.kills} kills, last snapshot ${sr.lastIndex} whole and current`);
  console.log(
    `crash-test: OK: ${r.kills} kills, ${r.saves} saves, ${r.tornTails} torn tails cut, no acknowledged save lost (seed ${seed})`,
  );
  rmSync(dir, { recursive: true, force: true });
} catch (e) {
  console.error(`crash-test: FAILED (seed ${seed}; directory kept at ${dir}):\n${(e as Error).message}`);
  process.exitCode = 1;
}
