import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROLLER_INTERRUPT_BUDGET, tieringFlags } from './v8-tiering.js';

const FLAG = `--interrupt-budget=${CONTROLLER_INTERRUPT_BUDGET}`;

test('the controller budget is set unless the node command line or NODE_OPTIONS gives one', () => {
  assert.deepEqual(tieringFlags([], undefined), [FLAG]);
  assert.deepEqual(tieringFlags(['--enable-source-maps'], '--max-old-space-size=4096'), [FLAG]);
  assert.deepEqual(tieringFlags(['--interrupt-budget=100000'], undefined), []);
  assert.deepEqual(tieringFlags(['--interrupt_budget=100000'], undefined), []);
  assert.deepEqual(tieringFlags(['--interrupt-budget', '100000'], undefined), []);
  assert.deepEqual(tieringFlags([], '--max-old-space-size=4096  --interrupt-budget=100000'), []);
  // A flag that merely begins alike is not the budget.
  assert.deepEqual(tieringFlags(['--interrupt-budget-for-feedback-allocation=940'], undefined), [FLAG]);
});

// V8's %GetOptimizationStatus bit for "optimized" (src/runtime/runtime-test.cc OptimizationStatus).
const OPTIMIZED = 1 << 4;
// Calls of a small function: past the controller's budget, well short of V8's default one.
const CALLS = 200;

/** Whether a function called CALLS times is optimized in a child node, with or without the on-start module. */
function optimizedAfterCalls(importOnStart: boolean, nodeArgs: readonly string[] = []): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'xce-tiering-'));
  try {
    const script = join(dir, 'probe.mjs');
    const onStart = new URL('./v8-tiering-on-start.js', import.meta.url).href;
    writeFileSync(
      script,
      [
        importOnStart ? `await import(${JSON.stringify(onStart)});` : '',
        'function f(a) { let s = 0; for (let i = 0; i < 3; i++) s += (a * i) % 7; return s; }',
        `let out = 0; for (let k = 0; k < ${CALLS}; k++) out += f(k);`,
        'console.log(JSON.stringify({ status: %GetOptimizationStatus(f), out }));',
      ].join('\n'),
    );
    // Synchronous compilation, so that the status read is the one the budget decided.
    const r = spawnSync(
      process.execPath,
      ['--allow-natives-syntax', '--no-concurrent-recompilation', ...nodeArgs, script],
      { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
    );
    assert.equal(r.status, 0, r.stderr);
    const { status } = JSON.parse(r.stdout) as { status: number };
    return (status & OPTIMIZED) !== 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('imported first, the on-start module makes V8 optimize a hot function sooner; a budget on the command line wins', () => {
  assert.equal(optimizedAfterCalls(false), false, `not optimized after ${CALLS} calls with the default budget`);
  assert.equal(optimizedAfterCalls(true), true, `optimized after ${CALLS} calls with the controller's budget`);
  assert.equal(optimizedAfterCalls(true, ['--interrupt-budget=67584']), false, 'the command line budget is kept');
});
