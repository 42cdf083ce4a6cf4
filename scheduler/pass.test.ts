// The scheduling pass, scenario by scenario, in the words: queue priority then submit order,
// live merge through aliases, placement, reservations within a pass, and each pend reason by text.
// Every decision a scenario expects to run is also applied through the real `apply`.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ownValuesKey, schedulePass, type PassResult } from './pass.js';
import { DEFAULT_APPS, SPEC, TestCluster } from '../testing/scheduler-cluster.js';

const NONE = new Set<number>();
const ALL = { maxDispatches: 1000, exclude: NONE };

/** One pass over every configured host, with no dispatch limit. */
const pass = (c: TestCluster): PassResult => schedulePass(c.state, c.hostNames(), ALL);

/** Why job `id` still pends after one pass (undefined: it was placed). */
const whyPending = (c: TestCluster, id: number): string | undefined => pass(c).pending.get(id);

/** Three 8-slot hosts: n1 and n2 with InfiniBand (rack r1), n3 without (rack r2). 64000 MB each. */
const HOSTS = `  - { name: n1, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 64000 }, strings: { rack: r1 } }
  - { name: n2, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 64000 }, strings: { rack: r1 } }
  - { name: n3, slots: 8, mem: 64G, resources: [x86_64], numeric: { mem: 64000 }, strings: { rack: r2 } }
`;

function cluster(hosts = HOSTS, apps = DEFAULT_APPS): TestCluster {
  return new TestCluster({ hosts, apps });
}

function placements(r: PassResult): Array<[number, string]> {
  return r.decisions.map((d) => [d.jobId, d.placement.map((h) => `${h.host}:${h.tasks}`).join(' ')]);
}

function applyAll(c: TestCluster, r: PassResult): void {
  for (const d of r.decisions) assert.equal(c.dispatch(d).kind, 'dispatched', `job ${d.jobId}`);
}

/** Submits a job and expects the next pass to leave it pending for `reason`; its id. */
function pendsWith(
  c: TestCluster,
  app: string | null,
  spec: Parameters<TestCluster['submit']>[1],
  reason: string,
): number {
  const id = c.submit(app, spec);
  assert.equal(whyPending(c, id), reason);
  return id;
}

/** Submits a job, expects the next pass to place it alone at `where` (`n1:3 n2:3`), applies that; its id. */
function placedAlone(
  c: TestCluster,
  app: string | null,
  spec: Parameters<TestCluster['submit']>[1],
  where: string,
): number {
  const id = c.submit(app, spec);
  const r = pass(c);
  assert.deepEqual(placements(r), [[id, where]]);
  applyAll(c, r);
  return id;
}

test('a pending job is placed on the host with the most free slots, and the decision carries run, record and hash', () => {
  const c = cluster();
  placedAlone(c, 'serial', { tasks: 3 }, 'n1:3'); // all equal: the first by name
  const id = c.submit('serial', { tasks: 2 });
  const r = pass(c);
  assert.deepEqual(placements(r), [[id, 'n2:2']]); // n1 has 5 free now, n2 and n3 have 8: n2 by name
  const d = r.decisions[0]!;
  assert.equal(d.runNumber, 1);
  assert.equal(d.record.profile, 'serial');
  assert.equal(d.record.tasks, 2);
  assert.deepEqual(d.record.hosts, [{ host: 'n2', tasks: 2 }]);
  assert.equal(typeof d.schedulerHash, 'string');
  assert.equal(d.record.profileHash, d.schedulerHash);
  assert.equal(r.pending.size, 0);
  applyAll(c, r);
});

test('jobs are taken in queue priority (higher first), then submit order', () => {
  const c = cluster(`  - { name: solo, slots: 2, mem: 8G }\n`);
  const night = c.submit('serial', {}, 'night');
  const normal1 = c.submit('serial', {}, 'normal');
  const urgent = c.submit('serial', {}, 'urgent');
  const normal2 = c.submit('serial', {}, 'normal');
  const r = pass(c);
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [urgent, normal1],
  );
  assert.deepEqual([...r.pending.keys()].sort(), [night, normal2].sort());
  assert.equal(r.pending.get(normal2), 'needs 1 slot, 0 free on the 1 available host');
  applyAll(c, r);
});

