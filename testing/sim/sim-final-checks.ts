// The checks once the faults healed and every node settled at one applied index: byte-identical
// states on every node, no request that created two jobs, and every acknowledged submit present
// under the id its client was told, with the session's last sequence at least the last answered.

import type { ApplyResult } from '../../statemachine/facts.js';
import { snapshot } from '../../statemachine/snapshot.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { SimWorld } from './sim-world.js';
import type { SimNode } from './sim-types.js';
import { explainDifference } from './state-diff.js';
import { sameBytes } from './sim-util.js';
import { jobNameFor } from './workload.js';
import { isElementId } from '../../model/job-id.js';

/** What the final checks need of a client: its id and the first answer to each sequence. */
export interface AnsweredClient {
  readonly id: string;
  readonly answers: ReadonlyMap<number, ApplyResult>;
}

/** Runs the final checks on the settled nodes `up`, all at applied index `index`. */
export function finalChecks(
  w: SimWorld,
  up: readonly SimNode[],
  index: number,
  clients: readonly AnsweredClient[],
): void {
  w.log(`SETTLED: every node at applied index ${index}`);
  if (!sameStates(w, up, index)) return;
  const state = up[0]!.core!.state;
  if (!noDuplicateJobs(w, state)) return;
  for (const c of clients) if (!ackedPresent(w, state, c)) return;
}

function sameStates(w: SimWorld, up: readonly SimNode[], index: number): boolean {
  let reference: { id: number; bytes: Uint8Array } | undefined;
  for (const n of up) {
    const bytes = snapshot(n.core!.state);
    w.stats.statesCompared++;
    if (reference === undefined) reference = { id: n.id, bytes };
    else if (!sameBytes(reference.bytes, bytes)) {
      w.fail(
        'replica-divergence',
        `after healing, at index ${index}, nodes ${reference.id} and ${n.id} hold different states: ${explainDifference(reference.bytes, bytes)}`,
      );
      return false;
    }
  }
  return true;
}

/** Exactly once: no request created two jobs (or two arrays; an array's elements are one request's). */
function noDuplicateJobs(w: SimWorld, state: ControllerState): boolean {
  const byName = new Map<string, number>();
  const made: { id: number; name: string | null }[] = [];
  for (const j of state.jobs.values()) if (!isElementId(j.id)) made.push({ id: j.id, name: j.spec.jobName });
  for (const a of state.arrays.values()) made.push({ id: a.id, name: a.name });
  for (const j of made) {
    const name = j.name;
    if (name === null) continue;
    const prev = byName.get(name);
    if (prev !== undefined) {
      w.fail(
        'duplicate-apply',
        `jobs ${prev} and ${j.id} were both created by request ${name} (a retried submit was applied twice)`,
      );
      return false;
    }
    byName.set(name, j.id);
  }
  return true;
}

/**
 * Every acknowledged submit is in the final state, under the id its client was told (a job array
 * under its name without the index part), unless the leader cleaned it (finished, then removed).
 */
function ackedPresent(w: SimWorld, state: ControllerState, c: AnsweredClient): boolean {
  for (const [seq, r] of c.answers) {
    if (r.kind !== 'submitted') continue;
    const array = state.arrays.get(r.jobId);
    const held = array !== undefined ? array.name : state.jobs.get(r.jobId)?.spec.jobName;
    const name = jobNameFor(c.id, seq);
    if (held === undefined && w.cleanProposed.has(r.jobId)) continue;
    if (held !== name) {
      w.stats.lostWrites++;
      w.fail(
        'lost-write',
        `${c.id} request ${seq} was acknowledged as job ${r.jobId}, but the final state ${held === undefined ? 'has no such job' : `holds ${held} there`}`,
      );
      return false;
    }
  }
  const s = state.sessions.get(c.id);
  const last = Math.max(0, ...[...c.answers.keys()]);
  if (last > 0 && (s === undefined || s.lastSequence < last)) {
    w.fail(
      'lost-write',
      `${c.id}'s request ${last} was acknowledged but its session says ${s === undefined ? 'nothing' : `last sequence ${s.lastSequence}`}`,
    );
    return false;
  }
  return true;
}
