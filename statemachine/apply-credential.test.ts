import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apply } from './apply.js';
import type { CredentialFact, Fact, FactBody } from './facts.js';
import { emptyState } from './state.js';
import { testClusterFiles } from '../testing/test-cluster.js';

function run(bodies: FactBody[]) {
  const state = emptyState();
  const results = [{ kind: 'config' as const, files: testClusterFiles(), user: null }, ...bodies].map((body, i) =>
    apply(state, { clientId: null, sequence: 0, timeMs: 1_000 * (i + 1), body } as Fact, i + 1),
  );
  return { state, results: results.slice(1) };
}
const cred = (action: CredentialFact['action'], name: string, user = 'root', untilMs = 0): CredentialFact => ({
  kind: 'credential',
  action,
  name,
  untilMs,
  user,
});

test('a revoked host is refused until enrolled again, at the next epoch; enrolling a host in good standing changes nothing', () => {
  const { state, results } = run([
    cred('enrollHost', 'node01'),
    cred('revokeHost', 'node01'),
    cred('revokeHost', 'node01'),
    cred('enrollHost', 'node01'),
    cred('enrollHost', 'node01'),
  ]);
  assert.deepEqual(
    results.map((r) => r.kind),
    Array(5).fill('credentialApplied'),
  );
  assert.deepEqual(state.hostCredentials.get('node01'), { epoch: 1, revoked: false });
});

test('only a cluster_admin may revoke or enroll, and the refusal names the user and the act', () => {
  const { state, results } = run([cred('revokeHost', 'node01', 'alice'), cred('revokeToken', 'j1', 'alice', 9e12)]);
  assert.equal(results[0]!.kind, 'rejected');
  assert.match(
    (results[0] as { message: string }).message,
    /user alice is not a cluster_admin: only a cluster_admin may revoke host node01/,
  );
  assert.equal(state.hostCredentials.size + state.revokedTokens.size, 0);
});

test('a revoked token is held until its expiry by the log time, then dropped', () => {
  const { state } = run([cred('revokeToken', 'j1', 'root', 5_000), cred('revokeToken', 'j2', 'root', 1e13)]);
  assert.deepEqual([...state.revokedTokens.keys()], ['j1', 'j2']);
  const later = run([
    cred('revokeToken', 'j1', 'root', 3_500),
    { kind: 'noop' },
    cred('revokeToken', 'j2', 'root', 1e13),
    cred('revokeToken', 'j0', 'root', 1_000), // expired already: nothing held
  ]);
  assert.deepEqual([...later.state.revokedTokens.keys()], ['j2']);
});
