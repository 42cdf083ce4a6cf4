// Scenario tests of apply, in the brief's words ("Dispatch record", "Profile removed while jobs
// use it", "Profile aliases", "Default profile"). Every fact goes through its Cap'n Proto bytes,
// as on the real path (encode on the leader, decode once per apply).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { apply as applyUnchecked } from './apply.js';
import { loadConfig } from '../model/config.js';
import { buildDispatchRecord, type HostTasks } from './dispatch-record.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, FactBody, JobSpec } from './facts.js';
import { hashOf, liveMerge, pendReason, submitFactFor } from './jobs.js';
import { checkStateInvariants } from './invariants.js';
import { jobDetails } from './queries.js';
import { SESSION_TTL_MS } from './sessions.js';
import { emptyState, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles, type TestClusterOptions } from '../testing/test-cluster.js';
import { dispatchFact, finishedFact } from '../testing/state-facts.js';
import { freeClusterResource, freeSlots } from './usage.js';

const T0 = 1_764_547_200_000;

/** apply, then every state invariant (invariants.ts): each scenario below also checks the state after every fact. */
function apply(state: ControllerState, fact: Uint8Array, index: number): ApplyResult {
  const result = applyUnchecked(state, fact, index);
  checkStateInvariants(state);
  return result;
}

class Cluster {
  readonly state: ControllerState = emptyState();
  index = 0;
  timeMs = T0;
  private seq = 0;

  fact(body: FactBody, client: string | null = null, sequence?: number): ApplyResult {
    this.timeMs += 1000;
    const seq = client === null ? 0 : (sequence ?? ++this.seq);
    return apply(this.state, encodeFact({ clientId: client, sequence: seq, timeMs: this.timeMs, body }), ++this.index);
  }

  config(o: TestClusterOptions = {}, user: string | null = null): ApplyResult {
    return this.fact({ kind: 'config', files: testClusterFiles(o), user });
  }

  /** Submits as the leader would: the profile as recorded is resolved from the name the user gave. */
  submit(user: string, app: string | null, spec: Partial<JobSpec> = {}, queue = 'normal'): ApplyResult {
    const config = this.state.config?.cluster;
    assert.ok(config !== undefined);
    return this.fact(submitFactFor(config, user, queue, app, { ...SPEC, ...spec }), `client-${user}`);
  }

  /** Dispatches as the scheduler would: live merge, then the record and the hash it merged with. */
  dispatch(jobId: number, hosts: HostTasks[], opts: { hash?: string | null } = {}): ApplyResult {
    const job = this.state.jobs.get(jobId);
    assert.ok(job !== undefined);
    const m = liveMerge(this.state.config?.cluster ?? null, job.profile, job.spec);
    assert.ok(m.ok, m.ok ? '' : m.reason);
    const record = buildDispatchRecord(m.effective, m.hash, hosts);
    return this.fact({
      kind: 'dispatch',
      jobId,
      runNumber: job.runNumber + 1,
      placement: hosts,
      record,
      schedulerHash: opts.hash === undefined ? m.hash : opts.hash,
    });
  }

  jobId(r: ApplyResult): number {
    assert.equal(r.kind, 'submitted', JSON.stringify(r));
    return (r as { jobId: number }).jobId;
  }
}

const SPEC: JobSpec = jobSpec();

function started(): Cluster {
  const c = new Cluster();
  assert.equal(c.config().kind, 'configApplied');
  return c;
}

test('a submit records the profile name and the job own values, never the merged ones; ids follow the log', () => {
  const c = started();
  const spec = { resreq: 'select[mem>1000]', tasks: 64, env: [{ name: 'CASE', value: 'pipe' }] };
  const id1 = c.jobId(c.submit('alice', 'openfoam', spec));
  const id2 = c.jobId(c.submit('alice', 'openfoam', spec));
  assert.deepEqual([id1, id2], [1, 2]);
  const job = c.state.jobs.get(id1)!;
  assert.equal(job.profile, 'openfoam');
  assert.equal(job.state, 'PEND');
  assert.deepEqual(job.spec, { ...SPEC, ...spec });
  assert.equal(job.submitTimeMs, T0 + 2000);
  assert.equal(job.record, null);
});

