// The leader's worker endpoint against a scripted worker, on a node whose Raft is a stand-in
// (propose = apply at the next index, then the hub hears of it): a start the worker cannot take
// must end its job with a reason, whatever the worker does with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { ControllerNode } from './controller-node.js';
import { createLogger } from './log.js';
import { WorkerHub } from './worker-hub.js';
import {
  parseControllerFrame,
  workerToken,
  WORKER_HEADER_AUTH,
  WORKER_HEADER_HOST,
  type ControllerToWorkerFrame,
  type WorkerToControllerFrame,
} from './worker-protocol.js';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody } from '../statemachine/facts.js';
import { liveMerge, submitFactFor } from '../statemachine/jobs.js';
import { emptyState, type ControllerState, type Job } from '../statemachine/state.js';
import { jobSpec, testClusterFiles } from '../testing/test-cluster.js';

const SECRET = new TextEncoder().encode('worker-hub-test-secret-0123456789abcdef');

class FakeNode {
  readonly id = 1;
  readonly state: ControllerState = emptyState();
  hub: WorkerHub | null = null;
  private index = 0;
  isLeader(): boolean {
    return true;
  }
  leaderId(): number {
    return 1;
  }
  addressOf(): string {
    return '127.0.0.1:1';
  }
  async propose(bytes: Uint8Array): Promise<ApplyResult> {
    const index = ++this.index;
    const result = apply(this.state, bytes, index);
    this.hub?.onApplied([{ index, result }]);
    return result;
  }
  fact(body: FactBody): Promise<ApplyResult> {
    return this.propose(encodeFact({ clientId: null, sequence: 0, timeMs: Date.now(), body }));
  }
}

/** A worker that speaks the protocol by hand: it answers what the test tells it to. */
class ScriptedWorker {
  readonly got: ControllerToWorkerFrame[] = [];
  readonly ws: WebSocket;
  readonly open: Promise<void>;
  constructor(url: string, host: string, onFrame: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void) {
    this.ws = new WebSocket(url, {
      headers: { [WORKER_HEADER_HOST]: host, [WORKER_HEADER_AUTH]: workerToken(SECRET, host) },
    });
    this.open = new Promise((r) => this.ws.once('open', () => r()));
    this.ws.on('message', (d) => {
      const f = parseControllerFrame(d.toString());
      this.got.push(f);
      onFrame(this, f);
    });
  }
  send(f: WorkerToControllerFrame): void {
    this.ws.send(JSON.stringify(f));
  }
}

async function waitFor(what: string, cond: () => boolean, timeout_ms = 5_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A node with one job dispatched to n1 (RUN, not started), a hub serving /worker on a free port. */
async function setup(): Promise<{ node: FakeNode; hub: WorkerHub; server: Server; url: string; job: Job }> {
  const node = new FakeNode();
  await node.fact({ kind: 'config', files: testClusterFiles(), user: null });
  const config = node.state.config!.cluster;
  const sub = await node.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec({ command: ['true'] })));
  assert.equal(sub.kind, 'submitted');
  const job = node.state.jobs.get(1)!;
  const m = liveMerge(config, job.profile, job.spec);
  assert.ok(m.ok);
  const hosts = [{ host: 'n1', tasks: 1 }];
  const hub = new WorkerHub(node as unknown as ControllerNode, {
    secret: SECRET,
    log: createLogger({ component: 'hub' }, { sink: { write: () => undefined } }),
    hostLost_ms: 0,
  });
  node.hub = hub;
  const d = await node.fact({
    kind: 'dispatch',
    jobId: 1,
    runNumber: 1,
    placement: hosts,
    record: buildDispatchRecord(m.effective, m.hash, hosts),
    schedulerHash: m.hash,
  });
  assert.equal(d.kind, 'dispatched');
  const server = createServer();
  server.on('upgrade', (req, socket, head) => hub.handleUpgrade(req, socket, head));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { node, hub, server, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/worker`, job };
}

function register(w: ScriptedWorker, host: string): void {
  w.send({
    type: 'register',
    host,
    resources: { slots: 8, mem_bytes: 1024 ** 3, booleans: ['ib'], numerics: {} },
    version: 'test',
    running: [],
  });
}

async function teardown(s: { hub: WorkerHub; server: Server }, w: ScriptedWorker): Promise<void> {
  w.ws.terminate();
  s.hub.close();
  await new Promise((r) => s.server.close(r));
}

test('a start the hub itself finds invalid is never sent: the job ends with a launch error naming the field', async () => {
  const s = await setup();
  // A record from before the admission checked env names (or any bug that lets one through).
  s.job.record = { ...s.job.record!, env: [{ value: { name: 'MY-VAR', value: '1' }, origin: 'job' }] };
  const w = new ScriptedWorker(s.url, 'n1', () => undefined);
  try {
    await w.open;
    register(w, 'n1');
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(
      s.job.reason ?? '',
      /^launch failed: the controller cannot send the start of job 1 run 1 to host n1: jobEnv\.0\.name: environment variable name "MY-VAR" is not valid/,
    );
    assert.equal(w.got.filter((f) => f.type === 'start').length, 0);
  } finally {
    await teardown(s, w);
  }
});

test('a kill ends a job whose start its worker refused, even when no launch-error status follows', async () => {
  const s = await setup();
  // The worker refuses the start (its queue of statuses is full, say) and sends no status for it.
  const w = new ScriptedWorker(s.url, 'n1', (me, f) => {
    if (f.type === 'start')
      me.send({
        type: 'ack',
        ref: 'start',
        jobId: f.startInfo.jobId,
        run: f.startInfo.run,
        outcome: 'refused',
        reason: 'host n1 holds 65536 statuses no leader has acknowledged',
      });
    if (f.type === 'kill') me.send({ type: 'ack', ref: 'kill', jobId: f.jobId, run: f.run, outcome: 'unknown' });
  });
  try {
    await w.open;
    register(w, 'n1');
    await waitFor('the start', () => w.got.some((f) => f.type === 'start'));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.job.state, 'RUN');
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(s.job.reason ?? '', /killed by alice/);
    assert.match(s.job.reason ?? '', /host n1 refused its start: host n1 holds 65536 statuses/);
  } finally {
    await teardown(s, w);
  }
});

test('a kill ends a job its head host says it does not run and never started', async () => {
  const s = await setup();
  // An older worker that dropped the start frame without a word; it answers a kill `unknown`.
  const w = new ScriptedWorker(s.url, 'n1', (me, f) => {
    if (f.type === 'kill') me.send({ type: 'ack', ref: 'kill', jobId: f.jobId, run: f.run, outcome: 'unknown' });
  });
  try {
    await w.open;
    register(w, 'n1');
    await waitFor('the start', () => w.got.some((f) => f.type === 'start'));
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    await waitFor('the job to end', () => s.job.state !== 'RUN');
    assert.equal(s.job.state, 'EXIT');
    assert.match(s.job.reason ?? '', /killed by alice before it started: host n1 does not run job 1 run 1/);
  } finally {
    await teardown(s, w);
  }
});
