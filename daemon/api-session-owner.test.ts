// The client API's submit path (issue 21) on one node whose Raft is a stand-in (propose = apply at
// the next index): the early check refuses another user's session as apply does, and a job value
// holding a NUL byte is refused at the door, naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiServer } from './api-server.js';
import { TokenAuthority } from './auth.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import { StandInNode, standInApi, T0 } from '../testing/api-node.js';

const SECRET = new TextEncoder().encode('api-session-owner-test-secret-0123456789');

async function setup() {
  const node = StandInNode.configured(testClusterFiles());
  const tokens = new TokenAuthority(SECRET, 'testcluster');
  const api = standInApi(node, testClusterFiles(), tokens, () => T0 + 60_000);
  const token = { alice: await tokens.issue('alice'), bob: await tokens.issue('bob') };
  let id = 0;
  const submit = (user: 'alice' | 'bob', job: Record<string, unknown>, session: { client: string; seq: number }) =>
    api.handle(JSON.stringify({ id: ++id, op: 'jobs.submit', token: token[user], session, args: { job } }));
  return { node, api, submit };
}

function error(r: Awaited<ReturnType<ApiServer['handle']>>): { code: string; message: string } {
  assert.equal(r.ok, false, `expected an error, got ${JSON.stringify(r)}`);
  return (r as { error: { code: string; message: string } }).error;
}

test("bob naming alice's session gets neither her answer nor a proposal: the session belongs to another user", async () => {
  const { node, submit } = await setup();
  const first = await submit('alice', { command: ['true'] }, { client: 'client-x-0001', seq: 1 });
  assert.equal(first.ok, true, JSON.stringify(first));
  assert.equal(node.proposals, 1);
  // A "retry" of alice's request by bob: the early check used to answer it from her session.
  const retry = error(await submit('bob', { command: ['true'] }, { client: 'client-x-0001', seq: 1 }));
  assert.deepEqual([retry.code, retry.message], ['forbidden', 'session client-x-0001 belongs to another user']);
  assert.equal(node.proposals, 1, 'refused by the early check, not proposed');
  // A new sequence: refused by the early check too; alice's sequence does not move.
  const next = error(await submit('bob', { command: ['true'] }, { client: 'client-x-0001', seq: 5 }));
  assert.deepEqual([next.code, next.message], ['forbidden', 'session client-x-0001 belongs to another user']);
  assert.equal(node.state.sessions.get('client-x-0001')!.lastSequence, 1);
  assert.equal(node.state.jobs.size, 1);
  const again = await submit('alice', { command: ['true'] }, { client: 'client-x-0001', seq: 2 });
  assert.equal(again.ok, true, JSON.stringify(again));
});

test('a submit with a NUL byte in a command word, cwd, env value or pre-exec is refused naming the field', async () => {
  const { node, submit } = await setup();
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ command: ['/bin/echo', 'a\0b'] }, 'args.job.command.1: contains a NUL byte'],
    [{ command: ['true'], cwd: '/tmp\0' }, 'args.job.cwd: contains a NUL byte'],
    [{ command: ['true'], env: { CASE: 'x\0y' } }, 'args.job.env.CASE: contains a NUL byte'],
    [{ command: ['true'], preExec: 'echo \0' }, 'args.job.preExec: contains a NUL byte'],
    [{ command: ['true'], postExec: 'echo \0' }, 'args.job.postExec: contains a NUL byte'],
  ];
  let seq = 0;
  for (const [job, message] of cases) {
    const e = error(await submit('alice', job, { client: 'client-alice-0001', seq: ++seq }));
    assert.deepEqual([e.code, e.message], ['bad-request', message]);
  }
  assert.equal(node.proposals, 0);
  assert.equal(node.state.jobs.size, 0);
});