test('a submit that names an alias records the target profile name', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam-old'));
  assert.equal(c.state.jobs.get(id)!.profile, 'openfoam');
  assert.equal(c.state.jobs.get(id)!.profileRequested, 'openfoam-old');
});

test('a submit without --app records the current default name; a later default change does not move it', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', null));
  assert.equal(c.state.jobs.get(id)!.profile, 'serial');
  assert.equal(c.config({ defaultApplication: 'python' }).kind, 'configApplied');
  assert.equal(c.state.jobs.get(id)!.profile, 'serial');
  assert.equal(c.state.jobs.get(c.jobId(c.submit('alice', null)))!.profile, 'python');
});

test('a profile removed between the early check and apply is refused, never run with a fallback', () => {
  const c = started();
  const body = submitFactFor(c.state.config!.cluster, 'alice', 'normal', 'openfoam', SPEC); // early check saw openfoam
  c.config({ withoutOpenfoam: true });
  const r = c.fact(body, 'client-x');
  assert.deepEqual(r, {
    kind: 'rejected',
    code: 'profile_not_defined',
    message: 'application profile openfoam is not defined',
  });
  assert.equal(c.state.jobs.size, 0);
  assert.equal(c.state.nextJobId, 1);
});

test('submit re-validates the additive rule, XCE_ names, RBAC app:use and queue:submit', () => {
  const c = started();
  const notDefined = (app: string): string => `application profile ${app} is not defined`;
  // [user, app, spec, queue], the code, and the message: exactly (a string) or in part (a pattern).
  const refusals: Array<[Parameters<typeof c.submit>, string, (string | RegExp)?]> = [
    [
      ['alice', 'openfoam', { resreq: 'rusage[license_foam=2]' }],
      'additive_rule',
      /openfoam requires rusage\[license_foam=1\]/,
    ],
    [['alice', 'serial', { env: [{ name: 'XCE_JOBID', value: '7' }] }], 'reserved_env'],
    // carol may neither use nor view openfoam: refused in the words of a profile that is not defined.
    [['carol', 'openfoam'], 'profile_not_defined', notDefined('openfoam')],
    [['carol', 'serial', {}, 'night'], 'not_authorized'],
    [['alice', 'python', { preExec: '/bin/setup' }], 'additive_rule'],
    [['alice', 'serial', { resreq: 'select[' }], 'resreq_syntax'],
    [['alice', 'nosuchapp'], 'profile_not_defined', notDefined('nosuchapp')],
  ];
  for (const [args, code, message] of refusals) {
    const r = c.submit(...args);
    const label = JSON.stringify(args);
    if (typeof message === 'string') assert.deepEqual(r, { kind: 'rejected', code, message }, label);
    else {
      assert.equal(r.kind, 'rejected', label);
      assert.equal((r as { code: string }).code, code, label);
      if (message !== undefined) assert.match((r as { message: string }).message, message, label);
    }
  }
  assert.equal(c.state.jobs.size, 0);
});

test('a pending job whose profile is removed pends with "application profile X is not defined"; putting it back releases it', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  const r = c.config({ withoutOpenfoam: true });
  assert.deepEqual(r, {
    kind: 'configApplied',
    inUse: [{ name: 'openfoam', isAlias: false, pendingJobs: 1 }],
    warnings: [],
  });
  const job = c.state.jobs.get(id)!;
  assert.equal(job.state, 'PEND');
  assert.equal(pendReason(c.state, job), 'application profile openfoam is not defined');
  assert.equal(c.config().kind, 'configApplied');
  assert.equal(pendReason(c.state, job), 'waiting for the scheduler');
  assert.equal(c.dispatch(id, [{ host: 'n1', tasks: 1 }]).kind, 'dispatched');
});

test('a pending job its changed profile no longer admits pends with a reason naming the conflict', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam', { resreq: 'rusage[license_foam=1]' }));
  c.config({ foamLicenses: 2 });
  assert.equal(
    pendReason(c.state, c.state.jobs.get(id)!),
    'job sets rusage[license_foam=1] but application profile openfoam requires rusage[license_foam=2]',
  );
});

