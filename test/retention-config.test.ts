// Issue 12, bad input: `xceadmin config build` (offline, a real process) refuses a retention of 0, a
// negative or garbled duration and a bad finished_jobs_max, naming the file, line and field.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoRoot } from '../harness/cluster.js';

const dist = fileURLToPath(new URL('..', import.meta.url));

/** `xceadmin config build` over a copy of configs/ whose xce.yaml has `field: value`. */
function build(field: string, value: string): { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'xce-retention-config-'));
  try {
    cpSync(join(repoRoot, 'configs'), dir, { recursive: true });
    const xce = join(dir, 'xce.yaml');
    const text = readFileSync(xce, 'utf8');
    const line = new RegExp(`^${field}: .*$`, 'm');
    assert.match(text, line, `configs/xce.yaml sets ${field}`);
    writeFileSync(xce, text.replace(line, `${field}: ${value}`));
    const r = spawnSync(process.execPath, [join(dist, 'cli', 'xceadmin.js'), 'config', 'build', dir], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, NO_COLOR: '1' },
    });
    return { code: r.status, out: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const GARBLED = /expected a duration such as 24h, 90m, 30s or 1h30m/;
const ZERO = /keeps nothing; give a duration longer than 0/;

for (const field of ['finished_job_retention', 'accounting_retention']) {
  test(`config build refuses ${field} of 0, negative or garbled, naming the field`, () => {
    const cases: Array<[string, RegExp]> = [
      ['0', ZERO],
      ['0s', ZERO],
      ['0h0m', ZERO],
      ['-5m', GARBLED],
      ['-60', /-60 is too small/],
      ['soon', GARBLED],
      ['"1h 30m"', GARBLED],
      ['1.5', GARBLED],
    ];
    for (const [value, why] of cases) {
      const r = build(field, value);
      assert.equal(r.code, 1, `${field}: ${value} is refused (exit 1): ${r.out}`);
      assert.match(r.out, new RegExp(`xce\\.yaml:\\d+:\\d+: error: ${field}: `), `${value}: names the field`);
      assert.match(r.out, why, `${value}: says why`);
    }
    const ok = build(field, '90m');
    assert.equal(ok.code, 0, ok.out);
  });
}

test('config build refuses a finished_jobs_max of 0 or above its bound, naming the field', () => {
  for (const value of ['0', '-3', '500001', 'many']) {
    const r = build('finished_jobs_max', value);
    assert.equal(r.code, 1, `finished_jobs_max: ${value} is refused: ${r.out}`);
    assert.match(r.out, /xce\.yaml:\d+:\d+: error: finished_jobs_max: /);
  }
});
