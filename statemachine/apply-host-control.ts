// Applying a HostControlFact (`xceadmin hosts close|open NAME [--reason TEXT]`): a closed host gets
// no new jobs (the scheduler leaves it out, scheduler/pass.ts; apply declines a dispatch onto it,
// apply-dispatch.ts), its running jobs go on; opening it takes the close and its reason away.
// RBAC is re-checked here (cluster:admin), the same on every controller.

import { authorize } from '../model/rbac.js';
import { reject } from './apply-shared.js';
import type { ApplyResult, HostControlFact } from './facts.js';
import type { ControllerState } from './state.js';

/** Characters of a close's reason (it is shown in `xcecli hosts`). */
export const HOST_CLOSE_REASON_CHARS_MAX = 512;

/** The pend reason part for a closed host, and what `xcecli hosts` shows. */
export function closedHostReason(host: string, reason: string | null, user: string): string {
  return `host ${host} is closed by ${user}${reason === null ? '' : `: ${reason}`}`;
}

export function applyHostControl(state: ControllerState, b: HostControlFact, timeMs: number): ApplyResult {
  const config = state.config?.cluster ?? null;
  if (config === null) return reject('no_config', 'the cluster has no configuration yet');
  const ok = authorize(config, b.user, 'cluster:admin');
  if (!ok.allowed) return reject('not_authorized', ok.reason);
  if (!config.hosts.has(b.host)) return reject('host_not_configured', `host ${b.host} is not in hosts.yaml`);
  if (b.reason !== null && b.reason.length > HOST_CLOSE_REASON_CHARS_MAX)
    return reject('invalid_reason', `the reason is longer than ${HOST_CLOSE_REASON_CHARS_MAX} characters`);
  if (b.close) {
    // Closing a closed host again replaces the reason (and who closed it).
    state.closedHosts.set(b.host, { host: b.host, reason: b.reason, user: b.user, timeMs });
    return { kind: 'hostControlled' };
  }
  if (!state.closedHosts.delete(b.host)) return reject('bad_state', `host ${b.host} is not closed`);
  return { kind: 'hostControlled' };
}