test('a config that leaves default_application dangling is refused and the current config stays', () => {
  const c = started();
  const before = c.state.config;
  const r = c.config({ withoutSerial: true });
  assert.equal(r.kind, 'rejected');
  assert.equal((r as { code: string }).code, 'default_dangling');
  assert.match((r as { message: string }).message, /default_application names profile serial/);
  assert.equal(c.state.config, before);
  const bad = c.fact({ kind: 'config', files: [{ path: 'xce.yaml', text: 'name: [' }], user: null });
  assert.equal((bad as { code: string }).code, 'config_invalid');
  assert.equal(c.state.config, before);
});

test('the upgrade result lists removed profiles and aliases still named by pending jobs, with counts', () => {
  const c = started();
  c.jobId(c.submit('alice', 'openfoam'));
  c.jobId(c.submit('bob', 'openfoam'));
  // A rename keeps the old name as an alias: the jobs still resolve, nothing is listed.
  const renamed = c.config({ renameOpenfoamTo: 'foam' });
  assert.deepEqual(renamed, { kind: 'configApplied', inUse: [], warnings: [] });
  const id = c.jobId(c.submit('alice', 'openfoam-old'));
  assert.equal(c.state.jobs.get(id)!.profile, 'foam');
  // Dropping the profile and its aliases strands them: listed by the names they recorded.
  const r = c.config({ withoutOpenfoam: true });
  assert.deepEqual(r, {
    kind: 'configApplied',
    inUse: [
      { name: 'foam', isAlias: false, pendingJobs: 1 },
      { name: 'openfoam', isAlias: true, pendingJobs: 2 },
    ],
    warnings: [],
  });
});

test('a config upgrade by a user who is not a cluster admin is refused', () => {
  const c = started();
  const r = c.config({ defaultApplication: 'python' }, 'alice');
  assert.equal((r as { code: string }).code, 'not_authorized');
  assert.equal(c.config({ defaultApplication: 'python' }, 'root').kind, 'configApplied');
});

test('a dispatch is applied when the hash matches: the job runs with the frozen record', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam', { tasks: 4, env: [{ name: 'CASE', value: 'a' }] }));
  const r = c.dispatch(id, [
    { host: 'n1', tasks: 2 },
    { host: 'n2', tasks: 2 },
  ]);
  assert.deepEqual(r, { kind: 'dispatched', jobId: id, runNumber: 1 });
  const job = c.state.jobs.get(id)!;
  assert.equal(job.state, 'RUN');
  assert.equal(job.record!.profile, 'openfoam');
  assert.equal(job.record!.profileHash, hashOf(c.state.config!.cluster.profiles.get('openfoam')!));
  assert.equal(job.record!.launchType, 'openmpi');
  assert.equal(job.record!.profilePreExec, '/opt/xce/app/openfoam/pre.sh');
  assert.deepEqual(
    job.record!.env.map((e) => `${e.value.name}:${e.origin}`),
    ['CASE:job', 'FOAM_INST_DIR:profile'],
  );
  assert.equal(c.state.usage.slots.get('n1'), 2);
  assert.equal(c.state.usage.clusterRusage.get('license_foam'), 1000); // milli-units
  assert.equal(freeSlots(c.state.usage, c.state.config!.cluster, 'n1'), 6);
  assert.equal(freeClusterResource(c.state.usage, c.state.config!.cluster, 'license_foam'), 3);
});

test('a dispatch decided on a profile that changed since is declined: the job stays PEND, not a run', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  const oldHash = hashOf(c.state.config!.cluster.profiles.get('openfoam')!);
  c.config({ foamLicenses: 2 });
  const r = c.dispatch(id, [{ host: 'n1', tasks: 1 }], { hash: oldHash });
  assert.deepEqual(r, {
    kind: 'declined',
    jobId: id,
    code: 'profile_changed',
    message: "application profile openfoam changed since the scheduler's decision",
  });
  const job = c.state.jobs.get(id)!;
  assert.equal(job.state, 'PEND');
  assert.equal(job.runNumber, 0);
  assert.equal(job.requeueCount, 0);
  assert.equal(pendReason(c.state, job), "application profile openfoam changed since the scheduler's decision");
  // The scheduler re-merges with the new profile; that dispatch goes through as run 1.
  assert.deepEqual(c.dispatch(id, [{ host: 'n1', tasks: 1 }]), { kind: 'dispatched', jobId: id, runNumber: 1 });
});

