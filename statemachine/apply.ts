// apply(state, fact, index) → result: the one way the controller state changes. Deterministic: a
// function of the state and the fact only (times are the leader's, inside the fact; no clock, no
// randomness, no I/O), so every controller that applies the same log holds the same state. It
// updates `state` in place (1 M jobs cannot be copied per fact) and returns the result for the
// client. Job ids are assigned here, in log order.
//
// Exactly once: a fact with a client id is checked against the session table first; a retried
// (client, sequence) returns the first result and changes nothing.
//
// Each fact kind's apply is a file of its own: apply-config.ts, apply-submit.ts, apply-dispatch.ts,
// apply-status.ts, apply-control.ts, apply-host.ts, apply-clean.ts, apply-modify.ts,
// apply-host-control.ts, apply-credential.ts, apply-batch.ts (what they share: apply-shared.ts).

import { WireError } from '../wire/capnp-wire.js';
import { applyBatch } from './apply-batch.js';
import { applyClean } from './apply-clean.js';
import { applyHostControl } from './apply-host-control.js';
import { applyConfig } from './apply-config.js';
import { applyControl } from './apply-control.js';
import { applyCredential } from './apply-credential.js';
import { applyDispatch } from './apply-dispatch.js';
import { applyHost } from './apply-host.js';
import { applyModify } from './apply-modify.js';
import { reject } from './apply-shared.js';
import { applyStatus } from './apply-status.js';
import { applySubmit } from './apply-submit.js';
import { decodeFact } from './facts-codec.js';
import type { ApplyResult, Fact } from './facts.js';
import { checkSession, expireSessions, recordSession } from './sessions.js';
import type { ControllerState, Job } from './state.js';

/** apply was called out of log order: a bug in the caller, never a user error. */
export class ApplyOrderError extends Error {
  override readonly name = 'ApplyOrderError';
}

/**
 * Applies one committed log entry. `fact` is the entry's bytes (decoded here, once) or an already
 * decoded fact; empty bytes are the leader's no-op entry. `index` must grow. The jobs a CleanFact
 * removes from the state are pushed to `removed` (the controller's accounting store takes them).
 */
export function apply(state: ControllerState, fact: Uint8Array | Fact, index: number, removed?: Job[]): ApplyResult {
  if (!(index > state.appliedIndex)) throw new ApplyOrderError(`apply of index ${index} after ${state.appliedIndex}`);
  let f: Fact;
  if (fact instanceof Uint8Array) {
    if (fact.length === 0) {
      state.appliedIndex = index;
      return { kind: 'noop' };
    }
    try {
      f = decodeFact(fact);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      state.appliedIndex = index;
      return reject('decode_error', `log entry ${index} is not a valid fact: ${e.message}`);
    }
  } else f = fact;

  if (f.timeMs > state.logTimeMs) state.logTimeMs = f.timeMs;
  expireSessions(state.sessions, state.logTimeMs);
  state.appliedIndex = index;

  const client = f.clientId;
  // A batch is the leader's own: its results are not kept for a client (nor could they be).
  if (client !== null && f.body.kind === 'batch')
    return reject(
      'decode_error',
      `log entry ${index} is a batch fact with a client session (${client}); batches have none`,
    );
  // A session belongs to the user who first used it: another user's fact naming it is refused
  // (sessions.ts) and leaves it as it was.
  const user = client === null ? null : factUser(f);
  if (client !== null) {
    const seen = checkSession(state.sessions, client, f.sequence, user);
    if (seen.kind !== 'new') return seen.result;
  }
  const result = applyBody(state, f, removed);
  if (client !== null) recordSession(state.sessions, client, f.sequence, state.logTimeMs, result, user);
  return result;
}

/** The user a fact acts for (a session's owner is the first one): null for the leader's own facts. */
export function factUser(f: Fact): string | null {
  const b = f.body;
  return b.kind === 'submit' ||
    b.kind === 'control' ||
    b.kind === 'config' ||
    b.kind === 'modify' ||
    b.kind === 'hostControl' ||
    b.kind === 'credential'
    ? b.user
    : null;
}

function applyBody(state: ControllerState, f: Fact, removed: Job[] | undefined): ApplyResult {
  const b = f.body;
  switch (b.kind) {
    case 'noop':
      return { kind: 'noop' };
    case 'config':
      return applyConfig(state, b);
    case 'submit':
      return applySubmit(state, b, f.timeMs);
    case 'dispatch':
      return applyDispatch(state, b, f.timeMs);
    case 'status':
      return applyStatus(state, b, f.timeMs);
    case 'control':
      return applyControl(state, b, f.timeMs);
    case 'host':
      return applyHost(state, b);
    case 'clean':
      return applyClean(state, b, removed);
    case 'modify':
      return applyModify(state, b, f.timeMs);
    case 'hostControl':
      return applyHostControl(state, b, f.timeMs);
    case 'credential':
      return applyCredential(state, b);
    case 'batch':
      return applyBatch(state, b, f.timeMs);
  }
}
