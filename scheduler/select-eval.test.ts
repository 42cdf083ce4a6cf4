// select[...] against hosts: what each kind of name means, and the per-pass caches.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { SelectExpr } from '../model/profile-types.js';
import { parseSimpleResReq } from '../model/resreq.js';
import { ClusterPools, HostView } from './host-view.js';
import { schedulePass } from './pass.js';
import { SelectEvaluator } from './select-eval.js';
import { TestCluster } from '../testing/scheduler-cluster.js';

const HOSTS = `  - { name: a1, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 64000, gpu: 0 }, strings: { rack: r1 } }
  - { name: a2, slots: 16, mem: 128G, resources: [ib, x86_64], numeric: { mem: 128000 }, strings: { rack: r1 } }
  - { name: g1, slots: 32, mem: 512G, resources: [x86_64], numeric: { mem: 512000, gpu: 4 }, strings: { rack: r2 } }
  - { name: z9, slots: 4, mem: 8G }
`;

function setup(available?: string[]): { c: TestCluster; sel: SelectEvaluator; view: HostView } {
  const c = new TestCluster({ hosts: HOSTS });
  const config = c.state.config!.cluster;
  const view = new HostView(config, c.state.usage, new Set(available ?? config.hosts.keys()));
  const pools = new ClusterPools(config, c.state.usage);
  return { c, sel: new SelectEvaluator(view, pools), view };
}

function terms(select: string): readonly SelectExpr[] {
  return parseSimpleResReq(`select[${select}]`).select;
}

function hosts(sel: SelectEvaluator, view: HostView, select: string): string[] {
  return [...sel.hostsFor(terms(select)).hosts].map((i) => view.names[i] as string);
}

test('a boolean resource selects the hosts that have it', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'ib'), ['a1', 'a2']);
  assert.deepEqual(hosts(sel, view, '!ib'), ['g1', 'z9']);
  assert.deepEqual(hosts(sel, view, 'ib && x86_64'), ['a1', 'a2']);
});

test('a numeric alone means greater than zero; comparisons use the resource unit (mem in MB)', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'gpu'), ['g1']); // a1 declares gpu: 0
  assert.deepEqual(hosts(sel, view, 'gpu>0'), ['g1']);
  assert.deepEqual(hosts(sel, view, 'mem>64000'), ['a2', 'g1']);
  assert.deepEqual(hosts(sel, view, 'mem>=64000'), ['a1', 'a2', 'g1']);
  assert.deepEqual(hosts(sel, view, 'mem==64000'), ['a1']);
});

test('a comparison on a value the host does not have is false, and its negation true', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'gpu==0'), ['a1']); // z9 and a2 have no gpu value
  assert.deepEqual(hosts(sel, view, 'gpu!=4'), ['a1']);
  assert.deepEqual(hosts(sel, view, '!(gpu==4)'), ['a1', 'a2', 'z9']);
  assert.deepEqual(hosts(sel, view, 'mem<100000'), ['a1']); // z9 declares no numeric mem
  assert.deepEqual(hosts(sel, view, 'rack!=r1'), ['g1']);
  assert.deepEqual(hosts(sel, view, 'nosuch'), []);
  assert.deepEqual(hosts(sel, view, 'nosuch>1'), []);
});

test('strings compare as text; hname is the host name', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'rack==r2'), ['g1']);
  assert.deepEqual(hosts(sel, view, 'hname==z9 || rack==r2'), ['g1', 'z9']);
  assert.deepEqual(hosts(sel, view, 'hname>a2'), ['g1', 'z9']);
});

test('built-ins: slots (free at the start of the pass), ncpus (configured), maxmem (configured MB)', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'ncpus>=16'), ['a2', 'g1']);
  assert.deepEqual(hosts(sel, view, 'maxmem>100000'), ['a2', 'g1']); // 128G = 131072 MB
  assert.deepEqual(hosts(sel, view, 'maxmem==8192'), ['z9']);
  assert.deepEqual(hosts(sel, view, 'slots>8'), ['a2', 'g1']);
});

test('and / or / not with parentheses', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, '(ib && mem>100000) || gpu>2'), ['a2', 'g1']);
  assert.deepEqual(hosts(sel, view, '!(ib || gpu>0)'), ['z9']);
  assert.deepEqual(hosts(sel, view, 'x86_64 && !ib && rack==r2 && mem>=512000'), ['g1']);
});

test('select sees what running jobs leave free: mem and slots minus their reservations', () => {
  const c = new TestCluster({ hosts: HOSTS });
  c.submit('serial', { tasks: 8, resreq: 'select[hname==a2] rusage[mem=10000]' });
  const r = schedulePass(c.state, c.hostNames(), { maxDispatches: 10, exclude: new Set() });
  assert.equal(c.dispatch(r.decisions[0]!).kind, 'dispatched');
  const config = c.state.config!.cluster;
  const view = new HostView(config, c.state.usage, c.hostNames());
  const sel = new SelectEvaluator(view, new ClusterPools(config, c.state.usage));
  assert.deepEqual(hosts(sel, view, 'mem>64000'), ['g1']); // a2: 128000 - 80000 = 48000 MB free
  assert.deepEqual(hosts(sel, view, 'slots>=8'), ['a1', 'a2', 'g1']);
  assert.deepEqual(hosts(sel, view, 'slots>8'), ['g1']);
});

test('a cluster pool in select reads its free amount', () => {
  const { sel, view } = setup();
  assert.deepEqual(hosts(sel, view, 'license_foam>3'), ['a1', 'a2', 'g1', 'z9']);
  assert.deepEqual(hosts(sel, view, 'license_foam>4'), []);
});

test('only available hosts are selected, and each distinct select is evaluated once per pass', () => {
  const { sel, view } = setup(['a2', 'g1']);
  assert.deepEqual(hosts(sel, view, 'x86_64'), ['a2', 'g1']);
  const first = sel.hostsFor(terms('ib && mem>1000'));
  assert.equal(sel.hostsFor(terms('ib && mem>1000')), first); // the same object: cached by text
  assert.equal(sel.predicate(terms('ib')[0]!), sel.predicate(terms('ib')[0]!));
  assert.deepEqual(sel.hostsFor([]).hosts.length, 2);
});
