// The checks made while the simulation runs: after every apply on every node the state invariants
// and the same result at the same index everywhere; a (client, sequence) applied again answers its
// first result; one leader per term; encoded states byte-identical across nodes at one index.

import { apply as realApply } from '../../statemachine/apply.js';
import type { ApplyResult, Fact } from '../../statemachine/facts.js';
import { checkStateInvariants, StateInvariantError } from '../../statemachine/invariants.js';
import { snapshot } from '../../statemachine/snapshot.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { SimWorld } from './sim-world.js';
import type { SimNode } from './sim-types.js';
import { explainDifference } from './state-diff.js';
import { bytesKey, canonical, sameBytes } from './sim-util.js';

/** The first application of a (client, sequence): where and what it answered. */
export interface FirstApplied {
  readonly index: number;
  readonly result: ApplyResult;
  readonly canon: string;
}

export class SimChecks {
  private readonly resultAt = new Map<number, string>();
  private readonly encodedAt = new Map<number, { node: number; bytes: Uint8Array; what: string }>();
  private readonly leaderOfTerm = new Map<number, number>();
  private readonly factsByKey = new Map<string, Array<{ bytes: Uint8Array; client: string; seq: number }>>();
  private readonly firstApplied = new Map<string, FirstApplied>();

  constructor(
    private readonly w: SimWorld,
    /** A node's state is encoded and compared after applying an index divisible by this. */
    private readonly sampleEvery: number,
  ) {}

  /** The node's apply: the real one, then the checks (and the injected fault, when asked). */
  applyOn(n: SimNode, state: ControllerState, fact: Uint8Array | Fact, index: number): ApplyResult {
    if (state !== n.lastState) {
      // A state this node did not build by applying: restored or installed from the leader.
      n.lastState = state;
      if (state.appliedIndex > 0) {
        this.w.stats.snapshotsInstalled++;
        this.compareEncoded(n, state.appliedIndex, snapshot(state), 'installed or restored');
      }
    }
    const result = realApply(state, fact, index);
    this.w.stats.applies++;
    if (n.faulty !== undefined && result.kind === 'submitted' && n.faulty.chance(0.3)) {
      // The injected non-determinism: this node records a submit time one millisecond early.
      const job = state.jobs.get(result.jobId) as { submitTimeMs: number } | undefined;
      if (job !== undefined) job.submitTimeMs -= 1;
    }
    try {
      checkStateInvariants(state);
    } catch (e) {
      if (!(e instanceof StateInvariantError)) throw e;
      this.w.fail('state-invariant', `node ${n.id} after applying index ${index}: ${e.message}`);
    }
    const canon = canonical(result);
    const known = this.resultAt.get(index);
    if (known === undefined) this.resultAt.set(index, canon);
    else if (known !== canon)
      this.w.fail(
        'result-divergence',
        `node ${n.id} applied index ${index} with result ${canon}; another node got ${known}`,
      );
    if (fact instanceof Uint8Array && fact.length > 0) this.noteClientFact(n, fact, index, result, canon);
    if (index % this.sampleEvery === 0) this.compareEncoded(n, index, snapshot(state), `applied ${index}`);
    return result;
  }

  /** A client sent these bytes as (client, sequence): the entry that carries them is that request. */
  registerFact(bytes: Uint8Array, client: string, seq: number): void {
    const key = bytesKey(bytes);
    let list = this.factsByKey.get(key);
    if (list === undefined) this.factsByKey.set(key, (list = []));
    if (!list.some((x) => sameBytes(x.bytes, bytes))) list.push({ bytes, client, seq });
  }

  /** Where and what `client#seq` was first applied with, if it was. */
  firstApplication(key: string): FirstApplied | undefined {
    return this.firstApplied.get(key);
  }

  /** A committed entry that carries a client request: a retry of a sequence answers the first result. */
  private noteClientFact(n: SimNode, bytes: Uint8Array, index: number, result: ApplyResult, canon: string): void {
    const list = this.factsByKey.get(bytesKey(bytes));
    const f = list?.find((x) => sameBytes(x.bytes, bytes));
    if (f === undefined) return;
    const key = `${f.client}#${f.seq}`;
    const first = this.firstApplied.get(key);
    if (first === undefined) {
      this.firstApplied.set(key, { index, result, canon });
      return;
    }
    if (index < first.index) {
      this.w.fail(
        'retry-result',
        `node ${n.id} applied ${key} at index ${index}, before its first application at ${first.index} elsewhere`,
      );
    } else if (index > first.index && canon !== first.canon) {
      this.w.fail(
        'retry-result',
        `node ${n.id}: the retry of ${key} at index ${index} answered ${canon}, its first application at index ${first.index} answered ${first.canon}`,
      );
    }
  }

  /** Encoded states at one index must be byte-identical on every node, whatever way they got there. */
  compareEncoded(n: SimNode, index: number, bytes: Uint8Array, what: string): void {
    this.w.stats.statesCompared++;
    const known = this.encodedAt.get(index);
    if (known === undefined) {
      this.encodedAt.set(index, { node: n.id, bytes, what });
      return;
    }
    if (sameBytes(known.bytes, bytes)) return;
    this.w.fail(
      'replica-divergence',
      `at index ${index} node ${n.id} (${what}) and node ${known.node} (${known.what}) hold different states: ${explainDifference(known.bytes, bytes)}`,
    );
  }

  /** Election safety: node `id` leads `term`, and no other node led it. */
  oneLeaderPerTerm(id: number, term: number): void {
    const prev = this.leaderOfTerm.get(term);
    if (prev !== undefined && prev !== id)
      this.w.fail('election-safety', `nodes ${prev} and ${id} both lead term ${term}`);
    this.leaderOfTerm.set(term, id);
  }
}
