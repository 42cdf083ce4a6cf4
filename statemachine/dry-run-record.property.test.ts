// Property (issue 22): for any job a client can send, either it is refused at submit (by the one
// converter of its values, or by admission), or the effective values the dry run shows are exactly
// those its dispatch record holds once the real scheduler pass has placed it and the dispatch went
// through the log's codec. (The dry run answers with admission's `effective`, daemon/api/views.ts.)
// A value the log would store truncated (a UInt32 task count or tasks limit) or the worker would not
// honour as given is refused, never shown as one value and run as another.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { admitSubmit } from './admission.js';
import { apply } from './apply.js';
import { encodeFact } from './facts-codec.js';
import type { FactBody } from './facts.js';
import { submitFactFor } from './jobs.js';
import { emptyState } from './state.js';
import { JobValueError, jobSpecOf, type JobValuesInput } from '../model/job-own-values.js';
import { schedulePass } from '../scheduler/pass.js';
import { clusterFiles } from '../testing/scheduler-cluster.js';

const APPS = `  - name: capped
    launch_type: mpich
    resreq: "select[x86_64] rusage[mem=100]"
    tasks: { min: 1, max: 8 }
    limits: { runtime: 4h, memory: 8G, cpu: 2h, tasks: 16 }
    env: { OMP_NUM_THREADS: "1" }
    pre_exec: /opt/pre.sh
    job_pre_post_exec: allow
  - name: onehost
    resreq: "span[hosts=1] order[-slots]"
    job_pre_post_exec: forbid
  - name: open
`;
const HOST_NAMES = ['h0', 'h1', 'h2', 'h3', 'h4', 'h5'];
const HOSTS = HOST_NAMES.map(
  (h, i) =>
    `  - { name: ${h}, slots: 64, mem: 64G, resources: [${i < 3 ? 'ib, ' : ''}x86_64], numeric: { mem: 100000, gpu: 64 }, strings: { rack: r1 } }\n`,
).join('');

const jobArb: fc.Arbitrary<{ app: string; input: JobValuesInput }> = fc.record({
  app: fc.constantFrom('capped', 'onehost', 'open'),
  input: fc.record(
    {
      tasks: fc.constantFrom(1, 2, 8, 9, 2 ** 32 + 1),
      resreq: fc.constantFrom(
        'select[ib]',
        'rusage[mem=100]',
        'rusage[mem=200]',
        'rusage[gpu=1]',
        'span[ptile=2]',
        'span[hosts=1]',
        'span[ptile=4294967297]',
        'same[rack] order[-slots]',
        'order[-slots]',
      ),
      env: fc.dictionary(fc.constantFrom('OMP_NUM_THREADS', 'CASE', 'XCE_X', 'B'), fc.constantFrom('1', '2', ''), {
        maxKeys: 2,
      }),
      limits: fc.record(
        {
          runtime: fc.constantFrom('0', '1', '59', '2h', '5h', '1000001h'),
          memory: fc.constantFrom('0', '1', '1500', '1K', '2048', '4G', '9G', '5P'),
          cpu: fc.constantFrom('0s', '30m', '3h'),
          tasks: fc.constantFrom(0, 1, 8, 16, 17, 2 ** 32 + 1),
        },
        { requiredKeys: [] },
      ),
      preExec: fc.constantFrom('', './prep.sh'),
    },
    { requiredKeys: [] },
  ),
});

test('for random jobs, the dry run shows exactly what the dispatched record holds, or the job is refused at submit', () => {
  let compared = 0;
  let refused = 0;
  fc.assert(
    fc.property(jobArb, ({ app, input }) => {
      const state = emptyState();
      let index = 0;
      let timeMs = 1_764_547_200_000;
      const fact = (body: FactBody) =>
        apply(state, encodeFact({ clientId: null, sequence: 0, timeMs: (timeMs += 1000), body }), ++index);
      assert.equal(
        fact({
          kind: 'config',
          files: clusterFiles({ apps: APPS, hosts: HOSTS, defaultApplication: 'open' }),
          user: null,
        }).kind,
        'configApplied',
      );
      const config = state.config!.cluster;
      let spec;
      try {
        spec = jobSpecOf({ ...input, command: ['/bin/true'] });
      } catch (e) {
        assert.ok(e instanceof JobValueError, String(e));
        refused++;
        return;
      }
      const request = submitFactFor(config, 'alice', 'normal', app, spec);
      const dry = admitSubmit(config, 'alice', request);
      const r = fact(request);
      if (!dry.ok) {
        // Refused by admission: apply refuses it in the same words.
        assert.deepEqual(r, { kind: 'rejected', code: dry.code, message: dry.message });
        refused++;
        return;
      }
      assert.equal(r.kind, 'submitted', JSON.stringify(r));
      const id = (r as { jobId: number }).jobId;
      const pass = schedulePass(state, new Set(HOST_NAMES), { maxDispatches: 10, exclude: new Set() });
      const d = pass.decisions.find((x) => x.jobId === id);
      assert.ok(d, `job ${id} placed: ${pass.pending.get(id)}`);
      const body: FactBody = {
        kind: 'dispatch',
        jobId: id,
        runNumber: d.runNumber,
        placement: d.placement,
        record: d.record,
        schedulerHash: d.schedulerHash,
      };
      assert.equal(fact(body).kind, 'dispatched');
      const record = state.jobs.get(id)!.record!;
      const { hosts: _hosts, profileHash, ...frozen } = record;
      // Compared as data (a value left out and one set to undefined are the same to a reader).
      assert.deepEqual(JSON.parse(JSON.stringify(frozen)), JSON.parse(JSON.stringify(dry.effective)));
      assert.equal(profileHash, dry.hash);
      compared++;
    }),
    { numRuns: 600, seed: 22 },
  );
  // Not vacuous: both branches were taken many times.
  assert.ok(compared > 40, `only ${compared} jobs compared`);
  assert.ok(refused > 40, `only ${refused} jobs refused`);
});
