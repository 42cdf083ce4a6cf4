// CI's benchmark smoke check: `npm run bench -- --quick` runs every benchmark at small sizes and
// must produce a well-formed result (figures are not judged here: speed is reported, not tested).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateResult } from './render/result.js';

const runJs = new URL('./run.js', import.meta.url).pathname;

test('npm run bench -- --quick produces a valid result file and its charts', { timeout: 240_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), 'xce-bench-quick-'));
  try {
    const r = spawnSync(process.execPath, [runJs, '--quick', '--out', out], { encoding: 'utf8', timeout: 230_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const result = validateResult(JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')));
    assert.ok(result.machine.cores > 0);
    const svgs = readdirSync(out).filter((f) => f.endsWith('.svg'));
    assert.ok(svgs.length >= 3, `charts: ${svgs.join(', ')}`);
    for (const f of svgs) assert.match(readFileSync(join(out, f), 'utf8'), /^<svg[\s\S]*<\/svg>\s*$/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
