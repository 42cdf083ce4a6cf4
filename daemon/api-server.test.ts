// The client API's submit path, on one node whose Raft is a stand-in (propose = apply at the next
// index): what a follower answers, what a retried write gets, and the shape of a job refused at
// the door. The real controller is exercised end to end in test/api.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiServer } from './api-server.js';
import { TokenAuthority } from './auth.js';
import { testClusterFiles, type TestClusterOptions } from '../testing/test-cluster.js';
import { StandInNode, standInApi, T0 } from '../testing/api-node.js';

const SECRET = new TextEncoder().encode('api-server-test-secret-0123456789abcdef');

async function setup(o: TestClusterOptions = {}) {
  const node = StandInNode.configured(testClusterFiles(o));
  const tokens = new TokenAuthority(SECRET, 'testcluster');
  const api = standInApi(node, testClusterFiles(o), tokens, () => T0 + 60_000);
  const token = await tokens.issue('alice');
  let id = 0;
  const submit = (job: Record<string, unknown>, session = { client: 'client-alice-0001', seq: 1 }, dryRun = false) =>
    api.handle(
      JSON.stringify({ id: ++id, op: 'jobs.submit', token, session, args: dryRun ? { job, dryRun } : { job } }),
    );
  return { node, api, submit };
}

function error(r: Awaited<ReturnType<ApiServer['handle']>>): {
  code: string;
  message: string;
  leader?: { id: number; address: string };
} {
  assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
  return (r as { error: { code: string; message: string } }).error;
}

test('a retried submit gets its first answer, even after the profile it named was removed', async () => {
  const { node, submit } = await setup();
  const first = await submit({ app: 'openfoam', command: ['true'] });
  assert.deepEqual(first, { id: 1, ok: true, result: { jobId: 1, profile: 'openfoam', queue: 'normal' } });
  node.config(testClusterFiles({ withoutOpenfoam: true }));
  // The answer was lost; the client retries with the same session and sequence.
  const retry = await submit({ app: 'openfoam', command: ['true'] });
  assert.deepEqual(retry, { id: 2, ok: true, result: { jobId: 1, profile: 'openfoam', queue: 'normal' } });
  assert.equal(node.state.jobs.size, 1, 'applied once');
  assert.equal(node.proposals, 1, 'the retry is answered from the session table, not proposed again');
  // A new request (the next sequence) is checked against the configuration in force.
  const next = error(await submit({ app: 'openfoam', command: ['true'] }, { client: 'client-alice-0001', seq: 2 }));
  assert.deepEqual([next.code, next.message], ['rejected', 'application profile openfoam is not defined']);
});

test('a request older than the last one of its client is refused as apply would refuse it', async () => {
  const { submit } = await setup();
  assert.equal((await submit({ command: ['true'] }, { client: 'client-alice-0002', seq: 1 })).ok, true);
  assert.equal((await submit({ command: ['true'] }, { client: 'client-alice-0002', seq: 2 })).ok, true);
  const old = error(await submit({ command: ['true'] }, { client: 'client-alice-0002', seq: 1 }));
  assert.equal(old.code, 'rejected');
  assert.match(old.message, /request 1 of client client-alice-0002 is older than its last request \(2\)/);
});

test('a follower redirects a submit to the leader instead of refusing it from its own, older state', async () => {
  const { node, submit } = await setup();
  node.leader = 2;
  // The leader has a profile `newapp` this follower has not applied yet: the follower must not judge.
  const e = error(await submit({ app: 'newapp', command: ['true'] }));
  assert.equal(e.code, 'not-leader', e.message);
  assert.deepEqual(e.leader, { id: 2, address: '127.0.0.1:7002' });
  const dry = error(await submit({ app: 'newapp', command: ['true'] }, undefined, true));
  assert.equal(dry.code, 'not-leader', "a dry run is the leader's answer too");
  node.leader = 0;
  const none = error(await submit({ app: 'newapp', command: ['true'] }));
  assert.equal(none.code, 'no-leader', none.message);
  assert.equal(node.proposals, 0);
});

test('an environment variable the worker could not take is refused at submit, naming it', async () => {
  const { node, submit } = await setup();
  for (const name of ['MY-VAR', 'A=B', '1ST', 'x'.repeat(257)]) {
    const e = error(await submit({ env: { [name]: '1' }, command: ['true'] }));
    assert.equal(e.code, 'bad-request', e.message);
    assert.ok(e.message.includes(`args.job.env.${name}`), e.message);
    assert.match(
      e.message,
      /environment variable name ".*" (is not valid: use letters, digits and "_", not starting with a digit|is longer than 256 characters)/,
    );
  }
  const many = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`V${i}`, '1']));
  const e = error(await submit({ env: many, command: ['true'] }));
  assert.equal(e.code, 'bad-request');
  assert.match(e.message, /args\.job\.env: a job may set at most 1024 environment variables, not 1025/);
  assert.equal(node.proposals, 0);
  const most = Object.fromEntries(Array.from({ length: 1024 }, (_, i) => [`V${i}`, '1']));
  assert.equal((await submit({ env: most, command: ['true'] })).ok, true, 'the limit itself is allowed');
});

test('the dry run answers with the admission apply uses: an unknown resource is refused, the default profile named', async () => {
  const { submit } = await setup();
  const e = error(await submit({ resreq: 'select[infiniband]', command: ['true'] }, undefined, true));
  assert.equal(e.code, 'rejected');
  assert.match(e.message, /resource requirement: .*infiniband.*not defined in resources\.yaml/);
  const ok = await submit({ app: 'openfoam-old', tasks: 4, command: ['true'] }, undefined, true);
  assert.equal(ok.ok, true, JSON.stringify(ok));
  const r = (ok as { result: { recordedAs: string; profile: string; tasks: { value: number } } }).result;
  assert.equal(r.recordedAs, 'openfoam');
  assert.equal(r.profile, 'openfoam');
});