test('a dispatch of a job whose profile is gone is declined with "application profile X is not defined"', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  const job = c.state.jobs.get(id)!;
  const merged = dispatchFact(c.state, id, [{ host: 'n1', tasks: 1 }]); // the scheduler merged before the change
  c.config({ withoutOpenfoam: true });
  const r = c.fact(merged);
  assert.deepEqual(r, {
    kind: 'declined',
    jobId: id,
    code: 'profile_not_defined',
    message: 'application profile openfoam is not defined',
  });
  assert.equal(job.state, 'PEND');
});

test('a scheduler that sends no hash (rolling upgrade) skips the hash check', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  const merged = dispatchFact(c.state, id, [{ host: 'n1', tasks: 1 }]);
  c.config({ foamLicenses: 2 }); // the profile changes after the (old) scheduler merged
  const r = c.fact({ ...merged, schedulerHash: null });
  assert.equal(r.kind, 'dispatched');
  assert.equal(jobDetails(c.state, id)!.profileChangedSinceDispatch, true);
});

test('a dispatch whose placement is no longer free is declined; freed resources let it through', () => {
  const c = new Cluster();
  c.config({ slots: 2 });
  const a = c.jobId(c.submit('alice', 'serial', { tasks: 2 }));
  const b = c.jobId(c.submit('bob', 'serial', { tasks: 2 }));
  assert.equal(c.dispatch(a, [{ host: 'n1', tasks: 2 }]).kind, 'dispatched');
  const r = c.dispatch(b, [{ host: 'n1', tasks: 2 }]);
  assert.deepEqual(r, {
    kind: 'declined',
    jobId: b,
    code: 'resources',
    message: 'host n1 has 0 free slots, the placement needs 2',
  });
  assert.equal(c.state.jobs.get(b)!.runNumber, 0);
  c.fact(finishedFact(a));
  assert.equal(c.dispatch(b, [{ host: 'n1', tasks: 2 }]).kind, 'dispatched');
});

test('a cluster license pool limits running jobs', () => {
  const c = started();
  const ids = [1, 2, 3, 4, 5].map(() => c.jobId(c.submit('alice', 'openfoam', { resreq: 'rusage[license_foam=1]' })));
  const results = ids.map((id, i) => c.dispatch(id, [{ host: i % 2 === 0 ? 'n1' : 'n2', tasks: 1 }]).kind);
  assert.deepEqual(results, ['dispatched', 'dispatched', 'dispatched', 'dispatched', 'declined']);
  assert.equal(c.state.jobs.get(ids[4]!)!.lastDecline, '0 of 4 license_foam free, the job needs 1');
});

test('status reports move RUN to DONE / EXIT once: a re-sent report and a report on another run are ignored', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'serial'));
  c.dispatch(id, [{ host: 'n1', tasks: 1 }]);
  const startedFact: FactBody = {
    kind: 'status',
    jobId: id,
    runNumber: 1,
    status: { type: 'started', pid: 4242, timeMs: T0 + 99 },
  };
  assert.equal(c.fact(startedFact).kind, 'statusApplied');
  assert.equal(c.fact(startedFact).kind, 'ignored');
  const job = c.state.jobs.get(id)!;
  assert.equal(job.pid, 4242);
  assert.equal(job.startTimeMs, T0 + 99);
  assert.equal(c.fact(finishedFact(id, 2)).kind, 'ignored');
  const fin: FactBody = {
    kind: 'status',
    jobId: id,
    runNumber: 1,
    status: { type: 'finished', exitCode: 3, signal: null, reason: 'exit 3', timeMs: 0 },
  };
  assert.equal(c.fact(fin).kind, 'statusApplied');
  assert.equal(c.fact(fin).kind, 'ignored');
  assert.equal(job.state, 'EXIT');
  assert.equal(job.exitCode, 3);
  assert.equal(c.state.usage.slots.size, 0);
});

