// The leader's worker endpoint against scripted workers (issue 21): only a host of the replicated
// hosts.yaml may register, and a status or ack is taken only from the head host of the job's
// current run. The node's Raft is a stand-in (propose = apply at the next index, then the hub hears
// of it), so a proposal is applied by the time `propose` returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { ControllerNode } from './controller-node.js';
import { createLogger } from './log.js';
import { hostNotConfiguredReason, WorkerHub } from './worker-hub.js';
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

const SECRET = new TextEncoder().encode('worker-hub-hosts-test-secret-0123456789');

class FakeNode {
  readonly id = 1;
  readonly state: ControllerState = emptyState();
  hub: WorkerHub | null = null;
  /** Facts the hub proposed. */
  proposals = 0;
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
    this.proposals++;
    return this.commit(bytes);
  }
  /** A fact proposed by someone else (the API, the scheduler). */
  async fact(body: FactBody): Promise<ApplyResult> {
    return this.commit(encodeFact({ clientId: null, sequence: 0, timeMs: Date.now(), body }));
  }
  private commit(bytes: Uint8Array): ApplyResult {
    const index = ++this.index;
    const result = apply(this.state, bytes, index);
    this.hub?.onApplied([{ index, result }]);
    return result;
  }
}

/** A worker that speaks the protocol by hand; it records what it gets and how its connection closed. */
class ScriptedWorker {
  readonly got: ControllerToWorkerFrame[] = [];
  readonly ws: WebSocket;
  readonly open: Promise<void>;
  closed: { code: number; reason: string } | null = null;
  constructor(
    url: string,
    host: string,
    onFrame: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void = () => undefined,
  ) {
    this.ws = new WebSocket(url, {
      headers: { [WORKER_HEADER_HOST]: host, [WORKER_HEADER_AUTH]: workerToken(SECRET, host) },
    });
    this.open = new Promise((r) => this.ws.once('open', () => r()));
    this.ws.on('message', (d) => {
      const f = parseControllerFrame(d.toString());
      this.got.push(f);
      onFrame(this, f);
    });
    this.ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
    });
  }
  send(f: WorkerToControllerFrame): void {
    this.ws.send(JSON.stringify(f));
  }
  register(host: string): void {
    this.send({
      type: 'register',
      host,
      resources: { slots: 8, mem_bytes: 1024 ** 3, booleans: ['ib'], numerics: {} },
      version: 'test',
      running: [],
    });
  }
}

