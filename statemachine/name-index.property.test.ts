// The name index (name-index.ts) answers a dependency by name exactly as a walk of every job does
// (dependency.ts lastJobNamedScan), whatever came before: submits of plain jobs and arrays under
// the same and other names and users, dependencies by name (which build the index inside apply),
// modifies that rename a job, kills, restarts, cleans of finished jobs and arrays, and restores
// (which drop the index: it is built again on the next question). And it is not state: a snapshot
// of a state whose index is built is the same bytes as one of the same state without it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';

import { apply } from './apply.js';
import { lastJobNamed, lastJobNamedScan } from './dependency.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, FactBody } from './facts.js';
import { checkStateInvariants } from './invariants.js';
import { submitFactFor } from './jobs.js';
import { builtNameIndex, nameIndex } from './name-index.js';
import { restore, snapshot } from './snapshot.js';
import { emptyState, type ControllerState } from './state.js';
import { isElementId } from '../model/job-id.js';
import { textHash } from '../wire/capnp-wire.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';

const USERS = ['alice', 'bob', 'carol'] as const;
/** Two names of the same hash (wire/text-hash.ts): the index must tell them apart. */
const COLLIDING = ['n54157', 'n104013'] as const;
/**
 * -J: no name, plain names (one not ASCII, two of one hash), arrays under the same names (and an
 * array name a plain job cannot have). The generator picks the first ones more often: the
 * collision is among them.
 */
const NAMES = [
  null,
  'a',
  COLLIDING[0],
  'a[1-3]',
  COLLIDING[1],
  'b',
  'é🙂',
  'n54157[1-2]',
  'c',
  'b[2,4]',
  'c[1-2]%1',
] as const;
/** -w: by the names above (an unknown one refused; `a` also names this job when it is called a). */
const DEPENDENCIES = [
  null,
  'done(a)',
  'ended(b) || exit(c)',
  'started(a[*])',
  'done(nosuch)',
  'done(n104013)',
] as const;
/** What is asked of both: every name a job or array can have, and a few none has. */
const ASKED = ['a', 'b', 'c', 'd', 'a[1-3]', 'nosuch', 'é🙂', 'é', ...COLLIDING] as const;

type Op =
  | { op: 'submit'; user: number; name: number; dep: number }
  | { op: 'modify'; pick: number; name: number; other: boolean }
  | { op: 'control'; pick: number; action: 'kill' | 'restart' | 'requeue' }
  | { op: 'clean'; mask: number }
  | { op: 'restore' }
  | { op: 'ask' };

const arbOp: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('submit' as const),
      user: fc.nat(USERS.length - 1),
      name: fc.nat(NAMES.length - 1),
      dep: fc.nat(DEPENDENCIES.length - 1),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('modify' as const),
      pick: fc.nat(),
      name: fc.nat(NAMES.length - 1),
      other: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('control' as const),
      pick: fc.nat(),
      action: fc.constantFrom('kill' as const, 'restart' as const, 'requeue' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('clean' as const), mask: fc.nat() }) },
  fc.record({ op: fc.constant('restore' as const) }),
  { weight: 2, arbitrary: fc.record({ op: fc.constant('ask' as const) }) },
);

class Run {
  state: ControllerState = emptyState();
  private index = 0;
  private timeMs = 1_764_547_200_000;
  private readonly seqs = new Map<string, number>();

  /** Applies a fact: a user's through that user's session (a session belongs to one user), the others as the leader's. */
  fact(body: FactBody): ApplyResult {
    this.timeMs += 1000;
    const user = 'user' in body && typeof body.user === 'string' && body.kind !== 'config' ? body.user : null;
    const clientId = user === null ? null : `c-${user}`;
    const sequence = clientId === null ? 0 : (this.seqs.get(clientId) ?? 0) + 1;
    if (clientId !== null) this.seqs.set(clientId, sequence);
    const bytes = encodeFact({ clientId, sequence, timeMs: this.timeMs, body });
    const r = apply(this.state, bytes, ++this.index);
    // With the name index built, this checks it too: every job and array of a name in its list.
    checkStateInvariants(this.state);
    return r;
  }