test('a launch error ends the run as EXIT with its reason', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'serial'));
  c.dispatch(id, [{ host: 'n1', tasks: 1 }]);
  c.fact({
    kind: 'status',
    jobId: id,
    runNumber: 1,
    status: { type: 'launchError', reason: 'user alice does not exist on n1' },
  });
  assert.equal(c.state.jobs.get(id)!.state, 'EXIT');
  assert.equal(c.state.jobs.get(id)!.reason, 'launch failed: user alice does not exist on n1');
});

test('kill: a pending job exits at once; a running one when the worker reports it stopped', () => {
  const c = started();
  const p = c.jobId(c.submit('alice', 'serial'));
  assert.equal(c.fact({ kind: 'control', jobId: p, action: 'kill', user: 'alice' }, 'k-alice', 1).kind, 'controlled');
  assert.equal(c.state.jobs.get(p)!.state, 'EXIT');
  const r = c.jobId(c.submit('alice', 'serial'));
  c.dispatch(r, [{ host: 'n1', tasks: 1 }]);
  const bob = c.fact({ kind: 'control', jobId: r, action: 'kill', user: 'bob' }, 'k-bob', 1);
  assert.equal(bob.kind, 'rejected'); // not the owner, no job:control
  assert.match((bob as { message: string }).message, /job:control/);
  assert.equal(c.fact({ kind: 'control', jobId: r, action: 'kill', user: 'olga' }, 'k-olga', 1).kind, 'controlled'); // operator
  assert.equal(c.state.jobs.get(r)!.state, 'RUN');
  c.fact({
    kind: 'status',
    jobId: r,
    runNumber: 1,
    status: { type: 'finished', exitCode: 0, signal: 'SIGTERM', reason: null, timeMs: 0 },
  });
  assert.equal(c.state.jobs.get(r)!.state, 'EXIT');
  assert.equal(c.state.jobs.get(r)!.reason, 'killed by olga');
});

test('requeue returns a running job to PEND and the next dispatch re-reads the profile', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  c.dispatch(id, [{ host: 'n1', tasks: 1 }]);
  const firstHash = c.state.jobs.get(id)!.record!.profileHash;
  c.config({ foamLicenses: 2 });
  assert.equal(c.state.jobs.get(id)!.record!.profileHash, firstHash, 'a running job keeps its record');
  assert.equal(c.fact({ kind: 'control', jobId: id, action: 'requeue', user: 'alice' }, 'q', 1).kind, 'controlled');
  const job = c.state.jobs.get(id)!;
  assert.equal(job.state, 'PEND');
  assert.equal(job.record, null);
  assert.equal(job.requeueCount, 1);
  assert.equal(c.state.usage.slots.size, 0);
  assert.deepEqual(c.dispatch(id, [{ host: 'n1', tasks: 1 }]), { kind: 'dispatched', jobId: id, runNumber: 2 });
  assert.notEqual(job.record!.profileHash, firstHash);
  assert.deepEqual(
    job.record!.resreq.rusage.map((r) => r.value),
    [{ name: 'license_foam', value: 2 }],
  );
  // a report on the old run is ignored
  assert.equal(c.fact(finishedFact(id)).kind, 'ignored');
});

test('restart of a finished job re-checks app:use for its profile', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam'));
  c.fact({ kind: 'control', jobId: id, action: 'kill', user: 'alice' }, 'r', 1);
  // alice loses app:use on openfoam (rbac no longer lists it for basic_user): rename drops the grant
  c.config({ renameOpenfoamTo: 'foam' });
  const files = testClusterFiles({ renameOpenfoamTo: 'foam' }).map((f) =>
    f.path === 'rbac.yaml'
      ? { path: f.path, text: f.text.replace('values: [serial, python, foam]', 'values: [serial, python]') }
      : f,
  );
  assert.equal(c.fact({ kind: 'config', files, user: null }).kind, 'configApplied');
  const r = c.fact({ kind: 'control', jobId: id, action: 'restart', user: 'alice' }, 'r', 2);
  assert.equal(r.kind, 'rejected');
  assert.match((r as { message: string }).message, /app:use on application profile foam/);
  c.config({ renameOpenfoamTo: 'foam' });
  assert.equal(c.fact({ kind: 'control', jobId: id, action: 'restart', user: 'alice' }, 'r', 3).kind, 'controlled');
  assert.equal(c.state.jobs.get(id)!.state, 'PEND');
});

