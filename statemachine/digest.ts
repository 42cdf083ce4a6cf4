// A state's digest: SHA-256 of its snapshot encoding. Two controllers at the same applied index
// must hold byte-identical snapshots (apply is deterministic, restore is exact), so equal digests
// are what "the replicas did not diverge" means, field for field. The usage tables are derived
// from the running jobs and are checked by checkStateInvariants instead.
//
// Pure: hashing is computation, not I/O.

import { createHash } from 'node:crypto';
import { snapshot } from './snapshot.js';
import type { ControllerState } from './state.js';

/** Hex SHA-256 of the state's snapshot encoding at its applied index. */
export function stateDigest(state: ControllerState): string {
  return createHash('sha256').update(snapshot(state)).digest('hex');
}
