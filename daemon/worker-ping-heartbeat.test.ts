// A registered worker's WebSocket ping is its heartbeat (the `ping-heartbeat` feature, issue 14):
// the leader names the feature in `registered` only to a worker that named it, and counts each ping
// of a registered worker as hearing from its host, as it does a `heartbeat` frame. The hub's clock
// is a fake one moved by the test (no waiting on real time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOST_SILENT_MS } from './worker-hub.js';
import { FEATURE_REPORTS_BATCH } from './worker-report-frames.js';
import { FEATURE_PING_HEARTBEAT, FEATURE_START_BATCH } from './worker-start-batch.js';
import { joined, setup, teardown, waitFor, worker, type ScriptedWorker } from '../testing/worker-hub-harness.js';

function registeredFeatures(w: ScriptedWorker): readonly string[] | undefined {
  const f = w.got.find((g) => g.type === 'registered');
  assert.ok(f !== undefined && f.type === 'registered');
  return f.features;
}

/** Sends a ping and waits for its pong: by then the hub has handled the ping. */
async function pinged(w: ScriptedWorker): Promise<void> {
  const pong = new Promise<void>((r) => w.ws.once('pong', () => r()));
  w.ws.ping();
  await pong;
}

test('`registered` names ping-heartbeat only to a worker that named it, beside reports-batch', async () => {
  const s = await setup();
  try {
    const both = await joined(s, 'n1', 'registered', [FEATURE_REPORTS_BATCH, FEATURE_PING_HEARTBEAT]);
    const ping = await joined(s, 'n2', 'registered', [FEATURE_START_BATCH, FEATURE_PING_HEARTBEAT]);
    const reports = await joined(s, 'n3', 'registered', [FEATURE_REPORTS_BATCH]);
    assert.deepEqual(registeredFeatures(both), [FEATURE_REPORTS_BATCH, FEATURE_PING_HEARTBEAT]);
    assert.deepEqual(registeredFeatures(ping), [FEATURE_PING_HEARTBEAT]);
    assert.deepEqual(registeredFeatures(reports), [FEATURE_REPORTS_BATCH]);
    // n3 again from a worker older than both features (its new connection replaces the last).
    const older = await joined(s, 'n3', 'registered', [FEATURE_START_BATCH]);
    assert.equal(registeredFeatures(older), undefined, 'no field an older worker would refuse');
  } finally {
    await teardown(s);
  }
});

test('a registered worker that only pings stays available; one silent for HOST_SILENT_MS does not', async () => {
  let now_ms = 1_000_000;
  const s = await setup(undefined, () => now_ms);
  try {
    const pinging = await joined(s, 'n1', 'registered', [FEATURE_PING_HEARTBEAT]);
    const silent = await joined(s, 'n2', 'registered', [FEATURE_PING_HEARTBEAT]);
    assert.deepEqual([...s.hub.availableHosts()].sort(), ['n1', 'n2']);
    // Three periods, each past half the silence limit: n1 pings in each, n2 sends nothing.
    for (let i = 0; i < 3; i++) {
      now_ms += HOST_SILENT_MS / 2 + 1;
      await pinged(pinging);
      assert.ok(s.hub.availableHosts().has('n1'), `n1 available after ping ${i + 1}`);
    }
    assert.equal(s.hub.availableHosts().has('n2'), false, 'n2 silent longer than HOST_SILENT_MS');
    // A ping from n2 brings it back at once, as a heartbeat frame would.
    await pinged(silent);
    assert.ok(s.hub.availableHosts().has('n2'));
  } finally {
    await teardown(s);
  }
});

test('a ping before `register` does not count: the connection is not a registered host', async () => {
  let now_ms = 1_000_000;
  const s = await setup(undefined, () => now_ms);
  try {
    const w = worker(s, 'n2', undefined, [FEATURE_PING_HEARTBEAT]);
    await w.open;
    now_ms += 10;
    await pinged(w);
    assert.equal(s.hub.availableHosts().has('n2'), false);
    w.register('n2');
    await waitFor('n2 to be registered', () => w.got.some((f) => f.type === 'registered'));
    assert.ok(s.hub.availableHosts().has('n2'));
  } finally {
    await teardown(s);
  }
});