test('exactly once: a retried (client, sequence) returns the first result and changes nothing', () => {
  const c = started();
  const body = submitFactFor(c.state.config!.cluster, 'alice', 'normal', 'serial', SPEC);
  const first = c.fact(body, 'c-1', 1);
  const again = c.fact(body, 'c-1', 1);
  assert.deepEqual(again, first);
  assert.equal(c.state.jobs.size, 1);
  assert.equal(c.fact(body, 'c-1', 2).kind, 'submitted');
  assert.equal(c.state.jobs.size, 2);
  const stale = c.fact(body, 'c-1', 1);
  assert.equal((stale as { code: string }).code, 'stale_sequence');
  assert.equal(c.state.jobs.size, 2);
  // A rejection is remembered too.
  const bad = { ...body, profile: 'nosuchapp' };
  const r1 = c.fact(bad, 'c-2', 1);
  c.config({ renameOpenfoamTo: 'nosuchapp' });
  assert.deepEqual(c.fact(bad, 'c-2', 1), r1);
});

test('sessions expire by log time, oldest first', () => {
  const c = started();
  const body = submitFactFor(c.state.config!.cluster, 'alice', 'normal', 'serial', SPEC);
  c.fact(body, 'old', 1);
  c.timeMs += SESSION_TTL_MS / 2;
  c.fact(body, 'young', 1);
  c.timeMs += SESSION_TTL_MS / 2 + 5000;
  c.fact({ kind: 'noop' });
  assert.deepEqual([...c.state.sessions.keys()], ['young']);
});

test('empty entries are no-ops and undecodable ones are refused without changing the state', () => {
  const c = started();
  const jobs = c.state.jobs.size;
  assert.deepEqual(apply(c.state, new Uint8Array(0), ++c.index), { kind: 'noop' });
  const r = apply(c.state, new Uint8Array([0, 0, 0, 0, 9, 0, 0, 0, 1, 2, 3]), ++c.index);
  assert.equal((r as { code: string }).code, 'decode_error');
  assert.equal(c.state.jobs.size, jobs);
  assert.equal(c.state.appliedIndex, c.index);
  assert.throws(() => apply(c.state, new Uint8Array(0), c.index), /after/);
});

test('job details show the profile as recorded and resolved, its short hash, mode and the origin of each term', () => {
  const c = started();
  const id = c.jobId(c.submit('alice', 'openfoam', { resreq: 'select[mem>1000] span[ptile=2]' }));
  c.config({ renameOpenfoamTo: 'foam' });
  const d = jobDetails(c.state, id)!;
  const hash = hashOf(c.state.config!.cluster.profiles.get('foam')!);
  assert.equal(d.profile.display, 'foam (recorded as openfoam)');
  assert.equal(d.profile.label, `foam@${hash.slice(0, 6)}`);
  assert.equal(d.mode, 'direct');
  assert.deepEqual(
    d.resreq.map((t) => `${t.text} ${t.origin}`),
    ['select[ib] profile', 'select[mem>1000] job', 'rusage[license_foam=1] profile', 'span[ptile=2] job'],
  );
  assert.equal(d.pendReason, 'waiting for the scheduler');
  assert.equal(d.profileChangedSinceDispatch, null);

  c.dispatch(id, [{ host: 'n1', tasks: 1 }]);
  assert.equal(jobDetails(c.state, id)!.profileChangedSinceDispatch, false);
  assert.equal(jobDetails(c.state, id)!.recordLabel, `foam@${hash.slice(0, 6)}`);
  c.config({ renameOpenfoamTo: 'foam', foamLicenses: 3 });
  const after = jobDetails(c.state, id)!;
  assert.equal(after.profileChangedSinceDispatch, true);
  assert.deepEqual(
    after.resreq.find((t) => t.section === 'rusage'),
    { section: 'rusage', text: 'rusage[license_foam=1]', origin: 'profile' },
    'frozen values',
  );
});

test('the test cluster loads (guards the fixtures themselves)', () => {
  const r = loadConfig(testClusterFiles());
  assert.ok(r.ok);
});