test('a job follows its profile as it is now: through an alias, and it pends while the profile is gone', () => {
  const c = cluster();
  const viaAlias = c.submit('openfoam-old', { tasks: 2 });
  let r = pass(c);
  assert.equal(r.decisions[0]!.record.profile, 'openfoam');
  assert.deepEqual(placements(r), [[viaAlias, 'n1:2']]);

  const pendingFoam = c.submit('openfoam', { tasks: 2 });
  const withoutFoam = DEFAULT_APPS.split('  - name: openfoam')[0]!;
  assert.equal(c.configure({ hosts: HOSTS, apps: withoutFoam }).kind, 'configApplied');
  r = pass(c);
  assert.equal(r.pending.get(pendingFoam), 'application profile openfoam is not defined');
  assert.equal(r.pending.get(viaAlias), 'application profile openfoam is not defined');

  assert.equal(c.configure({ hosts: HOSTS }).kind, 'configApplied');
  r = pass(c);
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [viaAlias, pendingFoam],
  );
});

test('a job its changed profile no longer admits pends with the additive-rule conflict', () => {
  const c = cluster();
  const id = c.submit('openfoam', { tasks: 2, resreq: 'rusage[license_foam=1]' });
  const tightened = DEFAULT_APPS.replace('rusage[license_foam=1]', 'rusage[license_foam=2]');
  assert.equal(c.configure({ hosts: HOSTS, apps: tightened }).kind, 'configApplied');
  const r = pass(c);
  assert.equal(r.decisions.length, 0);
  assert.equal(
    r.pending.get(id),
    'job sets rusage[license_foam=1] but application profile openfoam requires rusage[license_foam=2]',
  );
});

test('not enough hosts satisfy select[...]: the reason names the select and counts the available hosts', () => {
  const c = cluster();
  const id = c.submit('openfoam');
  const r = schedulePass(c.state, new Set(['n3']), ALL); // only the host without ib is up
  assert.equal(r.pending.get(id), 'not enough hosts satisfy select[ib] (0 of 1 available hosts)');
  const id2 = c.submit('serial', { resreq: 'select[mem>64000]' });
  const r2 = pass(c);
  assert.equal(r2.pending.get(id2), 'not enough hosts satisfy select[mem>64000] (0 of 3 available hosts)');
});

test('no worker is connected', () => {
  const c = cluster();
  const id = c.submit('serial');
  const r = schedulePass(c.state, new Set(), ALL);
  assert.equal(r.pending.get(id), 'no worker is connected');
  // A worker for a host the configuration does not list does not count.
  assert.equal(schedulePass(c.state, new Set(['stranger']), ALL).pending.get(id), 'no worker is connected');
});

test('license_foam: 0 of 4 free — two jobs want the last license in one pass: one is placed, the other pends', () => {
  const c = cluster();
  for (let k = 0; k < 3; k++) c.submit('openfoam');
  applyAll(c, pass(c)); // 3 of 4 licenses held by running jobs
  const a = c.submit('openfoam');
  const b = c.submit('openfoam');
  const r = pass(c);
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    [a],
  );
  assert.equal(r.pending.get(b), 'license_foam: 0 of 4 free');
  applyAll(c, r);
  pendsWith(c, 'openfoam', { resreq: 'rusage[license_foam=1]' }, 'license_foam: 0 of 4 free');
});

test('a job needing more than one license says how many', () => {
  const c = cluster(
    HOSTS,
    `  - name: serial\n    mode: direct\n  - { name: big, mode: direct, resreq: "rusage[license_foam=5]" }\n`,
  );
  pendsWith(c, 'big', {}, 'license_foam: 4 of 4 free, the job needs 5');
});

test('needs N slots, M free on hosts satisfying select[ib]', () => {
  const c = cluster();
  const id = c.submit('openfoam', { tasks: 17 });
  const r = pass(c);
  assert.equal(r.pending.get(id), 'needs 17 slots, 16 free on hosts satisfying select[ib]');
  const fits = c.submit('openfoam', { tasks: 16 });
  const r2 = pass(c);
  assert.deepEqual(placements(r2), [[fits, 'n1:8 n2:8']]);
  assert.equal(r2.pending.get(id), 'needs 17 slots, 16 free on hosts satisfying select[ib]');
  applyAll(c, r2);
});