  /** Plain jobs and arrays (not elements), and all jobs, in id order: what ops pick from. */
  ids(plainOnly: boolean): number[] {
    const out = [...this.state.jobs.keys()].filter((id) => !plainOnly || !isElementId(id));
    if (!plainOnly) out.push(...this.state.arrays.keys());
    return out.sort((a, b) => a - b);
  }

  step(o: Op): void {
    const config = this.state.config!.cluster;
    switch (o.op) {
      case 'submit': {
        const spec = jobSpec({ jobName: NAMES[o.name]! });
        const dep = { dependency: DEPENDENCIES[o.dep]!, dependencyKill: false };
        this.fact(submitFactFor(config, USERS[o.user]!, 'normal', null, spec, dep));
        return;
      }
      case 'modify': {
        const plain = this.ids(true);
        const job = plain.length === 0 ? undefined : this.state.jobs.get(plain[o.pick % plain.length]!);
        if (job === undefined) return;
        // Another user's modify is refused (no job:control): the name stays.
        const user = o.other ? USERS[(USERS.indexOf(job.user as 'alice') + 1) % USERS.length]! : job.user;
        const submit = submitFactFor(config, user, 'normal', null, jobSpec({ jobName: NAMES[o.name]! }));
        this.fact({ ...submit, kind: 'modify', jobId: job.id });
        return;
      }
      case 'control': {
        const ids = this.ids(false);
        if (ids.length === 0) return;
        const id = ids[o.pick % ids.length]!;
        const owner = this.state.jobs.get(id)?.user ?? this.state.arrays.get(id)!.user;
        this.fact({ kind: 'control', jobId: id, action: o.action, user: owner });
        return;
      }
      case 'clean': {
        // The finished jobs the mask picks (all when it is 0): apply keeps those a dependency names.
        const finished = [...this.state.jobs.values()]
          .filter((j) => j.state === 'DONE' || j.state === 'EXIT')
          .map((j) => j.id)
          .sort((a, b) => a - b);
        const ids = finished.filter((_, i) => o.mask === 0 || (o.mask >> (i % 30)) & 1);
        if (ids.length > 0) this.fact({ kind: 'clean', jobIds: ids });
        return;
      }
      case 'restore':
        // A new state: its jobs' names held in the snapshot's bytes, its name index not built.
        this.state = restore(snapshot(this.state));
        assert.equal(builtNameIndex(this.state), undefined);
        return;
      case 'ask':
        this.compare();
        return;
    }
  }

  /** The index's answer is the scan's for every user and name asked. */
  compare(): void {
    for (const user of [...USERS, 'olga'])
      for (const name of ASKED)
        assert.equal(
          lastJobNamed(this.state, user, name),
          lastJobNamedScan(this.state, user, name),
          `lastJobNamed(${user}, ${name}) after ${this.index} facts`,
        );
  }
}

test('the name index answers every (user, name) as the scan of every job does, after any facts and restores', () => {
  fc.assert(
    fc.property(fc.array(arbOp, { minLength: 1, maxLength: 80 }), (ops) => {
      const run = new Run();
      run.fact({ kind: 'config', files: testClusterFiles(), user: null });
      for (const o of ops) run.step(o);
      run.compare();
      // And once more on a restore of the end state, the index built afresh from its bytes.
      run.step({ op: 'restore' });
      run.compare();
    }),
    {
      numRuns: 500,
      // Two jobs of one hash, the older one asked for; and the same with the names the other way.
      examples: [
        [[{ op: 'submit', user: 0, name: 2, dep: 0 }, { op: 'submit', user: 0, name: 4, dep: 0 }, { op: 'ask' }]],
        [[{ op: 'submit', user: 1, name: 4, dep: 0 }, { op: 'ask' }, { op: 'submit', user: 1, name: 2, dep: 0 }]],
      ],
    },
  );
});

test('the two names the tests use as a collision have one hash', () => {
  assert.equal(textHash(COLLIDING[0]), textHash(COLLIDING[1]));
});

