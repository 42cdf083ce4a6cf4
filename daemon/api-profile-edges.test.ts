// Issue 22 through the client API, on one node whose Raft is a stand-in (propose = apply at the
// next index): a job's dry run and its dispatched record agree; zero and out-of-range values are
// refused naming the value and the rule, never in a validator's words; a grant naming the old name
// of a renamed profile (now its alias) keeps working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiServer } from './api-server.js';
import { WRITE_OPS, type Op } from '../api/protocol.js';
import type { DryRunResult, JobDetails } from '../api/responses.js';
import { TokenAuthority } from './auth.js';
import type { ControllerNode } from './controller-node.js';
import { createLogger } from './log.js';
import { formatLimit } from '../model/merge.js';
import { apply } from '../statemachine/apply.js';
import { loadConfig } from '../model/config.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody } from '../statemachine/facts.js';
import { liveMerge } from '../statemachine/jobs.js';
import { resreqTerms } from '../statemachine/queries.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import { testClusterFiles, type TestClusterOptions } from '../testing/test-cluster.js';

const SECRET = new TextEncoder().encode('api-profile-edges-test-secret-0123456789');
const T0 = 1_764_547_200_000;

class StandInNode {
  readonly id = 1;
  readonly state: ControllerState = emptyState();
  private index = 0;
  isLeader = (): boolean => true;
  leaderId = (): number => 1;
  addressOf = (id: number): string => `127.0.0.1:${7000 + id}`;
  readBarrier = async (): Promise<void> => {};
  async propose(bytes: Uint8Array): Promise<ApplyResult> {
    return apply(this.state, bytes, ++this.index);
  }
  fact(body: FactBody): ApplyResult {
    return apply(this.state, encodeFact({ clientId: null, sequence: 0, timeMs: T0 + this.index, body }), ++this.index);
  }
  /** The scheduler's dispatch: the record frozen from the live merge, through the log's codec. */
  dispatch(jobId: number): void {
    const job = this.state.jobs.get(jobId)!;
    const m = liveMerge(this.state.config!.cluster, job.profile, job.spec);
    assert.ok(m.ok);
    const hosts = [{ host: 'n1', tasks: m.effective.tasks }];
    const record = buildDispatchRecord(m.effective, m.hash, hosts);
    const r = this.fact({ kind: 'dispatch', jobId, runNumber: 1, placement: hosts, record, schedulerHash: m.hash });
    assert.equal(r.kind, 'dispatched', JSON.stringify(r));
  }
}

type Answer = Awaited<ReturnType<ApiServer['handle']>>;

async function setup(o: TestClusterOptions = {}) {
  const node = new StandInNode();
  assert.equal(node.fact({ kind: 'config', files: testClusterFiles(o), user: null }).kind, 'configApplied');
  const loaded = loadConfig(testClusterFiles(o));
  assert.ok(loaded.ok);
  const tokens = new TokenAuthority(SECRET, 'testcluster');
  const log = createLogger({ component: 'api' }, { sink: { write: () => undefined }, format: 'json' });
  const api = new ApiServer(node as unknown as ControllerNode, tokens, log, null, loaded.config, () => T0 + 60_000);
  let id = 100;
  let seq = 0;
  const call = async (user: string, op: string, args: Record<string, unknown>): Promise<Answer> =>
    api.handle(
      JSON.stringify({
        id: ++id,
        op,
        token: await tokens.issue(user),
        args,
        ...(WRITE_OPS.has(op as Op) ? { session: { client: `client-${user}-00001`, seq: ++seq } } : {}),
      }),
    );
  return { node, call };
}

function result<T>(r: Answer): T {
  assert.equal(r.ok, true, JSON.stringify(r));
  return (r as { result: T }).result;
}

function error(r: Answer): { code: string; message: string } {
  assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
  return (r as { error: { code: string; message: string } }).error;
}

/** What a dry run shows, read off a job's frozen record. */
function recordAsDryRun(d: JobDetails) {
  const r = d.record!;
  return {
    profile: r.profile,
    mode: r.mode,
    launchType: r.launchType,
    tasks: r.tasks,
    resreq: resreqTerms(r.resreq),
    env: r.env.map((e) => ({ name: e.value.name, value: e.value.value, origin: e.origin })),
    limits: Object.entries(r.limits).map(([k, v]) => ({
      name: k.replace(/_(s|bytes)$/, ''),
      value: formatLimit(k as 'runtime_s', v!.value),
      origin: v!.origin,
    })),
    profilePreExec: r.profilePreExec,
    profilePostExec: r.profilePostExec,
    jobPreExec: r.jobPreExec,
    jobPostExec: r.jobPostExec,
  };
}