test('rusage on a host resource is reserved per task on each host', () => {
  const c = cluster();
  // 20000 MB per task: a 64000 MB host takes 3 tasks although it has 8 slots.
  placedAlone(c, 'serial', { tasks: 7, resreq: 'rusage[mem=20000]' }, 'n1:3 n2:3 n3:1');
  pendsWith(
    c,
    'serial',
    { tasks: 6, resreq: 'rusage[mem=20000]' },
    'needs 6 slots with rusage[mem=20000] per task, room for 2 on the 3 available hosts',
  );
  assert.equal(c.state.usage.hostRusage.get('n1')?.get('mem'), 60000 * 1000); // milli-units
});

test('select on mem sees the free memory (MB) when the pass begins', () => {
  const c = cluster();
  applyAll(c, pass(c));
  const hog = c.submit('serial', { tasks: 1, resreq: 'select[hname==n1] rusage[mem=40000]' });
  applyAll(c, pass(c));
  assert.equal(c.state.jobs.get(hog)!.state, 'RUN');
  const id = c.submit('serial', { tasks: 1, resreq: 'select[mem>30000] order[hname]' });
  const r = pass(c);
  assert.deepEqual(placements(r), [[id, 'n2:1']]); // n1 has 24000 MB free
});

test('span[ptile=N]: N tasks per host, the last host may have fewer', () => {
  const c = cluster();
  placedAlone(c, 'serial', { tasks: 10, resreq: 'span[ptile=4]' }, 'n1:4 n2:4 n3:2');
  // Now n1 and n2 have 4 free, n3 has 6: a ptile=5 job of 10 tasks needs two hosts with 5.
  pendsWith(
    c,
    'serial',
    { tasks: 10, resreq: 'span[ptile=5]' },
    'needs 2 hosts with 5 free slots for span[ptile=5], 1 on the 3 available hosts has them',
  );
});

test('span[ptile=N] with more hosts needed than satisfy the select', () => {
  const c = cluster();
  pendsWith(
    c,
    'openfoam',
    { tasks: 12, resreq: 'span[ptile=4]' },
    'not enough hosts satisfy select[ib] (2 of 3 available hosts; span[ptile=4] needs 3 for 12 tasks)',
  );
  pendsWith(
    c,
    'serial',
    { tasks: 12, resreq: 'span[ptile=4:hosts=2]' },
    'span[ptile=4:hosts=2] holds at most 8 tasks, the job has 12',
  );
});

test('span[hosts=1]: all tasks on one host; no host has 2 free slots for span[hosts=1]', () => {
  const c = cluster();
  const fill = c.submit('serial', { tasks: 23 });
  applyAll(c, pass(c)); // one slot left, on n3
  assert.equal(c.state.jobs.get(fill)!.state, 'RUN');
  pendsWith(
    c,
    'serial',
    { tasks: 2, resreq: 'span[hosts=1]' },
    'no host has 2 free slots for span[hosts=1] (at most 1 on the 3 available hosts)',
  );

  const d = cluster();
  d.submit('serial', { tasks: 5, resreq: 'select[hname==n1]' });
  applyAll(d, pass(d));
  placedAlone(d, 'serial', { tasks: 6, resreq: 'span[hosts=1] order[hname]' }, 'n2:6'); // n1 has only 3 free
});

test('span[hosts=N] uses no more than N hosts', () => {
  const c = cluster();
  placedAlone(c, 'serial', { tasks: 12, resreq: 'span[hosts=2]' }, 'n1:8 n2:4');
  // Free now: n1 0, n2 4, n3 8.
  pendsWith(
    c,
    'serial',
    { tasks: 13, resreq: 'span[hosts=2]' },
    'needs 13 slots on at most 2 hosts for span[hosts=2], the roomiest 2 on the 3 available hosts hold 12',
  );
  placedAlone(c, 'serial', { tasks: 12, resreq: 'span[hosts=2] order[hname]' }, 'n2:4 n3:8');
});

