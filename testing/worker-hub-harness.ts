// A leader's worker hub on a stand-in node, for tests: the node's Raft is replaced by apply at the
// next index (then the hub hears of it), and scripted workers speak the /worker protocol by hand.
// Used by daemon/worker-hub.test.ts and daemon/worker-hub-hosts.test.ts.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import type { ControllerNode } from '../daemon/controller-node.js';
import { createLogger } from '../daemon/log.js';
import { WorkerHub } from '../daemon/worker-hub.js';
import { ChallengeBook, handshakeHeaders } from '../daemon/handshake.js';
import { deriveClusterKeys, hostCredentialKey } from '../daemon/keys.js';
import {
  parseControllerFrame,
  WORKER_HEADER_HOST,
  type ControllerToWorkerFrame,
  type WorkerToControllerFrame,
} from '../daemon/worker-protocol.js';
import { apply } from '../statemachine/apply.js';
import { buildDispatchRecord } from '../statemachine/dispatch-record.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody } from '../statemachine/facts.js';
import { liveMerge, submitFactFor } from '../statemachine/jobs.js';
import { emptyState, type ControllerState, type Job } from '../statemachine/state.js';
import { jobSpec, testClusterFiles } from './test-cluster.js';

const KEYS = deriveClusterKeys(new TextEncoder().encode('worker-hub-hosts-test-secret-0123456789'));
/** The hub's nonces: a scripted worker takes one directly (no GET /challenge in these tests). */
const CHALLENGES = new ChallengeBook();

export class FakeNode {
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
export class ScriptedWorker {
  readonly got: ControllerToWorkerFrame[] = [];
  readonly ws: WebSocket;
  readonly open: Promise<void>;
  closed: { code: number; reason: string } | null = null;
  constructor(
    url: string,
    host: string,
    onFrame: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void = () => undefined,
  ) {
    const key = hostCredentialKey(KEYS.workerRoot, host, 0);
    this.ws = new WebSocket(url, {
      headers: {
        [WORKER_HEADER_HOST]: host,
        ...handshakeHeaders(key, 'worker', host, CHALLENGES.issue(), Date.now()),
      },
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

export async function waitFor(what: string, cond: () => boolean, timeout_ms = 5_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Setup {
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
export async function setup(command: readonly string[] = ['sleep', '60']): Promise<Setup> {
  const node = new FakeNode();
  await node.fact({ kind: 'config', files: testClusterFiles(), user: null });
  const config = node.state.config!.cluster;
  assert.equal(
    (await node.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec({ command: [...command] })))).kind,
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
  const hub = new WorkerHub(node as unknown as ControllerNode, {
    workerRoot: KEYS.workerRoot,
    challenges: CHALLENGES,
    log,
    hostLost_ms: 0,
  });
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

export function worker(
  s: Setup,
  host: string,
  onFrame?: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void,
): ScriptedWorker {
  const w = new ScriptedWorker(s.url, host, onFrame);
  s.workers.push(w);
  return w;
}

export async function teardown(s: Setup): Promise<void> {
  for (const w of s.workers) w.ws.terminate();
  s.hub.close();
  await new Promise((r) => s.server.close(r));
}
