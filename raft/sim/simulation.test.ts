// The seed sweep of `npm test`: XCE_SIM_SEEDS seeds (default SIM_TEST_SEEDS_DEFAULT, about 25 s on
// one core of this machine) through the deterministic simulator, each checked for safety after
// every step and for liveness after healing. `npm run sim:raft -- --seeds 100000` runs the long sweep.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SafetyChecker, SimViolation } from './checker.js';
import { runSeed } from './simulation.js';
import { Harness, payload } from './harness.js';
import { RaftLog } from '../log.js';
import { MemoryStorage } from '../storage.js';
import { EntryType } from '../types.js';

const SIM_TEST_SEEDS_DEFAULT = 5000;

function seedsFromEnv(): number {
  const raw = process.env['XCE_SIM_SEEDS'];
  if (raw === undefined || raw === '') return SIM_TEST_SEEDS_DEFAULT;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`XCE_SIM_SEEDS must be a positive integer, got '${raw}'`);
  return n;
}

describe('deterministic simulator', () => {
  it('replays a seed exactly: same seed, same trace', () => {
    const a = runSeed(7, true);
    const b = runSeed(7, true);
    assert.ok(a.ok, a.error?.message);
    assert.ok(a.trace.length > 100);
    assert.deepEqual(a.trace, b.trace);
    assert.deepEqual(a.stats, b.stats);
    const c = runSeed(8, true);
    assert.notDeepEqual(a.trace, c.trace, 'another seed is another run');
  });

  it(`${seedsFromEnv()} seeds: no safety violation, and liveness after the faults heal`, () => {
    const n = seedsFromEnv();
    const totals = { crashes: 0, confChanges: 0, transfers: 0, snapshotsInstalled: 0, reads: 0, elections: 0 };
    for (let seed = 1; seed <= n; seed++) {
      const res = runSeed(seed);
      if (!res.ok) {
        const traced = runSeed(seed, true);
        assert.fail(
          `seed ${seed} failed: ${res.error?.message}\n${traced.trace.slice(-80).join('\n')}\nreplay: npm run sim:raft -- --seed ${seed} --trace`,
        );
      }
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += res.stats[k];
    }
    // The sweep really exercised the faults it claims to.
    for (const [k, v] of Object.entries(totals)) assert.ok(v > n / 10, `${k} happened (${v} times)`);
  });

  it('the CLI replays one seed with its trace', () => {
    const cli = fileURLToPath(new URL('./cli.js', import.meta.url));
    const r = spawnSync(process.execPath, [cli, '--seed', '3', '--trace'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /seed 3: 3|seed 3: \d voters/);
    assert.match(r.stdout, /becomes LEADER of term/);
    assert.match(r.stdout, /seed 3: ok/);
  });
});

describe('the safety checker catches what it claims to', () => {
  const e = (index: number, term: number, byte = 0) => ({
    index,
    term,
    type: EntryType.Normal,
    data: new Uint8Array([byte]),
  });
  /** Whether a thrown value is the checker's violation of `kind`. */
  const isViolation =
    (kind: string) =>
    (x: unknown): boolean =>
      x instanceof SimViolation && x.kind === kind;
  /** A checker that has seen `arrange` must throw a violation of `kind` on `act`. */
  function violation(kind: string, arrange: (c: SafetyChecker) => void, act: (c: SafetyChecker) => void): void {
    const c = new SafetyChecker();
    arrange(c);
    assert.throws(() => act(c), isViolation(kind));
  }
  function log(terms: number[]): RaftLog {
    const s = new MemoryStorage();
    s.append(terms.map((t, i) => e(i + 1, t)));
    return new RaftLog(s, 0);
  }

  it('two leaders in one term', () =>
    violation(
      'election-safety',
      (c) => c.onLeader(1, 5, log([1])),
      (c) => c.onLeader(2, 5, log([1])),
    ));

  it('different entries at the same index and term', () =>
    violation(
      'log-matching',
      (c) => c.onPersisted(1, [e(1, 1, 1)], () => 0),
      (c) => c.onPersisted(2, [e(1, 1, 2)], () => 0),
    ));

  it('the same entry after different predecessors', () =>
    violation(
      'log-matching',
      (c) => c.onPersisted(1, [e(5, 3, 1)], () => 2),
      (c) => c.onPersisted(2, [e(5, 3, 1)], () => 3),
    ));

  it('a leader missing a committed entry', () => {
    const c = new SafetyChecker();
    c.onCommitted(1, log([1, 1, 2]), 0, 3, 2);
    assert.throws(() => c.onLeader(2, 3, log([1, 1])), isViolation('leader-completeness'));
    assert.throws(() => c.onLeader(3, 4, log([1, 1, 3])), isViolation('leader-completeness'));
  });

  it('but a leader of a lower term than the commit need not hold it (late votes of an old election)', () => {
    const c = new SafetyChecker();
    c.onCommitted(1, log([1, 3]), 0, 2, 3);
    c.onLeader(2, 2, log([1, 2]));
  });

  it('a committed entry replaced', () =>
    violation(
      'committed-entry-lost',
      (c) => c.onCommitted(1, log([1, 2]), 0, 2, 2),
      (c) => c.onCommitted(2, log([1, 3]), 0, 2, 3),
    ));

  it('two nodes applying different entries at one index', () =>
    violation(
      'state-machine-safety',
      (c) => c.onApplied(1, e(4, 2, 1), 111),
      (c) => c.onApplied(2, e(4, 2, 9), 222),
    ));
});

describe('the harness (scenario tests and benchmark)', () => {
  it('stabilizes a healthy cluster and replicates a proposal everywhere', () => {
    const h = new Harness([1, 2, 3]);
    h.campaign(1);
    const r = h.propose(1, payload('x'));
    assert.ok(r.ok);
    assert.equal(h.node(1).appliedIndex, r.index);
    // The followers learn the commit index from a heartbeat: the leader's first round skips them
    // (the append just sent did its work), the second carries it (HEARTBEAT_TICKS is 1).
    h.tick(1, 2);
    for (const id of [1, 2, 3]) assert.equal(h.node(id).appliedIndex, r.index);
  });
});
