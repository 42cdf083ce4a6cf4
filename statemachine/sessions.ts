// The session table behind exactly-once client requests (Raft thesis §6.3). Each write carries a
// client id and a sequence number; the table keeps, per client, the last sequence applied and its
// result. A retry of that sequence (after a failover, say) returns the first result and changes
// nothing. Sessions expire deterministically by LOG time (the leaders' clocks carried in the facts,
// never the local clock), oldest first, and the table is bounded; both survive snapshots.
//
// A client has one write outstanding at a time (the client library retries the same sequence until
// it gets an answer). A sequence lower than the last one is refused: its result is gone.

import type { ApplyResult } from './facts.js';

/** A client silent for this long (log time) loses its session. */
export const SESSION_TTL_MS = 60 * 60 * 1000;
/** At most this many sessions; the least recently used goes first. */
export const SESSIONS_MAX = 100_000;

export interface Session {
  readonly clientId: string;
  lastSequence: number;
  lastTimeMs: number;
  result: ApplyResult;
}

/** Insertion order is least-recently-used first: a touched session is moved to the end. */
export type SessionTable = Map<string, Session>;

export type SessionCheck =
  | { readonly kind: 'new' }
  | { readonly kind: 'duplicate'; readonly result: ApplyResult }
  | { readonly kind: 'stale'; readonly result: ApplyResult };

const NEW: SessionCheck = Object.freeze({ kind: 'new' });

export function checkSession(table: SessionTable, clientId: string, sequence: number): SessionCheck {
  const s = table.get(clientId);
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
export function peekSession(table: SessionTable, clientId: string, sequence: number, nowMs: number): SessionCheck {
  const s = table.get(clientId);
  if (s !== undefined && s.lastTimeMs + SESSION_TTL_MS < nowMs) return NEW;
  return checkSession(table, clientId, sequence);
}

export function recordSession(table: SessionTable, clientId: string, sequence: number, timeMs: number, result: ApplyResult): void {
  table.delete(clientId);
  table.set(clientId, { clientId, lastSequence: sequence, lastTimeMs: timeMs, result });
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