test('the dry run shows the values the dispatched record holds', async () => {
  const { node, call } = await setup();
  const job = {
    app: 'openfoam',
    tasks: 4,
    resreq: 'select[mem>1000] rusage[mem=100] span[ptile=4]',
    env: { CASE: 'pipe' },
    limits: { runtime: '2h', memory: '4G', tasks: 8 },
    preExec: './prep.sh',
    command: ['./run.sh'],
  };
  const dry = result<DryRunResult>(await call('alice', 'jobs.submit', { job, dryRun: true }));
  const { jobId } = result<{ jobId: number }>(await call('alice', 'jobs.submit', { job }));
  node.dispatch(jobId);
  const shown = result<JobDetails>(await call('alice', 'jobs.show', { id: jobId }));
  const { dryRun: _d, profileLabel, recordedAs: _r, queue: _q, ...values } = dry;
  assert.deepEqual(recordAsDryRun(shown), values);
  assert.equal(shown.recordLabel, profileLabel);
});

test('a zero limit, a limit the worker would round and an out-of-range count are refused, naming the value and the rule', async () => {
  const { call } = await setup();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [
      { limits: { runtime: '0' } },
      /^job\.limits\.runtime: a runtime limit of 0 would stop the job at once; give 1s or more/,
    ],
    [{ limits: { memory: '0' } }, /^job\.limits\.memory: a memory limit of 0 would stop the job at once/],
    [{ limits: { cpu: '0s' } }, /^job\.limits\.cpu: a cpu limit of 0 would stop the job at once/],
    [{ limits: { memory: '1500' } }, /^job\.limits\.memory: a memory limit of 1500 bytes is not a whole number of KiB/],
    [{ tasks: 4294967297 }, /^args\.job\.tasks: 4294967297 is too large: at most 1000000$/],
    [{ tasks: 0 }, /^args\.job\.tasks: 0 is too small: at least 1$/],
    [
      { limits: { tasks: 2 ** 32 + 1 } },
      /^job\.limits\.tasks: a tasks limit of 4294967297 does not fit: Limits\.tasks is a UInt32/,
    ],
  ];
  for (const [extra, match] of cases) {
    for (const dryRun of [true, false]) {
      const e = error(await call('alice', 'jobs.submit', { job: { app: 'serial', command: ['x'], ...extra }, dryRun }));
      assert.equal(e.code, 'bad-request');
      assert.match(e.message, match, JSON.stringify(extra));
      assert.doesNotMatch(e.message, /Too big|Too small|Invalid input|expected number to be/);
    }
  }
});

test("restating the profile's rusage exactly changes nothing and is accepted; a span the profile leaves open is the job's", async () => {
  const { call } = await setup();
  const ok = await call('alice', 'jobs.submit', {
    job: { app: 'openfoam', resreq: 'rusage[license_foam=1] span[ptile=4]', command: ['x'] },
    dryRun: true,
  });
  assert.equal(ok.ok, true, JSON.stringify(ok));
});

test('the rename workflow: a grant naming the old name, now an alias, keeps working after the upgrade', async () => {
  const foamUser: TestClusterOptions['extraRoles'] = [
    { name: 'foam_user', permissions: ['{ name: app:use, type: app, values: [openfoam] }'], users: ['carol'] },
  ];
  const { node, call } = await setup({ extraRoles: foamUser });
  // Rename openfoam to foam, keeping `openfoam` as an alias; rbac.yaml still names openfoam.
  const upgrade = node.fact({
    kind: 'config',
    files: testClusterFiles({ extraRoles: foamUser, renameOpenfoamTo: 'foam' }),
    user: 'root',
  });
  assert.equal(upgrade.kind, 'configApplied', JSON.stringify(upgrade));
  const warnings = upgrade.kind === 'configApplied' ? upgrade.warnings : [];
  assert.ok(
    warnings.some((w) => /app:use names openfoam, an alias of profile foam: it grants app:use on foam/.test(w)),
    JSON.stringify(warnings),
  );
  for (const app of ['openfoam', 'foam']) {
    const r = result<{ profile: string }>(await call('carol', 'jobs.submit', { job: { app, command: ['x'] } }));
    assert.equal(r.profile, 'foam');
  }
});
