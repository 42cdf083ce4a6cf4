// The snapshot benchmarks (`npm run bench:snapshot-stall`, `npm run bench:snapshot-catchup`) run
// here at a small size, so that CI keeps them working; their figures come from the full size
// (benchmarks/README.md). Each runs as its own process, as npm runs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

function run(script: string, args: string[]): string {
  const r = spawnSync(process.execPath, [`${here}${script}`, ...args], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${script} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('a new member catches up by a streamed snapshot (bench:snapshot-catchup at 3,000 jobs)', () => {
  const out = run('snapshot-catchup.bench.js', ['--jobs', '3000', '--limit-s', '60']);
  assert.match(out, /^loaded 3,000 jobs/m);
  assert.match(out, /^node 2 caught up by snapshot in \d+ ms \(\d+ MiB, 1 transfer\(s\) started, 0 abandoned\)$/m);
  assert.match(out, /node 1: sent snapshot \(streamed in \d+ ms\)/);
  assert.match(out, /node 2: installed a snapshot from the leader \(stored in \d+ ms, restored in \d+ ms\)/);
});

test('a snapshot taken under writes reports its stall and the writes (bench:snapshot-stall at 3,000 jobs)', () => {
  const out = run('snapshot-stall.bench.js', ['--jobs', '3000']);
  assert.match(out, /^snapshot at index \d+ of 3,\d{3} jobs: \d+ ms in all/m);
  assert.match(out, /^longest event-loop stall during it: \d+ ms/m);
  assert.match(out, /^writes proposed during it: \d+, latency median \d+ ms, max \d+ ms$/m);
  assert.match(out, /^restore of the stored snapshot \(3,000 jobs, \d+ MiB\), 3 times: \d+ ms, \d+ ms, \d+ ms; /m);
  assert.match(out, /; median \d+ ms; then the end-time index: median \d+ ms$/m);
  assert.match(out, /^submits with a dependency by job name on the restored state \(9, apply each\): the first /m);
});
