// The whole-controller simulator in `npm test`: XCE_CONTROLLER_SIM_SEEDS seeds (default
// CONTROLLER_SIM_TEST_SEEDS, about 20 s on one core here) of three or five ControllerCores running
// the real state machine under crashes, partitions, snapshots and retried writes; a replay of one
// seed is exact; and a deliberately injected non-determinism is caught. The long sweep is
// `npm run sim -- --seeds 100000`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ControllerSimViolation, runControllerSeed } from './controller-sim.js';

const CONTROLLER_SIM_TEST_SEEDS = 250;

function seedsFromEnv(): number {
  const raw = process.env['XCE_CONTROLLER_SIM_SEEDS'];
  if (raw === undefined || raw === '') return CONTROLLER_SIM_TEST_SEEDS;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new RangeError(`XCE_CONTROLLER_SIM_SEEDS must be a positive integer, got '${raw}'`);
  return n;
}

describe('whole-controller simulator', () => {
  it('replays a seed exactly: same seed, same trace and figures', async () => {
    const a = await runControllerSeed(11, { trace: true });
    const b = await runControllerSeed(11, { trace: true });
    assert.ok(a.ok, a.error?.message);
    assert.ok(a.trace.length > 50, `a readable trace (${a.trace.length} lines)`);
    assert.deepEqual(a.trace, b.trace);
    assert.deepEqual(a.stats, b.stats);
    const c = await runControllerSeed(12, { trace: true });
    assert.notDeepEqual(a.trace, c.trace, 'another seed is another run');
  });

  it(`${seedsFromEnv()} seeds: identical replicas, invariants after every apply, retries answered as first applied, liveness after healing`, async () => {
    const n = seedsFromEnv();
    const totals: Record<string, number> = {};
    for (let seed = 1; seed <= n; seed++) {
      const res = await runControllerSeed(seed);
      if (!res.ok) {
        const traced = await runControllerSeed(seed, { trace: true });
        assert.fail(
          `seed ${seed} failed: ${res.error?.message}\n${traced.trace.slice(-80).join('\n')}\nreplay: npm run sim -- --seed ${seed} --trace`,
        );
      }
      for (const [k, v] of Object.entries(res.stats)) totals[k] = (totals[k] ?? 0) + v;
    }
    // The sweep really exercised what it claims to: faults, snapshots, retries, profile changes and
    // the whole job path, and no acknowledged write went missing.
    for (const k of [
      'crashes',
      'restarts',
      'partitions',
      'snapshotsStored',
      'snapshotsInstalled',
      'statesCompared',
      'duplicateAnswers',
      'configs',
      'dispatched',
      'declined',
      'finished',
      'arrays',
      'dependencies',
      'modified',
      'holds',
      'suspends',
      'hostControls',
      'cleaned',
    ]) {
      assert.ok((totals[k] ?? 0) > n / 10, `${k} happened often enough (${totals[k]} times in ${n} seeds)`);
    }
    assert.equal(totals['lostWrites'], 0);
    assert.equal(totals['acked'], totals['requests'], 'every request was answered');
  });

  it('catches an apply that is not deterministic (a submit time one millisecond off on one node)', async () => {
    const kinds = new Set<string>();
    let caught = 0;
    const seeds = 10;
    for (let seed = 1; seed <= seeds; seed++) {
      const res = await runControllerSeed(seed, { injectNondeterminism: true });
      if (!res.ok) {
        caught++;
        assert.ok(
          res.error instanceof ControllerSimViolation,
          `a violation, not a crash of the simulator: ${res.error?.message}`,
        );
        kinds.add(res.error.kind);
      }
    }
    assert.ok(caught >= seeds / 2, `caught in ${caught} of ${seeds} seeds`);
    for (const k of kinds)
      assert.ok(
        ['replica-divergence', 'result-divergence', 'state-invariant', 'retry-result'].includes(k),
        `caught as a divergence (${k})`,
      );
  });

  it('the CLI replays one seed, and a sweep with injected non-determinism exits 1 naming the seed', () => {
    const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
    const ok = spawnSync(process.execPath, [cli, '--seed', '3', '--trace'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /seed 3: ok/);
    const bad = spawnSync(process.execPath, [cli, '--seeds', '20', '--workers', '2', '--inject-nondeterminism'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(bad.status, 1, bad.stdout + bad.stderr);
    assert.match(bad.stdout, /seed \d+ FAILED: (replica-divergence|result-divergence|state-invariant|retry-result)/);
    assert.match(bad.stdout, /replay: npm run sim -- --seed \d+ --trace --inject-nondeterminism/);
    const usage = spawnSync(process.execPath, [cli, '--seeds', 'x'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--seeds needs a non-negative integer, got 'x'/);
  });
});
