// LeaderLink's choice of controller after a registration that got no answer (fake controllers on 127.0.0.1).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { parseWorkerFrame, type ControllerToWorkerFrame } from '../worker-protocol.js';
import { LeaderLink } from './leader-link.js';
import { silentLog, waitFor } from '../../testing/worker-fixtures.js';

/** A `/worker` endpoint that records the registers it gets, answering `registered` or nothing. */
async function controller(name: string, answers: boolean, dialled: string[]): Promise<WebSocketServer> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/worker' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      if (parseWorkerFrame(data.toString()).type !== 'register') return;
      dialled.push(name);
      const f: ControllerToWorkerFrame = { type: 'registered', leaderId: 2, heartbeat_ms: 1_000 };
      if (answers) ws.send(JSON.stringify(f));
    });
  });
  return wss;
}

const address = (wss: WebSocketServer): string => `127.0.0.1:${(wss.address() as AddressInfo).port}`;

test('a controller that took the connection but did not answer register is dialled once more, then the next one', async () => {
  const dialled: string[] = [];
  const busy = await controller('busy', false, dialled);
  const leader = await controller('leader', true, dialled);
  let registered = false;
  const link = new LeaderLink(
    {
      controllers: [address(busy), address(leader)],
      host: 'n1',
      resources: { slots: 1, mem_bytes: 1024 ** 3, booleans: [], numerics: {}, strings: {} },
      version: 'test',
      credential: null,
      tls: null,
      random: () => 0.5,
      now: Date.now,
      reconnectMin_ms: 10,
      reconnectMax_ms: 20,
      registerTimeout_ms: 150,
    },
    silentLog(),
    {
      running: () => [],
      onRegistered: () => {
        registered = true;
      },
      onStart: () => undefined,
      onUnreadableStart: () => undefined,
      onKill: () => undefined,
      onSignal: () => undefined,
      onStatusAck: () => undefined,
      onPeek: () => undefined,
    },
  );
  try {
    link.connect();
    await waitFor('registered with the leader', () => registered);
    assert.deepEqual(dialled, ['busy', 'busy', 'leader']);
  } finally {
    link.close();
    for (const s of [busy, leader]) {
      for (const c of s.clients) c.terminate();
      await new Promise<void>((r) => s.close(() => r()));
    }
  }
});
