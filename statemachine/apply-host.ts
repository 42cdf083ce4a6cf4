// Applying a HostRegisteredFact: the host's registration replaces its previous one. Refused (the
// state unchanged) for a host hosts.yaml does not list and for values apply could not account
// exactly; the leader checks both before proposing (daemon/worker-endpoint.ts), this is the
// authoritative check, the same on every controller.

import { reject } from './apply-shared.js';
import type { ApplyResult, HostRegisteredFact } from './facts.js';
import { registrationProblem } from './host-capacity.js';
import type { ControllerState } from './state.js';

/** Why the leader refuses a worker registering as `host` when hosts.yaml does not list it. */
export function hostNotConfiguredReason(host: string): string {
  return `host ${host} is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd`;
}

export function applyHost(state: ControllerState, b: HostRegisteredFact): ApplyResult {
  const r = b.registration;
  const config = state.config?.cluster ?? null;
  if (config !== null && !config.hosts.has(r.host))
    return reject('host_not_configured', hostNotConfiguredReason(r.host));
  const problem = registrationProblem(r);
  if (problem !== null) return reject('invalid_registration', problem);
  state.hosts.set(r.host, r);
  return { kind: 'hostRegistered' };
}