async function waitFor(what: string, cond: () => boolean, timeout_ms = 5_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Setup {
  node: FakeNode;
  hub: WorkerHub;
  server: Server;
  url: string;
  job: Job;
  /** What the hub logged, one parsed JSON line each. */
  logs: Array<Record<string, unknown>>;
  workers: ScriptedWorker[];
}

/** A node with job 1 dispatched to n1 (RUN, not started), a hub serving /worker on a free port. */
async function setup(): Promise<Setup> {
  const node = new FakeNode();
  await node.fact({ kind: 'config', files: testClusterFiles(), user: null });
  const config = node.state.config!.cluster;
  assert.equal(
    (await node.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec({ command: ['sleep', '60'] })))).kind,
    'submitted',
  );
  const job = node.state.jobs.get(1)!;
  const m = liveMerge(config, job.profile, job.spec);
  assert.ok(m.ok);
  const logs: Array<Record<string, unknown>> = [];
  const log = createLogger(
    { component: 'hub' },
    { format: 'json', sink: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } },
  );
  const hub = new WorkerHub(node as unknown as ControllerNode, { secret: SECRET, log, hostLost_ms: 0 });
  node.hub = hub;
  const hosts = [{ host: 'n1', tasks: 1 }];
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
  return {
    node,
    hub,
    server,
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/worker`,
    job,
    logs,
    workers: [],
  };
}

function worker(
  s: Setup,
  host: string,
  onFrame?: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void,
): ScriptedWorker {
  const w = new ScriptedWorker(s.url, host, onFrame);
  s.workers.push(w);
  return w;
}

async function teardown(s: Setup): Promise<void> {
  for (const w of s.workers) w.ws.terminate();
  s.hub.close();
  await new Promise((r) => s.server.close(r));
}

test('a worker for a host hosts.yaml does not list is refused at registration, with the reason, and logged', async () => {
  const s = await setup();
  try {
    const w = worker(s, 'node99');
    await w.open;
    w.register('node99');
    await waitFor('the connection to close', () => w.closed !== null);
    const reason = 'host node99 is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd';
    assert.equal(hostNotConfiguredReason('node99'), reason);
    assert.deepEqual(w.got, [{ type: 'refused', reason }]);
    assert.equal(w.closed!.code, 1008);
    assert.equal(w.closed!.reason, reason);
    assert.equal(s.hub.refusedRegistrations, 1);
    assert.equal(s.hub.availableHosts().has('node99'), false);
    const line = s.logs.find((l) => l['msg'] === 'refused a worker registration');
    assert.ok(line !== undefined, JSON.stringify(s.logs));
    assert.equal(line['host'], 'node99');
    assert.equal(line['reason'], reason);
    // A host that hosts.yaml lists registers as before.
    const ok = worker(s, 'n2');
    await ok.open;
    ok.register('n2');
    await waitFor('n2 to be registered', () => ok.got.some((f) => f.type === 'registered'));
    assert.equal(s.hub.availableHosts().has('n2'), true);
  } finally {
    await teardown(s);
  }
});

test('a status from a host the job does not run on is dropped, logged once with both hosts, counted, never proposed', async () => {
  const s = await setup();
  try {
    const rogue = worker(s, 'n2');
    await rogue.open;
    rogue.register('n2');
    await waitFor('n2 to be registered', () => rogue.got.some((f) => f.type === 'registered'));
    const finished: WorkerToControllerFrame = {
      type: 'status',
      host: 'n2',
      jobId: 1,
      run: 1,
      statusId: 'n2/1.1/finished',
      kind: 'finished',
      exitCode: 0,
      signal: null,
      time_ms: Date.now(),
    };
    rogue.send(finished);
    rogue.send(finished);
    await waitFor('both statuses to be dropped', () => s.hub.foreignStatuses === 2);
    assert.equal(s.job.state, 'RUN');
    assert.equal(s.job.started, false);
    assert.equal(s.node.proposals, 0, 'nothing proposed');
    assert.equal(rogue.got.filter((f) => f.type === 'status-ack').length, 0, 'never acked');
    const lines = s.logs.filter((l) => l['msg'] === 'dropped a status from a host that does not run the job');
    assert.equal(lines.length, 1, 'logged once');
    assert.equal(lines[0]!['host'], 'n2');
    assert.equal(lines[0]!['headHost'], 'n1');
    assert.match(String(lines[0]!['reason']), /job 1 run 1 is dispatched to host n1, not to host n2/);

    // The head host's own status goes through as before.
    const head = worker(s, 'n1');
    await head.open;
    head.register('n1');
    await waitFor('the start on n1', () => head.got.some((f) => f.type === 'start'));
    head.send({
      type: 'status',
      host: 'n1',
      jobId: 1,
      run: 1,
      statusId: 'n1/1.1/started',
      kind: 'started',
      pid: 4242,
      time_ms: Date.now(),
    });
    await waitFor('the status-ack on n1', () => head.got.some((f) => f.type === 'status-ack'));
    assert.equal(s.job.state, 'RUN');
    assert.equal(s.job.started, true);
    assert.equal(s.job.pid, 4242);
  } finally {
    await teardown(s);
  }
});

test('a start refusal from a host the job does not run on is dropped: a kill does not end the job as refused', async () => {
  const s = await setup();
  try {
    // n1 takes the start and says nothing yet; n2 claims to have refused it.
    const head = worker(s, 'n1');
    await head.open;
    head.register('n1');
    await waitFor('the start on n1', () => head.got.some((f) => f.type === 'start'));
    const rogue = worker(s, 'n2');
    await rogue.open;
    rogue.register('n2');
    await waitFor('n2 to be registered', () => rogue.got.some((f) => f.type === 'registered'));
    rogue.send({ type: 'ack', ref: 'start', jobId: 1, run: 1, outcome: 'refused', reason: 'made up by n2' });
    rogue.send({ type: 'ack', ref: 'kill', jobId: 1, run: 1, outcome: 'unknown' });
    await waitFor('both acks to be dropped', () => s.hub.foreignAcks === 2);
    const lines = s.logs.filter((l) => l['msg'] === 'dropped an ack from a host that does not run the job');
    assert.deepEqual(
      lines.map((l) => [l['host'], l['headHost'], l['kind']]),
      [
        ['n2', 'n1', 'start refused'],
        ['n2', 'n1', 'kill unknown'],
      ],
    );
    // The kill goes to n1, which runs the job; nothing ends it before n1 reports.
    await s.node.fact({ kind: 'control', jobId: 1, action: 'kill', user: 'alice' });
    assert.equal(s.job.state, 'RUN');
    await waitFor('the kill on n1', () => head.got.some((f) => f.type === 'kill'));
    assert.equal(rogue.got.filter((f) => f.type === 'kill').length, 0);
    assert.equal(s.node.proposals, 0, 'nothing proposed by the hub');
  } finally {
    await teardown(s);
  }
});

test('a status on a run that is over is acked without a proposal; one on a run not applied yet is neither', async () => {
  const s = await setup();
  try {
    const head = worker(s, 'n1');
    await head.open;
    head.register('n1');
    await waitFor('the start on n1', () => head.got.some((f) => f.type === 'start'));
    await s.node.fact({ kind: 'control', jobId: 1, action: 'requeue', user: 'alice' });
    assert.equal(s.job.state, 'PEND');
    // Run 1 was requeued: its finished status changes nothing, and the worker must stop re-sending it.
    head.send({
      type: 'status',
      host: 'n1',
      jobId: 1,
      run: 1,
      statusId: 'n1/1.1/finished',
      kind: 'finished',
      exitCode: 143,
      signal: 'SIGTERM',
      time_ms: Date.now(),
    });
    await waitFor('the status-ack', () =>
      head.got.some((f) => f.type === 'status-ack' && f.statusId === 'n1/1.1/finished'),
    );
    // Run 2 is not dispatched (in this state): not proposed, not acked (the worker would re-send it).
    head.send({
      type: 'status',
      host: 'n1',
      jobId: 1,
      run: 2,
      statusId: 'n1/1.2/started',
      kind: 'started',
      pid: 7,
      time_ms: Date.now(),
    });
    head.send({ type: 'heartbeat', host: 'n1', seq: 0 });
    head.send({
      type: 'status',
      host: 'n1',
      jobId: 1,
      run: 1,
      statusId: 'n1/1.1/finished',
      kind: 'finished',
      exitCode: 143,
      signal: 'SIGTERM',
      time_ms: Date.now(),
    });
    await waitFor('the second status-ack', () => head.got.filter((f) => f.type === 'status-ack').length === 2);
    assert.equal(head.got.filter((f) => f.type === 'status-ack' && f.statusId === 'n1/1.2/started').length, 0);
    assert.equal(s.node.proposals, 0);
    assert.equal(s.job.state, 'PEND');
    assert.equal(s.hub.foreignStatuses, 0);
  } finally {
    await teardown(s);
  }
});
