// `npm run bench:cluster` at a small size with a warm-up: each client count runs its warm-up first,
// printed and left out of the results, then its measured run. Nothing here asserts a rate or a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadResult } from './load-gen.js';

const bench = fileURLToPath(new URL('./cluster.bench.js', import.meta.url));

test('cluster.bench --warmup: a warm-up before each client count, not among the results', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-cluster-bench-'));
  try {
    const out = join(dir, 'cluster.json');
    const args = ['--clients', '1,4', '--duration', '1', '--warmup', '1', '--kills', '0', '--out', out];
    const r = spawnSync(process.execPath, [bench, ...args], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `cluster.bench exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    const lines = r.stdout.split('\n').filter((l) => /clients/.test(l));
    assert.deepEqual(
      lines.map((l) => (l.startsWith('warm-up: ') ? `warm-up ${l.split(' ')[1]}` : `run ${l.trim().split(' ')[0]}`)),
      ['warm-up 1', 'run 1', 'warm-up 4', 'run 4'],
      r.stdout,
    );
    assert.match(lines[0]!, /^warm-up: 1 clients for [\d.]+ s, \d+ submits\/s, p50 [\d.]+ ms \(not counted\)$/);
    const result = JSON.parse(readFileSync(out, 'utf8')) as { warmup_s: number; load: LoadResult[] };
    assert.equal(result.warmup_s, 1);
    assert.deepEqual(
      result.load.map((l) => l.clients),
      [1, 4],
    );
    for (const l of result.load) {
      assert.ok(l.submits > 0, `${l.clients} clients: no submit acknowledged`);
      assert.equal(l.errors, 0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
