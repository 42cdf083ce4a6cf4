// Why the core refuses a request, as the typed errors a caller acts on: a node shutting down or
// fail-stopped (retry on another controller), and a follower or a leaderless cluster (retry on the
// leader, or shortly).

import type { ControllerFatalError } from './errors.js';
import { NodeUnavailableError } from './errors.js';
import type { CorePhase } from './core-options.js';

/** The refusal of any request in `phase`, or undefined while the core runs. */
export function phaseRefusal(
  phase: CorePhase,
  id: number,
  fatal: ControllerFatalError | null,
): NodeUnavailableError | undefined {
  switch (phase) {
    case 'running':
      return undefined;
    case 'failed':
      return new NodeUnavailableError(
        'unavailable',
        `node ${id} stopped on a fatal error and serves nothing (${fatal?.kind ?? 'fail-stop'}); retry on another controller`,
      );
    default:
      return new NodeUnavailableError('unavailable', `node ${id} is shutting down; retry on another controller`);
  }
}

/** The refusal of a write on a node that does not lead (`lead`: the leader it knows, 0 when none). */
export function notLeaderError(id: number, lead: number): NodeUnavailableError {
  return lead === 0
    ? new NodeUnavailableError(
        'no-leader',
        'the cluster has no leader right now (an election is under way); retry shortly',
      )
    : new NodeUnavailableError('not-leader', `node ${id} is not the leader; the leader is node ${lead}`, lead);
}
