// The worker agent refused by the leader (issue 21): hosts.yaml does not list its host. It logs the
// leader's reason clearly, once, and retries after its longest back-off (not in a tight loop): it
// may have been started before the configuration upgrade that adds its host.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../log.js';
import { parseWorkerFrame, type ControllerToWorkerFrame } from '../worker-protocol.js';
import { standInCredential, standInWorkerServer } from '../../testing/worker-stand-in.js';
import { WorkerAgent } from './agent.js';
import { workerIsRoot } from './identity.js';
import { waitFor } from '../../testing/worker-fixtures.js';

const REASON = 'host h1 is not in hosts.yaml: add it there (xceadmin config upgrade) before starting its xcecd';

test('a refused registration is logged once with the reason, and retried after the longest back-off until the host is accepted', async () => {
  // A leader that refuses the first three registrations, as the hub does for a host hosts.yaml
  // does not list, then (the host added by a config upgrade) accepts.
  let refuse = 3;
  let registers = 0;
  const server = await standInWorkerServer((ws) => {
    ws.on('message', (data) => {
      if (parseWorkerFrame(data.toString()).type !== 'register') return;
      registers++;
      const send = (f: ControllerToWorkerFrame): void => ws.send(JSON.stringify(f));
      if (refuse > 0) {
        refuse--;
        send({ type: 'refused', reason: REASON });
        ws.close(1008, REASON);
      } else send({ type: 'registered', leaderId: 1, heartbeat_ms: 100 });
    });
  });
  const logs: Array<Record<string, unknown>> = [];
  const reconnectMax_ms = 60;
  const a = new WorkerAgent({
    host: 'h1',
    controllers: [server.address],
    resources: { slots: 1, mem_bytes: 1024 ** 3, booleans: [], numerics: {} },
    version: '0.1.0-test',
    credential: standInCredential('h1'),
    tls: null,
    stateDir: null,
    log: createLogger(
      { component: 'test' },
      {
        level: 'debug',
        format: 'json',
        sink: { write: (l: string) => void logs.push(JSON.parse(l) as Record<string, unknown>) },
      },
    ),
    launchers: { openmpi: 'mpirun', mpich: 'mpirun' },
    asRoot: workerIsRoot(),
    setpriv: null,
    killGrace_ms: 300,
    hookTimeout_ms: 5_000,
    jobsMax: 1,
    now: Date.now,
    // No jitter: a retry waits exactly the back-off.
    random: () => 1,
    reconnectMin_ms: 1,
    reconnectMax_ms,
    statusResend_ms: 1_000,
  });
  try {
    a.start();
    await waitFor('registration once the host is accepted', () => a.isRegistered());
    assert.equal(registers, 4);
    const warned = logs.filter((l) => l['level'] === 'warn');
    assert.deepEqual(
      warned.map((l) => [l['msg'], l['reason']]),
      [[`the leader refused this worker's registration: ${REASON}`, REASON]],
      'the reason is a warning once, not one per retry',
    );
    // Each retry waits the longest back-off, not the shortest doubling (1, 2, 4 ms: a tight loop).
    const retries = logs.filter((l) => l['msg'] === 'registration refused; retrying');
    assert.deepEqual(
      retries.map((l) => [l['in_ms'], l['refusals']]),
      [
        [reconnectMax_ms, 1],
        [reconnectMax_ms, 2],
        [reconnectMax_ms, 3],
      ],
    );
    assert.ok(
      logs.some((l) => l['msg'] === 'registered after the leader had refused this worker' && l['refusals'] === 3),
    );
    assert.equal(a.refusals, 0);
  } finally {
    a.close();
    await server.close();
  }
});