test('same[rack]: all hosts of a job share the rack', () => {
  const hosts = `${HOSTS}  - { name: n4, slots: 8, mem: 64G, resources: [x86_64], numeric: { mem: 64000 }, strings: { rack: r2 } }\n`;
  const c = cluster(hosts);
  c.submit('serial', { tasks: 4, resreq: 'select[hname==n1]' });
  applyAll(c, pass(c)); // rack r1 has 12 free, r2 has 16
  placedAlone(c, 'serial', { tasks: 14, resreq: 'same[rack]' }, 'n3:8 n4:6'); // n2 comes first in order but r1 cannot hold 14
  // Free now: rack r1 has 12 (n1 4, n2 8), rack r2 has 2 (n4): 14 in all, but no rack holds 13.
  pendsWith(
    c,
    'serial',
    { tasks: 13, resreq: 'same[rack]' },
    'no group of hosts sharing same[rack] on the 4 available hosts can hold the job: the roomiest (rack=r1) has room for 12 of 13 tasks',
  );
});

test('order[...] sorts the candidates; the default is most free slots first, then name', () => {
  const hosts = `  - { name: a, slots: 4, mem: 8G, numeric: { mem: 8000 } }
  - { name: b, slots: 16, mem: 64G, numeric: { mem: 64000 } }
  - { name: c, slots: 8, mem: 32G, numeric: { mem: 32000 } }
`;
  const c = cluster(hosts);
  const dflt = c.submit('serial');
  const byMem = c.submit('serial', { resreq: 'order[mem]' });
  const byMaxmemDesc = c.submit('serial', { resreq: 'order[-maxmem]' });
  const byName = c.submit('serial', { resreq: 'order[hname]' });
  const r = pass(c);
  assert.deepEqual(placements(r), [
    [dflt, 'b:1'],
    [byMem, 'a:1'],
    [byMaxmemDesc, 'b:1'],
    [byName, 'a:1'],
  ]);
  applyAll(c, r);
});

test('reservations within a pass: later jobs see earlier ones take slots and memory', () => {
  const c = cluster(`  - { name: h, slots: 4, mem: 8G, numeric: { mem: 8000 } }\n`);
  const a = c.submit('serial', { resreq: 'rusage[mem=5000]' });
  const b = c.submit('serial', { resreq: 'rusage[mem=5000]' });
  const d = c.submit('serial', { tasks: 3 });
  const e = c.submit('serial');
  const r = pass(c);
  assert.deepEqual(
    r.decisions.map((x) => x.jobId),
    [a, d],
  );
  assert.equal(r.pending.get(b), 'needs 1 slot with rusage[mem=5000] per task, room for 0 on the 1 available host');
  assert.equal(r.pending.get(e), 'needs 1 slot, 0 free on the 1 available host');
  applyAll(c, r);
});

test('maxDispatches bounds the batch; the rest are deferred, and merge refusals are still reported', () => {
  const c = cluster();
  const ids = [c.submit('serial'), c.submit('serial'), c.submit('serial')];
  const bad = c.submit('openfoam');
  const withoutFoam = DEFAULT_APPS.split('  - name: openfoam')[0]!;
  c.configure({ hosts: HOSTS, apps: withoutFoam });
  const r = schedulePass(c.state, c.hostNames(), { maxDispatches: 2, exclude: NONE });
  assert.deepEqual(
    r.decisions.map((d) => d.jobId),
    ids.slice(0, 2),
  );
  assert.equal(r.deferred, 1);
  assert.equal(r.pending.has(ids[2]!), false);
  assert.equal(r.pending.get(bad), 'application profile openfoam is not defined');
});

