// Replicas never diverge (issue 17): the usage a controller holds after applying a log must be the
// usage a controller restored from a snapshot of it rebuilds, to the last bit, or the same committed
// DispatchFact is applied on one and declined on the other. Fractional rusage is legal, so the
// accounting is in integer milli-units (amount.ts), never floating-point sums.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { apply } from './apply.js';
import { encodeFact } from './facts-codec.js';
import type { ApplyResult, FactBody } from './facts.js';
import { checkStateInvariants } from './invariants.js';
import { submitFactFor } from './jobs.js';
import { restore, snapshot } from './snapshot.js';
import { emptyState, type ControllerState } from './state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';
import { freeClusterResource, freeHostResource } from './usage.js';
import { dispatchFact, finishedFact } from '../testing/state-facts.js';

const T0 = 1_764_547_200_000;

/** A log written once and applied, entry by entry, to every replica given. */
class Log {
  constructor(
    readonly replicas: ControllerState[],
    private index = 0,
    private timeMs = T0,
  ) {}

  /** Appends one fact and applies it to every replica; returns each replica's result. */
  append(body: FactBody): ApplyResult[] {
    this.timeMs += 1000;
    const bytes = encodeFact({ clientId: null, sequence: 0, timeMs: this.timeMs, body });
    this.index++;
    return this.replicas.map((s) => apply(s, bytes, this.index));
  }
}

function submit(log: Log, mem: string): number {
  const leader = log.replicas[0]!;
  const [r] = log.append(
    submitFactFor(leader.config!.cluster, 'alice', 'normal', null, jobSpec({ resreq: `rusage[mem=${mem}]` })),
  );
  assert.equal(r!.kind, 'submitted', JSON.stringify(r));
  return (r as { jobId: number }).jobId;
}

/** The DispatchFact the leader's scheduler would propose: job on n1, one task. */
const dispatchBody = (leader: ControllerState, jobId: number): FactBody =>
  dispatchFact(leader, jobId, [{ host: 'n1', tasks: 1 }]);

test('fractional rusage: the live controller and one restored from a snapshot decide the same committed dispatch alike', () => {
  const live = emptyState();
  const log = new Log([live]);
  assert.equal(
    log.append({ kind: 'config', files: testClusterFiles({ hostMem: [2, 0, 0] }), user: null })[0]!.kind,
    'configApplied',
  );
  const ids = ['0.5', '0.3', '0.4', '0.6'].map((mem) => submit(log, mem));
  for (const id of ids) assert.equal(log.append(dispatchBody(live, id))[0]!.kind, 'dispatched');
  // The 0.4 job finishes: 0.5 + 0.3 + 0.6 = 1.4 of mem 2 stay held.
  const finished = log.append(finishedFact(ids[2]!));
  assert.equal(finished[0]!.kind, 'statusApplied');

  const restored = restore(snapshot(live));

  // From here on both replicas apply the same committed entries.
  const both = new Log([live, restored], live.appliedIndex, live.logTimeMs);
  const last = submit(both, '0.6');
  const results = both.append(dispatchBody(live, last));
  assert.deepEqual(results[1], results[0], 'the same DispatchFact gives the same result on both');
  assert.equal(results[0]!.kind, 'dispatched', JSON.stringify(results[0]));
  assert.equal(live.jobs.get(last)!.state, 'RUN');
  assert.equal(restored.jobs.get(last)!.state, 'RUN');
  assert.deepEqual(restored.usage, live.usage, 'the restored usage is the live usage, exactly');
  assert.equal(freeHostResource(live.usage, live.config!.cluster, 'n1', 'mem'), 0);
  checkStateInvariants(live);
  checkStateInvariants(restored);
});

test('a cluster pool of fractional amounts is counted exactly: ten jobs of 0.1 fill a pool of 1', () => {
  const files = testClusterFiles({ slots: 16, licenseTotal: 1 });
  const s = emptyState();
  const log = new Log([s]);
  assert.equal(log.append({ kind: 'config', files, user: null })[0]!.kind, 'configApplied');
  const cluster = (): NonNullable<ControllerState['config']>['cluster'] => s.config!.cluster;
  const ids: number[] = [];
  for (let k = 0; k < 11; k++) {
    const [r] = log.append(
      submitFactFor(cluster(), 'alice', 'normal', null, jobSpec({ resreq: 'rusage[license_foam=0.1]' })),
    );
    ids.push((r as { jobId: number }).jobId);
  }
  const kinds = ids.map((id) => log.append(dispatchBody(s, id))[0]!.kind);
  assert.deepEqual(kinds, [...Array(10).fill('dispatched'), 'declined']);
  assert.equal(freeClusterResource(s.usage, cluster(), 'license_foam'), 0);
  // Nine finish: one tenth stays held, exactly.
  for (const id of ids.slice(0, 9)) log.append(finishedFact(id));
  assert.equal(freeClusterResource(s.usage, cluster(), 'license_foam'), 0.9);
  checkStateInvariants(s);
});