test('a dependency by name names the most recent job or array of that name of that user', () => {
  const run = new Run();
  run.fact({ kind: 'config', files: testClusterFiles(), user: null });
  const config = run.state.config!.cluster;
  const submit = (user: string, jobName: string, dependency: string | null = null): ApplyResult =>
    run.fact(submitFactFor(config, user, 'normal', null, jobSpec({ jobName }), { dependency, dependencyKill: false }));
  assert.deepEqual(submit('alice', 'a'), { kind: 'submitted', jobId: 1 });
  assert.deepEqual(submit('bob', 'a'), { kind: 'submitted', jobId: 2 });
  assert.deepEqual(submit('alice', 'a[1-3]'), { kind: 'submitted', jobId: 3 });
  // The first dependency by name builds the index, in apply.
  assert.equal(builtNameIndex(run.state), undefined);
  assert.deepEqual(submit('carol', 'x', 'done(x)').kind, 'rejected');
  assert.notEqual(builtNameIndex(run.state), undefined);
  assert.equal(lastJobNamed(run.state, 'alice', 'a'), 3);
  assert.equal(lastJobNamed(run.state, 'bob', 'a'), 2);
  assert.equal(lastJobNamed(run.state, 'carol', 'a'), null);
  // alice's array killed and cleaned: her plain job a is the most recent again.
  run.fact({ kind: 'control', jobId: 3, action: 'kill', user: 'alice' });
  run.fact({ kind: 'clean', jobIds: [...run.state.jobs.keys()].filter(isElementId) });
  assert.equal(run.state.arrays.size, 0);
  assert.equal(lastJobNamed(run.state, 'alice', 'a'), 1);
  // Renamed by a modify: the name leaves the job and the job joins its new name.
  const m = submitFactFor(config, 'alice', 'normal', null, jobSpec({ jobName: 'b' }));
  assert.equal(run.fact({ ...m, kind: 'modify', jobId: 1 }).kind, 'modified');
  assert.equal(lastJobNamed(run.state, 'alice', 'a'), null);
  assert.equal(lastJobNamed(run.state, 'alice', 'b'), 1);
  run.compare();
});

test('the name index is not state: a snapshot is the same bytes with it built or not', () => {
  const run = new Run();
  run.fact({ kind: 'config', files: testClusterFiles(), user: null });
  for (let i = 0; i < 20; i++) run.step({ op: 'submit', user: i % 3, name: i % NAMES.length, dep: 0 });
  const restored = restore(snapshot(run.state));
  const without = snapshot(restored);
  assert.equal(builtNameIndex(restored), undefined);
  nameIndex(restored);
  assert.notEqual(builtNameIndex(restored), undefined);
  assert.deepEqual(snapshot(restored), without);
});

test('a long list of one name drops its dead ids as jobs of that name leave', () => {
  // 200 jobs named a, killed and cleaned oldest first, then newest first: the answer is the scan's
  // at every step, and the index's check (invariants.ts) holds after every fact.
  const run = new Run();
  run.fact({ kind: 'config', files: testClusterFiles(), user: null });
  const config = run.state.config!.cluster;
  for (let i = 0; i < 200; i++) run.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec({ jobName: 'a' })));
  nameIndex(run.state);
  const ids = [...run.state.jobs.keys()];
  const order = [...ids.slice(0, 100), ...ids.slice(100).reverse()];
  for (const [i, id] of order.entries()) {
    run.fact({ kind: 'control', jobId: id, action: 'kill', user: 'alice' });
    run.fact({ kind: 'clean', jobIds: [id] });
    // Asked every other time: the dead ids go whether or not a lookup passes them.
    if (i % 2 === 0) assert.equal(lastJobNamed(run.state, 'alice', 'a'), lastJobNamedScan(run.state, 'alice', 'a'));
  }
  assert.equal(nameIndex(run.state).size, 0);
  assert.equal(lastJobNamed(run.state, 'alice', 'a'), null);
  assert.deepEqual(nameIndex(run.state).violations(), []);
});