test('jobs with a dispatch in flight are skipped, and what their records hold is taken first', () => {
  const c = cluster(`  - { name: h, slots: 4, mem: 8G }\n`);
  const a = c.submit('serial', { tasks: 3 });
  const first = pass(c);
  assert.equal(first.decisions.length, 1);
  const b = c.submit('serial', { tasks: 2 });
  const r = schedulePass(c.state, c.hostNames(), {
    maxDispatches: 10,
    exclude: new Set([a]),
    inFlight: [first.decisions[0]!.record],
  });
  assert.equal(r.decisions.length, 0);
  assert.equal(r.pending.has(a), false);
  assert.equal(r.pending.get(b), 'needs 2 slots, 1 free on the 1 available host');
});

test('a job of a queue the configuration removed pends with the reason', () => {
  const c = cluster();
  const id = c.submit('serial', {}, 'night');
  c.configure({ hosts: HOSTS, queues: '  - { name: normal, priority: 30 }\n' });
  assert.equal(whyPending(c, id), 'queue night is not defined in queues.yaml');
});

test('a compound requirement pends with a reason saying it cannot be scheduled', () => {
  const c = cluster();
  const id = c.submit('serial', { resreq: '{select[ib]} + {select[x86_64]}' });
  const reason = whyPending(c, id);
  assert.match(
    reason ?? '',
    /^compound resource requirement \{select\[ib\]\} \+ \{select\[x86_64\]\} cannot be scheduled/,
  );
});

test('the same inputs give the same decisions (determinism)', () => {
  const build = (): TestCluster => {
    const c = cluster();
    for (let k = 0; k < 12; k++) {
      c.submit(
        k % 3 === 0 ? 'openfoam' : 'serial',
        { tasks: 1 + (k % 4), resreq: k % 2 === 0 ? 'rusage[mem=9000]' : null },
        k % 5 === 0 ? 'urgent' : 'normal',
      );
    }
    return c;
  };
  const a = schedulePass(build().state, new Set(['n3', 'n1', 'n2']), ALL);
  const b = schedulePass(build().state, new Set(['n2', 'n1', 'n3']), ALL);
  assert.deepEqual(a.decisions, b.decisions);
  assert.deepEqual([...a.pending], [...b.pending]);
  assert.ok(a.decisions.length > 0 && a.pending.size > 0);
});

test('a host whose worker is not available is never chosen', () => {
  const c = cluster();
  const id = c.submit('serial', { tasks: 10 });
  const r = schedulePass(c.state, new Set(['n2', 'n3']), ALL);
  assert.deepEqual(placements(r), [[id, 'n2:8 n3:2']]);
});

test('jobs with the same profile and own values share one merge per pass; any difference is a different key', () => {
  const base = { ...SPEC, env: [{ name: 'A', value: 'b=c' }] };
  assert.equal(ownValuesKey(base), ownValuesKey({ ...base, command: ['other'] })); // the command is not merged
  assert.notEqual(ownValuesKey(base), ownValuesKey({ ...base, env: [{ name: 'A=b', value: 'c' }] }));
  assert.notEqual(ownValuesKey(base), ownValuesKey({ ...base, tasks: 2 }));
  assert.notEqual(ownValuesKey(base), ownValuesKey({ ...base, limits: { runtime_s: 60 } }));
  assert.notEqual(ownValuesKey({ ...base, preExec: 'x' }), ownValuesKey({ ...base, postExec: 'x' }));
  assert.notEqual(ownValuesKey({ ...base, resreq: null }), ownValuesKey({ ...base, resreq: '-' }));
  const c = cluster();
  const a = c.submit('serial', { env: [{ name: 'X', value: '1' }] });
  const b = c.submit('serial', { env: [{ name: 'X', value: '2' }] });
  const r = pass(c);
  const env = (id: number): string =>
    r.decisions
      .find((d) => d.jobId === id)!
      .record.env.map((e) => `${e.value.name}=${e.value.value}`)
      .join(',');
  assert.equal(env(a), 'X=1');
  assert.equal(env(b), 'X=2');
  applyAll(c, r);
});

test('span[ptile=N] with rusage that binds says so', () => {
  const c = cluster();
  pendsWith(
    c,
    'serial',
    { tasks: 8, resreq: 'span[ptile=4] rusage[mem=20000]' },
    'needs 2 hosts with room for 4 tasks with rusage[mem=20000] per task for span[ptile=4], 0 on the 3 available hosts have them',
  );
});
