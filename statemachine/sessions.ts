// The session table behind exactly-once client requests (Raft thesis §6.3). Each write carries a
// client id and a sequence number; the table keeps, per client, the last sequence applied and its
// result. A retry of that sequence (after a failover, say) returns the first result and changes
// nothing. Sessions expire deterministically by LOG time (the leaders' clocks carried in the facts,
// never the local clock), oldest first, and the table is bounded; both survive snapshots.
//
// A client has one write outstanding at a time (the client library retries the same sequence until
// it gets an answer). A sequence lower than the last one is refused: its result is gone.
//
// A session belongs to the user who first used it (the user its first fact names): another user
// naming the same client id is refused before anything else is looked at, so bob can neither push
// alice's sequence forward (which would make her next retry `stale`) nor read her results. The
// owner is replicated (snapshot.ts). A session without an owner (restored from a snapshot written
// before owners were kept, or first used by a fact that names no user) is taken by the next user
// who uses it; a fact that names no user is not checked (every client request names its user).

import type { ApplyResult } from './facts.js';

/** A client silent for this long (log time) loses its session. */
export const SESSION_TTL_MS = 60 * 60 * 1000;
/** At most this many sessions; the least recently used goes first. */
export const SESSIONS_MAX = 100_000;

export interface Session {
  readonly clientId: string;
  /** The user who first used this session; null: none recorded (a snapshot from before owners were kept). */
  readonly user: string | null;
  lastSequence: number;
  lastTimeMs: number;
  result: ApplyResult;
}

/** Insertion order is least-recently-used first: a touched session is moved to the end. */
export type SessionTable = Map<string, Session>;

export type SessionCheck =
  | { readonly kind: 'new' }
  | { readonly kind: 'duplicate'; readonly result: ApplyResult }
  | { readonly kind: 'stale'; readonly result: ApplyResult }
  /** The session belongs to another user: refused, and the session is left as it is. */
  | { readonly kind: 'foreign'; readonly result: ApplyResult };

const NEW: SessionCheck = Object.freeze({ kind: 'new' });

/** The refusal of a session used by a user who does not own it (the same words in apply and the API). */
export function foreignSessionResult(clientId: string): ApplyResult {
  return { kind: 'rejected', code: 'not_authorized', message: `session ${clientId} belongs to another user` };
}

/**
 * What apply does with (client, sequence) from `user` (the user the fact names; null for a fact
 * that names none, which no client request is: those always act for a user): another user's
 * session is refused first, then a retry gets its first result.
 */
export function checkSession(
  table: SessionTable,
  clientId: string,
  sequence: number,
  user: string | null = null,
): SessionCheck {
  const s = table.get(clientId);
  if (s !== undefined && s.user !== null && user !== null && s.user !== user)
    return { kind: 'foreign', result: foreignSessionResult(clientId) };
  if (s === undefined || sequence > s.lastSequence) return NEW;
  if (sequence === s.lastSequence) return { kind: 'duplicate', result: s.result };
  return {
    kind: 'stale',
    result: {
      kind: 'rejected',
      code: 'stale_sequence',
      message: `request ${sequence} of client ${clientId} is older than its last request (${s.lastSequence}); its result is no longer kept`,
    },
  };
}

/**
 * What apply would answer for (client, sequence) in a fact of log time `nowMs`, without changing the
 * table: a session apply would expire first counts as none. The leader asks this before its early
 * checks, so that a retry of a write already applied gets its first answer, not a new judgement.
 */
export function peekSession(
  table: SessionTable,
  clientId: string,
  sequence: number,
  nowMs: number,
  user: string | null = null,
): SessionCheck {
  const s = table.get(clientId);
  if (s !== undefined && s.lastTimeMs + SESSION_TTL_MS < nowMs) return NEW;
  return checkSession(table, clientId, sequence, user);
}

/** Records a request's result; the session keeps its owner, or `user` takes one that has none. */
export function recordSession(
  table: SessionTable,
  clientId: string,
  sequence: number,
  timeMs: number,
  result: ApplyResult,
  user: string | null = null,
): void {
  const owner = table.get(clientId)?.user ?? user;
  table.delete(clientId);
  table.set(clientId, { clientId, user: owner, lastSequence: sequence, lastTimeMs: timeMs, result });
  while (table.size > SESSIONS_MAX) {
    const oldest = table.keys().next().value as string;
    table.delete(oldest);
  }
}

/**
 * When the oldest session of a table expires, as last computed. Only a shortcut: sessions are
 * added at the end with the latest log time, so the real first expiry is never earlier than this;
 * a table without an entry here (a restored one) is simply scanned. The result is the same.
 */
const firstExpiryMs = new WeakMap<SessionTable, number>();

/** Drops the sessions idle for longer than SESSION_TTL_MS at log time `nowMs`. */
export function expireSessions(table: SessionTable, nowMs: number): void {
  const due = firstExpiryMs.get(table);
  if (due !== undefined && nowMs <= due) return;
  for (const s of table.values()) {
    const expiresMs = s.lastTimeMs + SESSION_TTL_MS;
    if (expiresMs >= nowMs) {
      firstExpiryMs.set(table, expiresMs);
      return;
    }
    table.delete(s.clientId);
  }
  firstExpiryMs.delete(table);
}
