// A host's capacity is hosts.yaml's reconciled with what its worker registered (host-capacity.ts):
// the smaller slots, memory and numeric amounts; booleans and strings only where both agree; every
// disagreement a reason naming the host. The registration is a replicated fact: apply refuses a
// host hosts.yaml does not list, and a dispatch beyond the registered capacity is declined.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { schedulePass } from '../scheduler/pass.js';
import { TestCluster } from '../testing/scheduler-cluster.js';
import { decodeFact, encodeFact } from './facts-codec.js';
import type { Fact } from './facts.js';
import { hostCapacity, mismatchedHostCount, mismatchedHosts, type RegisteredHost } from './host-capacity.js';
import { restore, snapshot } from './snapshot.js';

const GIB = 2 ** 30;
const HOSTS = `  - { name: node01, slots: 64, mem: 256G, resources: [ib, x86_64], numeric: { mem: 262144, gpu: 4 }, strings: { rack: r1 } }
  - { name: node02, slots: 64, mem: 256G, resources: [ib, x86_64], numeric: { mem: 262144 } }
`;

function reg(host: string, o: Partial<RegisteredHost> = {}): RegisteredHost {
  return {
    host,
    slots: 64,
    memBytes: 256 * GIB,
    booleans: null,
    numerics: [],
    strings: null,
    timeMs: 1,
    ...o,
  };
}

function cluster(): TestCluster {
  return new TestCluster({ hosts: HOSTS });
}

test('a worker registering fewer slots than hosts.yaml allows gets its own count, with the reason', () => {
  const c = cluster();
  const h = c.state.config!.cluster.hosts.get('node01')!;
  const cap = hostCapacity(h, reg('node01', { slots: 8 }));
  assert.equal(cap.host.slots, 8);
  assert.deepEqual(cap.mismatches, ['node01: registers 8 slots, hosts.yaml allows 64: using 8']);
  // More than hosts.yaml allows: hosts.yaml's count, and the disagreement is still shown.
  assert.deepEqual(hostCapacity(h, reg('node01', { slots: 128 })).mismatches, [
    'node01: registers 128 slots, hosts.yaml allows 64: using 64',
  ]);
  assert.equal(hostCapacity(h, reg('node01', { slots: 128 })).host.slots, 64);
});

test('memory and numeric resources: the smaller wins; numeric mem is capped at the registered memory', () => {
  const h = cluster().state.config!.cluster.hosts.get('node01')!;
  const cap = hostCapacity(h, reg('node01', { memBytes: 8 * GIB, numerics: [{ name: 'gpu', value: 2 }] }));
  assert.equal(cap.host.mem_bytes, 8 * GIB);
  assert.deepEqual(cap.host.numerics, [
    { name: 'gpu', value: 2 },
    { name: 'mem', value: 8192 },
  ]);
  assert.deepEqual(cap.mismatches, [
    'node01: registers 8G memory, hosts.yaml allows 256G: using 8G',
    'node01: registers gpu=2, hosts.yaml allows gpu=4: using 2',
    "node01: registers 8G memory, hosts.yaml's numeric mem is 262144 MB: using 8192",
  ]);
  // A numeric the worker does not register keeps hosts.yaml's value; one hosts.yaml does not declare is not used.
  const other = hostCapacity(h, reg('node01', { numerics: [{ name: 'fpga', value: 1 }] }));
  assert.deepEqual(other.host.numerics, h.numerics);
  assert.deepEqual(other.mismatches, ['node01: registers fpga=1, hosts.yaml declares no fpga: using none']);
});

