// Applying a CredentialFact (issue 19): who may speak for whom, the same on every controller.
//   revokeHost   the host's credential is refused (its worker is disconnected) until it is enrolled again
//   enrollHost   a revoked host moves to the next epoch, so its new credential is not the old one;
//                a host in good standing is left as it is (enrolling it again hands out the same credential)
//   revokeToken  a user token, by its jti, is refused until it expires; then the entry is dropped
// Only a cluster_admin may do any of these (re-checked here: the API checked before proposing).

import { CLUSTER_ADMIN_ROLE } from '../model/config-types.js';
import { rolesOf } from '../model/rbac.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, CredentialFact } from './facts.js';
import { CREDENTIAL_HOSTS_MAX, REVOKED_TOKENS_MAX, type ControllerState } from './state.js';

/** Epochs are UInt32 in the snapshot. */
const EPOCH_MAX = 0xffff_ffff;

export function applyCredential(state: ControllerState, b: CredentialFact): ApplyResult {
  const config = state.config?.cluster ?? null;
  if (config === null) return reject('no_config', 'the cluster has no configuration yet');
  if (!rolesOf(config, b.user).includes(CLUSTER_ADMIN_ROLE))
    return reject('not_authorized', `user ${b.user} is not a cluster_admin: only a cluster_admin may ${verb(b)}`);
  expireRevokedTokens(state);
  if (b.name === '') return reject('invalid_job', `${verb(b)}: no name given`);
  switch (b.action) {
    case 'revokeHost': {
      const h = state.hostCredentials.get(b.name);
      if (h === undefined && state.hostCredentials.size >= CREDENTIAL_HOSTS_MAX)
        return reject('too_many_jobs', `at most ${CREDENTIAL_HOSTS_MAX} hosts may have a credential state`);
      state.hostCredentials.set(b.name, { epoch: h?.epoch ?? 0, revoked: true });
      return { kind: 'credentialApplied' };
    }
    case 'enrollHost': {
      const h = state.hostCredentials.get(b.name);
      if (h === undefined || !h.revoked) return { kind: 'credentialApplied' };
      if (h.epoch >= EPOCH_MAX) return reject('bad_state', `host ${b.name} was enrolled too many times`);
      state.hostCredentials.set(b.name, { epoch: h.epoch + 1, revoked: false });
      return { kind: 'credentialApplied' };
    }
    case 'revokeToken': {
      if (b.untilMs <= state.logTimeMs) return { kind: 'credentialApplied' }; // expired already: nothing to hold
      if (!state.revokedTokens.has(b.name) && state.revokedTokens.size >= REVOKED_TOKENS_MAX)
        return reject('too_many_jobs', `at most ${REVOKED_TOKENS_MAX} unexpired tokens may be revoked at once`);
      state.revokedTokens.set(b.name, b.untilMs);
      return { kind: 'credentialApplied' };
    }
  }
}

/**
 * Drops revoked tokens that have expired by the log's time (a token past its expiry is refused
 * anyway); run on each credential fact, so it costs the hot path nothing.
 */
function expireRevokedTokens(state: ControllerState): void {
  for (const [jti, until] of state.revokedTokens) if (until <= state.logTimeMs) state.revokedTokens.delete(jti);
}

function verb(b: CredentialFact): string {
  return b.action === 'revokeHost'
    ? `revoke host ${b.name}`
    : b.action === 'enrollHost'
      ? `enroll host ${b.name}`
      : `revoke token ${b.name}`;
}
