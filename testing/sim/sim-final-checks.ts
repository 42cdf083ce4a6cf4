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

/** Exactly once: no request created two jobs. */
function noDuplicateJobs(w: SimWorld, state: ControllerState): boolean {
  const byName = new Map<string, number>();
  for (const j of state.jobs.values()) {
    const name = j.spec.jobName;
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

/** Every acknowledged submit is in the final state, under the id its client was told. */
function ackedPresent(w: SimWorld, state: ControllerState, c: AnsweredClient): boolean {
  for (const [seq, r] of c.answers) {
    if (r.kind !== 'submitted') continue;
    const job = state.jobs.get(r.jobId);
    const name = jobNameFor(c.id, seq);
    if (job === undefined || job.spec.jobName !== name) {
      w.stats.lostWrites++;
      w.fail(
        'lost-write',
        `${c.id} request ${seq} was acknowledged as job ${r.jobId}, but the final state ${job === undefined ? 'has no such job' : `holds ${job.spec.jobName} there`}`,
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
