// The worker and the `reports-batch` feature (issue 14), against stand-in controllers on 127.0.0.1:
// a worker names the feature; with a controller that names it back at registration it sends the
// acks of one start frame in one `reports` frame and its statuses in `reports` frames, re-sends
// those not acked, and takes `status-acks`; with an older controller it sends single frames only.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebSocket } from 'ws';
import { type ControllerToWorkerFrame, parseWorkerFrame, type WorkerToControllerFrame } from '../worker-protocol.js';
import { FEATURE_REPORTS_BATCH, unbatchReports } from '../worker-report-frames.js';
import { encodeStartFrames, FEATURE_START_BATCH, WORKER_HEADER_FEATURES } from '../worker-start-batch.js';
import { WorkerAgent } from './agent.js';
import { standInAgentOptions, standInWorkerServer, type StandInServer } from '../../testing/worker-stand-in.js';
import { inScratchDir, startInfo, waitFor } from '../../testing/worker-fixtures.js';

/** A leader's `/worker`: `batching` names reports-batch at registration (a controller with the feature). */
class Controller {
  readonly frames: WorkerToControllerFrame[] = [];
  /** What each worker named in x-xce-worker-features. */
  readonly features: string[] = [];
  ack = true;
  conn: WebSocket | null = null;
  private constructor(private readonly batching: boolean) {}
  server: StandInServer | null = null;

  static async listening(batching: boolean): Promise<Controller> {
    const c = new Controller(batching);
    c.server = await standInWorkerServer((ws, req) => {
      c.features.push(String(req.headers[WORKER_HEADER_FEATURES] ?? ''));
      c.conn = ws;
      ws.on('message', (data) => c.onFrame(parseWorkerFrame(data.toString())));
    });
    return c;
  }

  private onFrame(f: WorkerToControllerFrame): void {
    this.frames.push(f);
    if (f.type === 'register')
      this.send({
        type: 'registered',
        leaderId: 1,
        heartbeat_ms: 100,
        ...(this.batching ? { features: [FEATURE_REPORTS_BATCH] } : {}),
      });
    if (!this.ack) return;
    if (f.type === 'status') this.send({ type: 'status-ack', statusId: f.statusId });
    if (f.type === 'reports' && f.statuses.length > 0)
      this.send({ type: 'status-acks', statusIds: f.statuses.map((s) => s.statusId) });
  }

  send(f: ControllerToWorkerFrame | string): void {
    this.conn?.send(typeof f === 'string' ? f : JSON.stringify(f));
  }

  /** Every status the worker sent, as single frames, in order. */
  statuses(): string[] {
    return this.frames.flatMap((f) =>
      f.type === 'status'
        ? [f.statusId]
        : f.type === 'reports'
          ? unbatchReports(f).statuses.map((s) => s.statusId)
          : [],
    );
  }

  count(type: WorkerToControllerFrame['type']): number {
    return this.frames.filter((f) => f.type === type).length;
  }
}

function agent(controller: string): WorkerAgent {
  return new WorkerAgent(standInAgentOptions([controller]));
}

/** A controller (batching or not) and an agent registered with it, 3 jobs `true` started in one frame. */
function withThreeJobs(batching: boolean, body: (c: Controller, a: WorkerAgent) => Promise<void>): Promise<void> {
  return inScratchDir('xce-agent-reports-', async (dir) => {
    const c = await Controller.listening(batching);
    const a = agent(c.server!.address);
    try {
      a.start();
      await waitFor('registration', () => a.isRegistered());
      // One dial, naming (among others) the two features this test is about.
      assert.equal(c.features.length, 1);
      const named = c.features[0]!.split(',');
      assert.ok(named.includes(FEATURE_START_BATCH) && named.includes(FEATURE_REPORTS_BATCH), c.features[0]);
      const infos = [31, 32, 33].map((jobId) => startInfo(dir, { jobId }));
      for (const text of encodeStartFrames(infos)) c.send(text);
      await body(c, a);
    } finally {
      a.close();
      await c.server?.close();
    }
  });
}

const ALL = [31, 32, 33].flatMap((j) => [`h1/${j}.1/started`, `h1/${j}.1/finished`]).sort();

test('with a controller naming reports-batch, one start frame is acked in one reports frame and statuses go batched', () =>
  withThreeJobs(true, async (c, a) => {
    await waitFor('every status acked', () => a.unacked().length === 0 && new Set(c.statuses()).size === 6);
    assert.deepEqual([...new Set(c.statuses())].sort(), ALL);
    assert.equal(c.count('ack'), 0, 'no single ack');
    const withAcks = c.frames.filter((f) => f.type === 'reports' && f.acks.length > 0);
    assert.equal(withAcks.length, 1, 'the three acks of one start frame in one reports frame');
    assert.deepEqual(
      withAcks[0]!.type === 'reports' ? unbatchReports(withAcks[0]).acks.map((x) => [x.jobId, x.outcome]) : [],
      [
        [31, 'accepted'],
        [32, 'accepted'],
        [33, 'accepted'],
      ],
    );
  }));

test('statuses sent in reports frames and not acked are re-sent with the same ids until status-acks names them', () =>
  withThreeJobs(true, async (c, a) => {
    c.ack = false;
    await waitFor('every status re-sent', () => ALL.every((id) => c.statuses().filter((s) => s === id).length >= 2));
    assert.equal(a.unacked().length, 6);
    // The connection drops: on the next registration all six go again, in one reports frame.
    c.conn!.terminate();
    const before = c.count('register');
    await waitFor('registered again', () => c.count('register') > before && a.isRegistered());
    const sinceRegister = (): WorkerToControllerFrame[] =>
      c.frames.slice(c.frames.findLastIndex((f) => f.type === 'register'));
    await waitFor('the re-sent statuses', () =>
      sinceRegister().some((f) => f.type === 'reports' || f.type === 'status'),
    );
    const first = sinceRegister().find((f) => f.type === 'reports' || f.type === 'status');
    assert.equal(first?.type, 'reports');
    assert.deepEqual(
      first.type === 'reports'
        ? unbatchReports(first)
            .statuses.map((x) => x.statusId)
            .sort()
        : [],
      ALL,
    );
    // The controller acks all six in one status-acks frame.
    c.send({ type: 'status-acks', statusIds: ALL });
    await waitFor('every status acked', () => a.unacked().length === 0);
  }));

test('with an older controller (no features in registered) the worker sends single acks and statuses only', () =>
  withThreeJobs(false, async (c, a) => {
    await waitFor('every status acked', () => a.unacked().length === 0 && new Set(c.statuses()).size === 6);
    assert.equal(c.count('reports'), 0);
    assert.equal(c.count('ack'), 3);
    assert.deepEqual([...new Set(c.statuses())].sort(), ALL);
  }));
