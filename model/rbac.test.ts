// Access by RBAC permission with the shipped rbac.yaml: app:use / app:view scoped to profiles,
// queue:submit to queues, cluster_admin the single bypass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { loadConfig } from './config.js';
import type { ClusterConfig } from './config-types.js';
import { resolveProfile } from './profiles.js';
import { authorize, rolesOf } from './rbac.js';

const CONFIGS = new URL('../../configs/', import.meta.url);
function shippedConfig(): ClusterConfig {
  const r = loadConfig(
    readdirSync(CONFIGS)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => ({ path: f, text: readFileSync(new URL(f, CONFIGS), 'utf8') })),
  );
  assert.ok(r.ok);
  return r.config;
}
const config = shippedConfig();

test('roles come from direct bindings and from groups in users.yaml', () => {
  assert.deepEqual(rolesOf(config, 'alice'), ['basic_user', 'cfd_user']);
  assert.deepEqual(rolesOf(config, 'bob'), ['basic_user', 'ml_user']);
  assert.deepEqual(rolesOf(config, 'admin'), ['cluster_admin']);
  assert.deepEqual(rolesOf(config, 'mallory'), []);
});

test('basic_user may use the default profile and view all profiles', () => {
  assert.deepEqual(authorize(config, 'bob', 'app:use', { type: 'app', value: 'python' }), { allowed: true });
  assert.deepEqual(authorize(config, 'bob', 'app:view', { type: 'app', value: 'openfoam' }), { allowed: true });
  assert.deepEqual(authorize(config, 'bob', 'app:view'), { allowed: true });
  assert.deepEqual(authorize(config, 'bob', 'app:use', { type: 'app', value: 'openfoam' }), {
    allowed: false,
    reason: 'user bob (roles: basic_user, ml_user) is not allowed app:use on application profile openfoam',
  });
});

test('app:use is checked against the alias target, which the caller resolves', () => {
  const target = resolveProfile(config, 'openfoam-old')?.profile.name as string;
  assert.equal(target, 'openfoam');
  assert.deepEqual(authorize(config, 'alice', 'app:use', { type: 'app', value: target }), { allowed: true });
  assert.equal(authorize(config, 'bob', 'app:use', { type: 'app', value: target }).allowed, false);
});

test('queue:submit and app:use are independent checks', () => {
  assert.deepEqual(authorize(config, 'bob', 'queue:submit', { type: 'queue', value: 'normal' }), { allowed: true });
  assert.equal(authorize(config, 'bob', 'queue:submit', { type: 'queue', value: 'night' }).allowed, false);
  assert.deepEqual(authorize(config, 'alice', 'queue:submit', { type: 'queue', value: 'night' }), { allowed: true });
  // A queue grant does not answer an app question with the same name, nor the reverse.
  assert.equal(authorize(config, 'bob', 'app:use', { type: 'app', value: 'normal' }).allowed, false);
});

test('cluster_admin is the single bypass; users without a role get nothing', () => {
  for (const p of ['queue:submit', 'app:use', 'app:view', 'job:control', 'cluster:admin'] as const) {
    assert.deepEqual(authorize(config, 'admin', p, { type: 'app', value: 'anything' }), { allowed: true });
  }
  assert.deepEqual(authorize(config, 'mallory', 'app:view'), {
    allowed: false,
    reason: 'user mallory has no role in rbac.yaml, so is not allowed app:view',
  });
  assert.equal(authorize(config, 'alice', 'cluster:admin').allowed, false);
  assert.equal(authorize(config, 'alice', 'job:control').allowed, false);
  assert.deepEqual(authorize(config, 'alice', 'job:view'), { allowed: true });
});
