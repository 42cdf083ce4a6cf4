// The worker agent against fake controllers on 127.0.0.1: leader following, registration, status
// delivery until acked (also across a controller failover and a worker restart), idempotent starts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { WebSocket } from 'ws';
import {
  type ControllerToWorkerFrame,
  parseWorkerFrame,
  type StartInfo,
  type StatusFrame,
  type WorkerToControllerFrame,
  type RegisterFrame,
  type AckFrame,
} from '../worker-protocol.js';
import { WorkerAgent, type AgentOptions } from './agent.js';
import {
  standInAgentOptions,
  standInCredential,
  standInWorkerServer,
  type StandInServer,
} from '../../testing/worker-stand-in.js';
import { inScratchDir, scratchDir, startInfo, waitFor } from '../../testing/worker-fixtures.js';

/** A controller's `/worker` endpoint, scripted: leader (answers registered) or follower (not-leader). */
class FakeController {
  readonly frames: WorkerToControllerFrame[] = [];
  conn: WebSocket | null = null;
  ackStatuses = true;
  private server: StandInServer | null = null;
  readonly ready: Promise<void>;

  constructor(
    private readonly role: { leader: true; id: number } | { leader: false; leaderAddress?: () => string | undefined },
  ) {
    // A stand-in /worker that authenticates each handshake as a controller does (testing/worker-stand-in.ts).
    this.ready = standInWorkerServer((ws) => this.accept(ws)).then((s) => {
      this.server = s;
    });
  }

  get authFailures(): string[] {
    return this.server?.authFailures ?? [];
  }

  private accept(ws: WebSocket): void {
    this.conn = ws;
    ws.on('message', (data) => {
      const f = parseWorkerFrame(data.toString());
      this.frames.push(f);
      if (f.type === 'register') {
        if (this.role.leader) this.send({ type: 'registered', leaderId: this.role.id, heartbeat_ms: 100 });
        else {
          const address = this.role.leaderAddress?.();
          this.send(
            address === undefined ? { type: 'not-leader' } : { type: 'not-leader', leader: { id: 1, address } },
          );
          ws.close();
        }
      }
      if (f.type === 'status' && this.ackStatuses) this.send({ type: 'status-ack', statusId: f.statusId });
    });
  }

  /** A controller listening on a free port. */
  static async listening(role: ConstructorParameters<typeof FakeController>[0]): Promise<FakeController> {
    const c = new FakeController(role);
    await c.ready;
    return c;
  }

  get address(): string {
    return this.server!.address;
  }

  send(f: ControllerToWorkerFrame): void {
    this.conn?.send(JSON.stringify(f));
  }

  statuses(): StatusFrame[] {
    return this.frames.filter((f): f is StatusFrame => f.type === 'status');
  }
  registers(): RegisterFrame[] {
    return this.frames.filter((f): f is RegisterFrame => f.type === 'register');
  }
  acks(): AckFrame[] {
    return this.frames.filter((f): f is AckFrame => f.type === 'ack');
  }

  async close(): Promise<void> {
    await this.server?.close();
  }
}

/** The start of job `jobId` (run 1) in `dir`. */
const job = (dir: string, jobId: number, command: string[]): StartInfo => startInfo(dir, { jobId, command });

/** What the test worker offers: 8 slots, 16 GiB, ib and x86_64, two GPUs, rack r1. */
const RESOURCES = {
  slots: 8,
  mem_bytes: 16 * 1024 ** 3,
  booleans: ['ib', 'x86_64'],
  numerics: { gpu: 2 },
  strings: { rack: 'r1' },
};

function agent(controllers: string[], over: Partial<AgentOptions> = {}): WorkerAgent {
  return new WorkerAgent(standInAgentOptions(controllers, { resources: RESOURCES, ...over }));
}

interface Registered {
  leader: FakeController;
  a: WorkerAgent;
  /** The jobs' working directory. */
  dir: string;
}

/** A leader (id 1) and an agent registered with it; both closed, and the job directory removed, after `body`. */
function withRegisteredAgent(body: (s: Registered) => Promise<void>): Promise<void> {
  return inScratchDir('xce-agent-', async (dir) => {
    const leader = await FakeController.listening({ leader: true, id: 1 });
    const a = agent([leader.address]);
    try {
      a.start();
      await waitFor('registration', () => a.isRegistered());
      await body({ leader, a, dir });
    } finally {
      a.close();
      await leader.close();
    }
  });
}