test('booleans and strings: the host offers only what both sides agree on; a worker stating none leaves hosts.yaml', () => {
  const h = cluster().state.config!.cluster.hosts.get('node01')!;
  assert.deepEqual(hostCapacity(h, reg('node01')), { host: { ...h }, mismatches: [] });
  const cap = hostCapacity(
    h,
    reg('node01', {
      booleans: ['x86_64'],
      strings: [
        { name: 'rack', value: 'r2' },
        { name: 'model', value: 'A100' },
      ],
    }),
  );
  assert.deepEqual(cap.host.booleans, ['x86_64']);
  assert.deepEqual(cap.host.strings, []);
  assert.deepEqual(cap.mismatches, [
    'node01: registers booleans [x86_64], hosts.yaml has [ib, x86_64]: using [x86_64]',
    'node01: registers rack=r2, hosts.yaml has rack=r1: using none',
    'node01: registers model=A100, hosts.yaml has no model: using none',
  ]);
  const same = hostCapacity(h, reg('node01', { booleans: ['ib', 'x86_64'], strings: [{ name: 'rack', value: 'r1' }] }));
  assert.deepEqual(same.mismatches, []);
});

test('apply: a registration is refused for a host hosts.yaml does not list, or with values it cannot account', () => {
  const c = cluster();
  const r = c.fact({ kind: 'host', registration: reg('node99') });
  assert.equal(r.kind, 'rejected');
  assert.match((r as { message: string }).message, /host node99 is not in hosts\.yaml/);
  const bad = c.fact({ kind: 'host', registration: reg('node01', { numerics: [{ name: 'gpu', value: 0.0005 }] }) });
  assert.equal(bad.kind, 'rejected');
  assert.match((bad as { message: string }).message, /node01 registers numeric gpu=0\.0005: .*thousandths/);
  assert.equal(c.state.hosts.size, 0);
  assert.deepEqual(c.fact({ kind: 'host', registration: reg('node01', { slots: 2 }) }), { kind: 'hostRegistered' });
  assert.equal(c.state.hosts.get('node01')!.slots, 2);
  assert.deepEqual(mismatchedHosts(c.state.config!.cluster, c.state.hosts), [
    { host: 'node01', reasons: ['node01: registers 2 slots, hosts.yaml allows 64: using 2'] },
  ]);
  assert.equal(mismatchedHostCount(c.state.config!.cluster, c.state.hosts), 1, 'the count /metrics shows');
  c.fact({ kind: 'host', registration: reg('node01', { slots: 64 }) });
  assert.equal(mismatchedHostCount(c.state.config!.cluster, c.state.hosts), 0);
});

test('the scheduler places at most the registered slots on a host, and apply declines a dispatch beyond them', () => {
  const c = cluster();
  c.fact({ kind: 'host', registration: reg('node01', { slots: 2 }) });
  for (let i = 0; i < 5; i++) c.submit('serial');
  const pass = schedulePass(c.state, new Set(['node01']), { maxDispatches: 100, exclude: new Set() });
  assert.equal(pass.decisions.length, 2);
  for (const d of pass.decisions) assert.equal(c.dispatch(d).kind, 'dispatched');
  assert.equal(c.state.usage.slots.get('node01'), 2);
  assert.match(pass.pending.get(3) ?? '', /slot/);
  // A decision made on hosts.yaml's 64 slots (a stale view) is declined by apply.
  const stale = schedulePass({ ...c.state, hosts: new Map() }, new Set(['node01']), {
    maxDispatches: 1,
    exclude: new Set(),
  }).decisions[0]!;
  const r = c.dispatch(stale);
  assert.equal(r.kind, 'declined');
  assert.match((r as { message: string }).message, /host node01 has 0 free slots, the placement needs 1/);
});

test('registrations survive snapshot → restore, and the codec keeps a null list apart from an empty one', () => {
  const c = cluster();
  c.fact({ kind: 'host', registration: reg('node01', { slots: 2, booleans: [], strings: [] }) });
  c.fact({ kind: 'host', registration: reg('node02', { numerics: [{ name: 'mem', value: 1.5 }] }) });
  const restored = restore(snapshot(c.state));
  assert.deepStrictEqual([...restored.hosts.entries()], [...c.state.hosts.entries()]);
  assert.deepEqual(restored.hosts.get('node01')!.booleans, []);
  assert.equal(restored.hosts.get('node02')!.booleans, null);
  const f: Fact = { clientId: null, sequence: 0, timeMs: 5, body: { kind: 'host', registration: reg('node01') } };
  assert.deepStrictEqual(decodeFact(encodeFact(f)), f);
});
