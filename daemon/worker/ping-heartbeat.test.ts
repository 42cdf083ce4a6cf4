// The worker's side of `ping-heartbeat` (issue 14): it names the feature when it dials, and sends
// its ping alone each heartbeat period once the leader's `registered` names the feature; with a
// leader that does not (an older controller) it sends the `heartbeat` frame beside the ping.
// A fake controller on 127.0.0.1 with a 50 ms heartbeat period.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { HEARTBEAT_MS_MIN, parseWorkerFrame, type ControllerToWorkerFrame } from '../worker-protocol.js';
import { FEATURE_PING_HEARTBEAT, workerFeatures } from '../worker-start-batch.js';
import { LeaderLink } from './leader-link.js';
import { idleLinkHandler, silentLog, waitFor } from '../../testing/worker-fixtures.js';

/** What a fake leader got from one worker: the features it named, its frames by type, its pings. */
interface Heard {
  features: ReadonlySet<string>;
  frames: string[];
  pings: number;
}

async function withLeader(names: readonly string[], body: (heard: Heard) => Promise<void>): Promise<void> {
  const heard: Heard = { features: new Set(), frames: [], pings: 0 };
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/worker' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  wss.on('connection', (ws, req) => {
    heard.features = workerFeatures(req.headers);
    ws.on('ping', () => heard.pings++);
    ws.on('message', (data) => {
      const f = parseWorkerFrame(data.toString());
      heard.frames.push(f.type);
      if (f.type !== 'register') return;
      const registered: ControllerToWorkerFrame = {
        type: 'registered',
        leaderId: 1,
        heartbeat_ms: HEARTBEAT_MS_MIN,
        ...(names.length > 0 ? { features: [...names] } : {}),
      };
      ws.send(JSON.stringify(registered));
    });
  });
  const link = new LeaderLink(
    {
      controllers: [`127.0.0.1:${(wss.address() as AddressInfo).port}`],
      host: 'n1',
      resources: { slots: 1, mem_bytes: 1024 ** 3, booleans: [], numerics: {}, strings: {} },
      version: 'test',
      credential: null,
      tls: null,
      random: () => 0.5,
      now: Date.now,
      reconnectMin_ms: 10,
      reconnectMax_ms: 20,
    },
    silentLog(),
    idleLinkHandler(),
  );
  try {
    link.connect();
    await body(heard);
  } finally {
    link.close();
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
}

test('a worker names ping-heartbeat in its features header', () =>
  withLeader([], async (heard) => {
    await waitFor('the register frame', () => heard.frames.includes('register'));
    assert.ok(heard.features.has(FEATURE_PING_HEARTBEAT), [...heard.features].join(','));
  }));

test('once `registered` names ping-heartbeat, the worker pings alone: no heartbeat frame', () =>
  withLeader([FEATURE_PING_HEARTBEAT], async (heard) => {
    await waitFor('three pings', () => heard.pings >= 3);
    assert.deepEqual(heard.frames, ['register'], 'nothing but the register frame');
  }));

test('with a leader that does not name it, the worker sends a heartbeat frame with each ping', () =>
  withLeader([], async (heard) => {
    await waitFor('three pings', () => heard.pings >= 3);
    await waitFor('a heartbeat frame per ping', () => heard.frames.filter((t) => t === 'heartbeat').length >= 3);
    assert.equal(heard.frames[0], 'register');
  }));
