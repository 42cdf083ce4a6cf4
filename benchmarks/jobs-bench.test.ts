// `npm run bench:jobs` at a small size, with the leader killed half-way, so that CI keeps the bench
// working and checks what its target says besides the rate: across a leader kill, every acknowledged
// job ends DONE with its dispatch record and one run, and the surviving controllers are identical.
// The rate itself comes from the full size (benchmarks/README.md); nothing here asserts a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bench = fileURLToPath(new URL('./jobs.bench.js', import.meta.url));

test('jobs.bench --kill-leader: every acknowledged job DONE with its record, one run, controllers identical', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xce-jobs-bench-'));
  try {
    const out = join(dir, 'jobs.json');
    const r = spawnSync(process.execPath, [bench, '--jobs', '60', '--kill-leader', '--out', out], {
      encoding: 'utf8',
      timeout: 180_000,
    });
    assert.equal(r.status, 0, `jobs.bench exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /^leader \(controller \d\) killed [\d.]+ s after the first submit$/m);
    assert.match(
      r.stdout,
      /^checked: all 60 jobs DONE with exit code 0, a dispatch record and one run; 2 live controllers identical at applied index \d+$/m,
    );
    const result = JSON.parse(readFileSync(out, 'utf8')) as { jobs: number; killed: { controller: number } | null };
    assert.equal(result.jobs, 60);
    assert.notEqual(result.killed, null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
