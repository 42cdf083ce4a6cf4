// Property: for any small cluster, any running load and any pending jobs, every decision of a pass,
// applied in order through the real state machine, is `dispatched` (never declined: it passes
// usage.ts's placementProblem), lands only on available hosts, honours the job's select, span and
// same, and every pending job the pass considered is either decided or has a reason.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import fc from 'fast-check';

import { schedulePass } from './pass.js';
import { TestCluster } from '../testing/scheduler-cluster.js';

const RESREQS = [
  null,
  'rusage[mem=8000]',
  'rusage[mem=3000] span[ptile=2]',
  'span[ptile=3]',
  'span[hosts=1]',
  'span[hosts=2]',
  'span[ptile=2:hosts=3]',
  'same[rack]',
  'same[rack] rusage[mem=5000]',
  'select[mem>8000]',
  'select[rack==r1 || ib] order[-mem]',
  'order[hname]',
  'order[-slots:mem]',
  'rusage[gpu=1] span[hosts=1]',
  'select[!ib] rusage[license_foam=1]',
] as const;

interface HostArb {
  slots: number;
  ib: boolean;
  memMb: number | null;
  gpu: number | null;
  rack: string | null;
}

interface JobArb {
  app: 'serial' | 'openfoam';
  tasks: number;
  resreq: (typeof RESREQS)[number];
  queue: 'normal' | 'night' | 'urgent';
}

const hostArb: fc.Arbitrary<HostArb> = fc.record({
  slots: fc.integer({ min: 1, max: 16 }),
  ib: fc.boolean(),
  memMb: fc.option(fc.constantFrom(4000, 16000, 32000), { nil: null }),
  gpu: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
  rack: fc.option(fc.constantFrom('r1', 'r2'), { nil: null }),
});

const jobArb: fc.Arbitrary<JobArb> = fc.record({
  app: fc.constantFrom('serial' as const, 'openfoam' as const),
  tasks: fc.integer({ min: 1, max: 10 }),
  resreq: fc.constantFrom(...RESREQS),
  queue: fc.constantFrom('normal' as const, 'night' as const, 'urgent' as const),
});

function hostsYaml(hosts: readonly HostArb[]): string {
  return hosts
    .map((h, i) => {
      const numeric: string[] = [];
      if (h.memMb !== null) numeric.push(`mem: ${h.memMb}`);
      if (h.gpu !== null) numeric.push(`gpu: ${h.gpu}`);
      return `  - { name: h${i}, slots: ${h.slots}, mem: 32G, resources: [${h.ib ? 'ib' : ''}], numeric: { ${numeric.join(', ')} }${h.rack !== null ? `, strings: { rack: ${h.rack} }` : ''} }\n`;
    })
    .join('');
}

const resources = (licenses: number): string => `  - { name: ib, type: boolean }
  - { name: x86_64, type: boolean }
  - { name: mem, type: numeric }
  - { name: gpu, type: numeric }
  - { name: rack, type: string }
  - { name: license_foam, type: numeric, scope: cluster, total: ${licenses} }
`;

test('every decision of a pass is dispatched by apply, in order, and honours select, span and same', () => {
  let decisions = 0;
  let pendingWithReason = 0;
  fc.assert(
    fc.property(
      fc.array(hostArb, { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 0, max: 8 }),
      fc.array(jobArb, { minLength: 0, maxLength: 10 }),
      fc.array(jobArb, { minLength: 1, maxLength: 14 }),
      // Each host's worker is up three times in four.
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
      fc.integer({ min: 1, max: 20 }),
      (hosts, licenses, running, pending, up, maxDispatches) => {
        const c = new TestCluster({ hosts: hostsYaml(hosts), resources: resources(licenses) });
        const available = new Set(hosts.map((_, i) => `h${i}`).filter((_, i) => up[i]! > 0));
        // A running load first (everything up), then the pending jobs against the chosen hosts.
        for (const j of running) c.submit(j.app, { tasks: j.tasks, resreq: j.resreq }, j.queue);
        for (const d of schedulePass(c.state, c.hostNames(), { maxDispatches: 100, exclude: new Set() }).decisions) {
          assert.equal(c.dispatch(d).kind, 'dispatched');
        }
        pending.forEach((j) => c.submit(j.app, { tasks: j.tasks, resreq: j.resreq }, j.queue));
        const r = schedulePass(c.state, available, { maxDispatches, exclude: new Set() });
        assert.ok(r.decisions.length <= maxDispatches);
        for (const d of r.decisions) {
          const job = c.state.jobs.get(d.jobId)!;
          decisions++;
          const res = c.dispatch(d);
          assert.equal(res.kind, 'dispatched', JSON.stringify({ res, placement: d.placement }));
          assert.equal(job.state, 'RUN');
          let total = 0;
          const racks = new Set<string | null>();
          for (const ht of d.placement) {
            assert.ok(available.has(ht.host), `${ht.host} is not available`);
            const h = hosts[Number(ht.host.slice(1))]!;
            total += ht.tasks;
            racks.add(h.rack);
            if (job.profile === 'openfoam') assert.ok(h.ib, `openfoam job on ${ht.host} without ib`);
            const rr = job.spec.resreq ?? '';
            if (rr.includes('select[!ib]')) assert.ok(!h.ib);
            if (rr.includes('select[mem>8000]')) assert.ok(h.memMb !== null && h.memMb > 8000);
          }
          assert.equal(total, d.record.tasks);
          const span = d.record.resreq.span?.value;
          if (span?.hosts !== undefined) assert.ok(d.placement.length <= span.hosts);
          if (span?.ptile !== undefined) {
            d.placement.forEach((ht, k) => {
              if (k < d.placement.length - 1) assert.equal(ht.tasks, span.ptile);
              else assert.ok(ht.tasks <= span.ptile!);
            });
          }
          if (d.record.resreq.same !== null) {
            assert.equal(racks.size, 1);
            assert.ok(!racks.has(null));
          }
        }
        // Every considered job is decided, pending with a reason, or deferred by the batch bound.
        let undecided = 0;
        for (const id of c.state.jobs.keys()) {
          const job = c.state.jobs.get(id)!;
          if (job.state !== 'PEND') continue;
          if (r.pending.has(id)) {
            assert.ok(r.pending.get(id)!.length > 0);
            if (process.env.SCHED_PROP_DEBUG) console.log(r.pending.get(id));
            pendingWithReason++;
          } else undecided++;
        }
        assert.equal(undecided, r.deferred);
      },
    ),
    { numRuns: 300, seed: 0x5c4ed },
  );
  // The property is not vacuous: the runs both placed and refused many jobs.
  assert.ok(decisions > 400, `only ${decisions} decisions`);
  assert.ok(pendingWithReason > 300, `only ${pendingWithReason} pending`);
});
