// A leader's worker hub on a stand-in node, for tests: the node's Raft is replaced by apply at the
// next index (then the hub hears of it), and scripted workers speak the /worker protocol by hand.
// Used by daemon/worker-hub.test.ts and daemon/worker-hub-hosts.test.ts.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { createLogger } from '../daemon/log.js';
import { WorkerHub } from '../daemon/worker-hub.js';
import { WORKER_HEADER_FEATURES } from '../daemon/worker-start-batch.js';
import { ChallengeBook, handshakeHeaders } from '../daemon/handshake.js';
import { deriveClusterKeys, hostCredentialKey } from '../daemon/keys.js';
import {
  parseControllerFrame,
  statusIdOf,
  WORKER_HEADER_HOST,
  type ControllerToWorkerFrame,
  type Resources,
  type WorkerToControllerFrame,
} from '../daemon/worker-protocol.js';
import { decodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody } from '../statemachine/facts.js';
import { submitFactFor } from '../statemachine/jobs.js';
import type { Job } from '../statemachine/state.js';
import { StandInNode } from './api-node.js';
import { dispatchFact } from './state-facts.js';
import { jobSpec, testClusterFiles } from './test-cluster.js';
import { waitFor } from './worker-fixtures.js';

const KEYS = deriveClusterKeys(new TextEncoder().encode('worker-hub-hosts-test-secret-0123456789'));
/** The hub's nonces: a scripted worker takes one directly (no GET /challenge in these tests). */
const CHALLENGES = new ChallengeBook();

/** A stand-in node whose hub hears of every applied fact; its own facts carry the wall-clock time. */
export class FakeNode extends StandInNode {
  hub: WorkerHub | null = null;
  /** Registrations (HostRegisteredFacts) the hub proposed; `proposals` counts the hub's other facts. */
  registrations = 0;
  /** The hub's other facts, in the order proposed. */
  readonly proposed: FactBody[] = [];
  override async propose(bytes: Uint8Array): Promise<ApplyResult> {
    const body = decodeFact(bytes).body;
    if (body.kind !== 'host') {
      this.proposed.push(body);
      return super.propose(bytes);
    }
    this.registrations++;
    return this.commit(bytes);
  }
  protected override factTime_ms(): number {
    return Date.now();
  }
  protected override applied(index: number, result: ApplyResult): void {
    this.hub?.onApplied([{ index, result }]);
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
    /** What it names in x-xce-worker-features; none: a worker older than every feature. */
    features: readonly string[] = [],
  ) {
    const key = hostCredentialKey(KEYS.workerRoot, host, 0);
    this.ws = new WebSocket(url, {
      headers: {
        [WORKER_HEADER_HOST]: host,
        ...(features.length > 0 ? { [WORKER_HEADER_FEATURES]: features.join(',') } : {}),
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
  send(f: WorkerToControllerFrame | string): void {
    this.ws.send(typeof f === 'string' ? f : JSON.stringify(f));
  }
  register(
    host: string,
    resources: Resources = { slots: 8, mem_bytes: 1024 ** 3, booleans: ['ib'], numerics: {} },
  ): void {
    this.send({
      type: 'register',
      host,
      resources,
      version: 'test',
      running: [],
    });
  }
}

export { waitFor };

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
export async function setup(command: readonly string[] = ['sleep', '60'], now?: () => number): Promise<Setup> {
  const node = new FakeNode();
  node.config(testClusterFiles());
  const config = node.state.config!.cluster;
  assert.equal(
    node.fact(submitFactFor(config, 'alice', 'normal', null, jobSpec({ command: [...command] }))).kind,
    'submitted',
  );
  const job = node.state.jobs.get(1)!;
  const logs: Array<Record<string, unknown>> = [];
  const log = createLogger(
    { component: 'hub' },
    { format: 'json', sink: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } },
  );
  const hub = new WorkerHub(node.asControllerNode, {
    workerRoot: KEYS.workerRoot,
    challenges: CHALLENGES,
    log,
    hostLost_ms: 0,
    ...(now !== undefined ? { now } : {}),
  });
  node.hub = hub;
  const d = node.fact(dispatchFact(node.state, 1, [{ host: 'n1', tasks: 1 }]));
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

/** Runs `body` on a fresh setup (see `setup`) and tears it down after. */
export async function withSetup(body: (s: Setup) => Promise<void>, command?: readonly string[]): Promise<void> {
  const s = await setup(command);
  try {
    await body(s);
  } finally {
    await teardown(s);
  }
}

/** A worker for `host` that has registered, and (`until: 'start'`) got the start of a job dispatched to it. */
export async function joined(
  s: Setup,
  host: string,
  until: 'registered' | 'start' = 'registered',
  features?: readonly string[],
): Promise<ScriptedWorker> {
  const w = worker(s, host, undefined, features);
  await w.open;
  w.register(host);
  await waitFor(until === 'start' ? `the start on ${host}` : `${host} to be registered`, () =>
    w.got.some((f) => f.type === until),
  );
  return w;
}

/** A status frame of `host` for a run; its statusId is `<host>/<jobId>.<run>/<kind>` as a worker makes it. */
export function statusFrame(
  host: string,
  jobId: number,
  run: number,
  fields: { kind: 'started'; pid: number } | { kind: 'finished'; exitCode: number | null; signal: string | null },
): WorkerToControllerFrame {
  return {
    type: 'status',
    host,
    jobId,
    run,
    statusId: statusIdOf(host, jobId, run, fields.kind),
    time_ms: Date.now(),
    ...fields,
  };
}

export function worker(
  s: Setup,
  host: string,
  onFrame?: (w: ScriptedWorker, f: ControllerToWorkerFrame) => void,
  features?: readonly string[],
): ScriptedWorker {
  const w = new ScriptedWorker(s.url, host, onFrame, features);
  s.workers.push(w);
  return w;
}

export async function teardown(s: Setup): Promise<void> {
  for (const w of s.workers) w.ws.terminate();
  s.hub.close();
  await new Promise((r) => s.server.close(r));
}