/** Like withRegisteredAgent with a state directory: `restart()` starts a second agent on the same state. */
function withRestartableAgent(
  body: (s: { leader: FakeController; first: WorkerAgent; dir: string; restart: () => WorkerAgent }) => Promise<void>,
): Promise<void> {
  return inScratchDir('xce-agent-', async (dir) => {
    const stateDir = scratchDir('xce-state-', 0o700);
    const leader = await FakeController.listening({ leader: true, id: 1 });
    const first = agent([leader.address], { stateDir });
    let second: WorkerAgent | null = null;
    const restart = (): WorkerAgent => {
      second = agent([leader.address], { stateDir });
      second.start();
      return second;
    };
    try {
      first.start();
      await waitFor('registration', () => first.isRegistered());
      await body({ leader, first, dir, restart });
    } finally {
      first.close();
      (second as WorkerAgent | null)?.close();
      await leader.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
}

test('the worker follows not-leader to the leader and registers with its resources, version and running jobs', async () => {
  const leader = await FakeController.listening({ leader: true, id: 1 });
  const follower = await FakeController.listening({ leader: false, leaderAddress: () => leader.address });
  const a = agent([follower.address]);
  try {
    a.start();
    await waitFor('registration with the leader', () => a.isRegistered());
    assert.equal(a.leaderId, 1);
    assert.equal(follower.registers().length >= 1, true);
    const reg = leader.registers()[0] as RegisterFrame;
    assert.deepEqual(reg, {
      type: 'register',
      host: 'h1',
      resources: RESOURCES,
      version: '0.1.0-test',
      running: [],
    });
    await waitFor('a heartbeat', () => leader.frames.some((f) => f.type === 'heartbeat'));
    assert.deepEqual(leader.authFailures, []);
  } finally {
    a.close();
    await leader.close();
    await follower.close();
  }
});

test('a controller that knows no leader makes the worker try the next one', async () => {
  const electing = await FakeController.listening({ leader: false });
  const leader = await FakeController.listening({ leader: true, id: 3 });
  const a = agent([electing.address, leader.address]);
  try {
    a.start();
    await waitFor('registration', () => a.isRegistered());
    assert.equal(a.leaderId, 3);
  } finally {
    a.close();
    await electing.close();
    await leader.close();
  }
});

test("a worker with another cluster's credential, or another host's, is refused by the controller", async () => {
  const leader = await FakeController.listening({ leader: true, id: 1 });
  const other = new TextEncoder().encode('another-secret-another-secret-another-secret');
  const a = agent([leader.address], { credential: standInCredential('h1', 0, other) });
  const b = agent([leader.address], { credential: { ...standInCredential('h2'), host: 'h1' } });
  try {
    a.start();
    b.start();
    await waitFor('refused connections', () => leader.authFailures.length >= 2);
    assert.match(leader.authFailures[0] ?? '', /handshake proof does not match this cluster's key for h1/);
    assert.equal(a.isRegistered(), false);
    assert.equal(b.isRegistered(), false);
  } finally {
    a.close();
    b.close();
    await leader.close();
  }
});

test('a job runs on start; its statuses are re-sent until acked, also to a new leader after a failover', () =>
  inScratchDir('xce-agent-', async (dir) => {
    const old = await FakeController.listening({ leader: true, id: 1 });
    old.ackStatuses = false;
    // The second configured controller is a follower that will point at the new leader.
    let newLeader: string | undefined;
    const pointer = await FakeController.listening({ leader: false, leaderAddress: () => newLeader });
    const next = await FakeController.listening({ leader: true, id: 2 });
    const a = agent([old.address, pointer.address]);
    try {
      a.start();
      await waitFor('registration', () => a.isRegistered());
      old.send({ type: 'start', startInfo: job(dir, 7, ['/bin/sh', '-c', 'echo ran >> runs.log; exit 3']) });
      await waitFor('the finished status', () => old.statuses().some((s) => s.kind === 'finished'));
      assert.deepEqual(old.acks()[0], { type: 'ack', ref: 'start', jobId: 7, run: 1, outcome: 'accepted' });
      const started = old.statuses().find((s) => s.kind === 'started');
      assert.ok(started?.pid !== undefined && started.pid > 0);
      const finished = old.statuses().find((s) => s.kind === 'finished');
      assert.equal(finished?.exitCode, 3);
      assert.equal(finished?.statusId, 'h1/7.1/finished');
      // Not acked: sent again, with the same id.
      await waitFor('a re-send', () => old.statuses().filter((s) => s.statusId === 'h1/7.1/finished').length >= 2);
      // The leader dies before acking; another controller becomes leader.
      newLeader = next.address;
      await old.close();
      await waitFor('registration with the new leader', () => a.leaderId === 2, 8_000);
      await waitFor('both statuses at the new leader', () => next.statuses().length >= 2);
      assert.deepEqual(
        next
          .statuses()
          .map((s) => s.statusId)
          .slice(0, 2),
        ['h1/7.1/started', 'h1/7.1/finished'],
      );
      await waitFor('all acked', () => a.unacked().length === 0);
      assert.equal(readFileSync(join(dir, 'runs.log'), 'utf8'), 'ran\n');
    } finally {
      a.close();
      await pointer.close();
      await next.close();
      await old.close().catch(() => undefined);
    }
  }));

test('a duplicate start for a (jobId, run) running or already run is acked `duplicate` and not run again', () =>
  withRegisteredAgent(async ({ leader, dir }) => {
    const info = job(dir, 9, ['/bin/sh', '-c', 'echo ran >> runs.log; sleep 0.3']);
    leader.send({ type: 'start', startInfo: info });
    leader.send({ type: 'start', startInfo: info });
    await waitFor('the finished status', () => leader.statuses().some((s) => s.kind === 'finished'));
    leader.send({ type: 'start', startInfo: info });
    await waitFor('three acks', () => leader.acks().length === 3);
    assert.deepEqual(
      leader.acks().map((x) => x.outcome),
      ['accepted', 'duplicate', 'duplicate'],
    );
    assert.equal(readFileSync(join(dir, 'runs.log'), 'utf8'), 'ran\n');
  }));

test('after a reconnect the worker reports the jobs it runs; a kill ends one with its signal and reason', () =>
  withRegisteredAgent(async ({ leader, a, dir }) => {
    leader.send({ type: 'start', startInfo: job(dir, 11, ['sleep', '30']) });
    await waitFor('started', () => leader.statuses().some((s) => s.kind === 'started'));
    const pid = leader.statuses().find((s) => s.kind === 'started')?.pid;
    leader.conn?.terminate();
    await waitFor('a second register', () => leader.registers().length === 2);
    const running = leader.registers()[1]?.running ?? [];
    assert.equal(running.length, 1);
    assert.equal(running[0]?.jobId, 11);
    assert.equal(running[0]?.pid, pid);
    await waitFor('registration', () => a.isRegistered());
    leader.send({ type: 'kill', jobId: 11, run: 1, reason: 'killed by alice' });
    await waitFor('finished', () => leader.statuses().some((s) => s.kind === 'finished'));
    const fin = leader.statuses().find((s) => s.kind === 'finished');
    assert.deepEqual([fin?.signal, fin?.exitCode, fin?.reason], ['SIGTERM', null, 'killed by alice']);
    assert.deepEqual(leader.acks().at(-1), { type: 'ack', ref: 'kill', jobId: 11, run: 1, outcome: 'accepted' });
    leader.send({ type: 'kill', jobId: 99, run: 1, reason: 'x' });
    await waitFor('the unknown kill ack', () => leader.acks().some((x) => x.jobId === 99));
    assert.equal(leader.acks().find((x) => x.jobId === 99)?.outcome, 'unknown');
  }));

test('a restarted worker re-sends statuses it saved, adopts a job still running and refuses to run it twice', () =>
  withRestartableAgent(async ({ leader, first, dir, restart }) => {
    leader.ackStatuses = false;
    leader.send({ type: 'start', startInfo: job(dir, 21, ['/bin/sh', '-c', 'exit 0']) });
    leader.send({ type: 'start', startInfo: job(dir, 22, ['sleep', '30']) });
    await waitFor('job 21 finished and job 22 started', () => {
      const ids = leader.statuses().map((s) => s.statusId);
      return ids.includes('h1/21.1/finished') && ids.includes('h1/22.1/started');
    });
    first.close(); // a crash: nothing killed, nothing more sent
    const pid = leader.statuses().find((s) => s.statusId === 'h1/22.1/started')?.pid as number;
    leader.frames.length = 0;
    leader.ackStatuses = true;
    const second = restart();
    await waitFor('registration', () => second.isRegistered());
    assert.deepEqual(
      leader.registers()[0]?.running.map((r) => [r.jobId, r.pid]),
      [[22, pid]],
    );
    await waitFor('the saved statuses', () => leader.statuses().length >= 3);
    assert.deepEqual(
      new Set(leader.statuses().map((s) => s.statusId)),
      new Set(['h1/21.1/started', 'h1/21.1/finished', 'h1/22.1/started']),
    );
    leader.send({ type: 'start', startInfo: job(dir, 22, ['sleep', '30']) });
    leader.send({ type: 'start', startInfo: job(dir, 21, ['/bin/sh', '-c', 'exit 0']) });
    await waitFor('two acks', () => leader.acks().length === 2);
    assert.deepEqual(
      leader.acks().map((x) => x.outcome),
      ['duplicate', 'duplicate'],
    );
    leader.send({ type: 'kill', jobId: 22, run: 1, reason: 'killed by bob' });
    await waitFor('the adopted job finished', () => leader.statuses().some((s) => s.statusId === 'h1/22.1/finished'));
    assert.equal(leader.statuses().find((s) => s.statusId === 'h1/22.1/finished')?.reason, 'killed by bob');
    await waitFor('all acked', () => second.unacked().length === 0);
  }));

test('stop() kills running jobs, reports them finished with their signal and waits for the acks', () =>
  withRegisteredAgent(async ({ leader, a, dir }) => {
    leader.send({
      type: 'start',
      startInfo: { ...job(dir, 31, ['sleep', '30']), profilePostExec: 'echo post > post.log' },
    });
    await waitFor('started', () => leader.statuses().some((s) => s.kind === 'started'));
    await a.stop();
    const fin = leader.statuses().find((s) => s.kind === 'finished');
    assert.deepEqual([fin?.signal, fin?.reason], ['SIGTERM', 'xcecd on host h1 is shutting down']);
    assert.equal(readFileSync(join(dir, 'post.log'), 'utf8'), 'post\n');
    assert.equal(a.unacked().length, 0);
  }));

test('a job adopted after a worker restart that ends by itself is reported finished with an unknown exit status', () =>
  withRestartableAgent(async ({ leader, first, dir, restart }) => {
    leader.send({ type: 'start', startInfo: job(dir, 41, ['sleep', '1']) });
    await waitFor('started', () => leader.statuses().some((s) => s.statusId === 'h1/41.1/started'));
    first.close();
    restart();
    await waitFor(
      'the adopted job finished',
      () => leader.statuses().some((s) => s.statusId === 'h1/41.1/finished'),
      8_000,
    );
    const fin = leader.statuses().find((s) => s.statusId === 'h1/41.1/finished');
    assert.deepEqual(
      [fin?.exitCode, fin?.signal, fin?.reason],
      [null, null, 'exit status unknown: xcecd restarted while the job ran (post-execs not run)'],
    );
  }));

test('a leader that stops answering heartbeats is dropped and the worker registers again', () =>
  withRegisteredAgent(async ({ leader, a }) => {
    // The controller's process hangs: it reads nothing and answers nothing (no pong either).
    const stalled = leader.conn as unknown as { _socket: { pause(): void } };
    stalled._socket.pause();
    await waitFor('a second register', () => leader.registers().length >= 2, 8_000);
    await waitFor('registered again', () => a.isRegistered());
  }));

test('a start frame the worker cannot take becomes a launch error for its job, not a silent drop', () =>
  withRegisteredAgent(async ({ leader, dir }) => {
    // An older or broken controller sends what the worker's schema refuses: a job env name with a dash.
    const refused = { ...job(dir, 51, ['true']), jobEnv: [{ name: 'MY-VAR', value: '1' }] };
    leader.send({ type: 'start', startInfo: refused });
    await waitFor('the launch error', () => leader.statuses().some((s) => s.statusId === 'h1/51.1/launch-error'));
    const s = leader.statuses().find((x) => x.statusId === 'h1/51.1/launch-error');
    assert.equal(s?.kind, 'launch-error');
    assert.match(
      s?.reason ?? '',
      /^host h1 cannot run this start of the job: jobEnv\.0\.name: environment variable name "MY-VAR" is not valid/,
    );
    assert.deepEqual(
      leader.acks().find((x) => x.jobId === 51),
      { type: 'ack', ref: 'start', jobId: 51, run: 1, outcome: 'refused', reason: s?.reason },
    );
    // The same start again is a duplicate (already answered), and a valid start for another job still runs.
    leader.send({ type: 'start', startInfo: refused });
    leader.send({ type: 'start', startInfo: job(dir, 52, ['true']) });
    await waitFor('job 52 finished', () => leader.statuses().some((x) => x.statusId === 'h1/52.1/finished'));
    assert.deepEqual(
      leader
        .acks()
        .filter((x) => x.jobId === 51)
        .map((x) => x.outcome),
      ['refused', 'duplicate'],
    );
    assert.equal(leader.statuses().filter((x) => x.jobId === 51).length, 1);
  }));
