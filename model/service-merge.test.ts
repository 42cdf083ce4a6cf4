// The additive rule for services, with the shipped `jupyter` profile (kind service).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { loadConfig } from './config.js';
import type { Profile } from './profile-types.js';
import { mergeService, type ServiceOwnValues } from './service-merge.js';

const CONFIGS = new URL('../../configs/', import.meta.url);
const r = loadConfig(
  readdirSync(CONFIGS)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => ({ path: f, text: readFileSync(new URL(f, CONFIGS), 'utf8') })),
);
assert.ok(r.ok);
const jupyter = r.config.profiles.get('jupyter') as Profile;
const openfoam = r.config.profiles.get('openfoam') as Profile;
const none: ServiceOwnValues = { replicas: null, spread: null, rollout: null };

test('restart, probes and ports come from the profile; no replica count means the minimum', () => {
  const m = mergeService(jupyter, none);
  assert.ok(m.ok);
  assert.deepEqual(m.effective.replicas, { value: 1, origin: 'profile' });
  assert.equal(m.effective.restart.policy, 'on-failure');
  assert.equal(m.effective.restart.backoffInitial_s, 2);
  assert.deepEqual(m.effective.restart.giveUp, { attempts: 5, window_s: 600 });
  assert.deepEqual(m.effective.liveness?.action, { kind: 'http', port: 'http', path: '/api' });
  assert.deepEqual(m.effective.ports, [{ name: 'http', port: 0, protocol: 'tcp' }]);
  assert.deepEqual(m.effective.spread, { value: { across: 'hname', maxSkew: 1 }, origin: 'profile' });
});

test('a replica count outside the profile range is refused, naming the range', () => {
  const m = mergeService(jupyter, { ...none, replicas: 3 });
  assert.equal(m.ok, false);
  if (!m.ok) {
    assert.equal(m.error.field, 'service.replicas');
    assert.equal(
      m.error.message,
      'service asks for 3 replicas but application profile jupyter requires between 1 and 1 (replicas: {min: 1, max: 1})',
    );
  }
});

test('spread and rollout bind when the profile sets them', () => {
  const m = mergeService(jupyter, { ...none, rollout: { maxUnavailable: 1, maxSurge: 0 } });
  assert.equal(m.ok, false);
  if (!m.ok)
    assert.equal(
      m.error.message,
      'service sets rollout: {max_unavailable: 1, max_surge: 0} but application profile jupyter requires rollout: {max_unavailable: 0, max_surge: 1}',
    );
  assert.ok(
    mergeService(jupyter, { ...none, rollout: { maxUnavailable: 0, maxSurge: 1 } }).ok,
    'restating is not a change',
  );
});

test("where the profile sets no spread or rollout, the service's own stand", () => {
  const open: Profile = {
    ...jupyter,
    service: { ...(jupyter.service as object), spread: null, rollout: null, replicas: null } as Profile['service'],
  };
  const m = mergeService(open, {
    replicas: 4,
    spread: { across: 'rack', maxSkew: 2 },
    rollout: { maxUnavailable: 1, maxSurge: 1 },
  });
  assert.ok(m.ok);
  assert.deepEqual(m.effective.replicas, { value: 4, origin: 'job' });
  assert.deepEqual(m.effective.spread, { value: { across: 'rack', maxSkew: 2 }, origin: 'job' });
  assert.deepEqual(m.effective.rollout, { value: { maxUnavailable: 1, maxSurge: 1 }, origin: 'job' });
});

test('a batch profile cannot run a service', () => {
  const m = mergeService(openfoam, none);
  assert.equal(m.ok, false);
  if (!m.ok) assert.match(m.error.message, /application profile openfoam is not a service profile/);
});
