import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer, type WebSocket } from 'ws';
import { createServer, type AddressInfo } from 'node:net';
import type { DryRunResult, SubmitResult } from '../api/responses.js';
import { ApiError, type ClientOptions, type Stall, XceClient, toWsUrl } from './client.js';

interface Seen {
  op: string;
  session?: { client: string; seq: number };
}

/** A stand-in controller on 127.0.0.1 whose answers the test scripts. */
async function fakeController(
  answer: (req: Seen & { id: number }, ws: WebSocket) => unknown,
): Promise<{ address: string; seen: Seen[]; close(): Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/api' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const seen: Seen[] = [];
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const req = JSON.parse(data.toString()) as Seen & { id: number };
      seen.push(req);
      const out = answer(req, ws);
      if (out !== undefined) ws.send(JSON.stringify(out));
    });
  });
  const { port } = wss.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  };
}

/** Runs BODY with a client (OPTIONS) of one fake controller answering as ANSWER; closes both after. */
async function withController(
  answer: Parameters<typeof fakeController>[0],
  options: Omit<ClientOptions, 'controllers'>,
  body: (client: XceClient, ctl: Awaited<ReturnType<typeof fakeController>>) => Promise<void>,
): Promise<void> {
  const ctl = await fakeController(answer);
  const client = new XceClient({ controllers: [ctl.address], ...options });
  try {
    await body(client, ctl);
  } finally {
    client.close();
    await ctl.close();
  }
}

test('addresses become /api WebSocket URLs', () => {
  assert.equal(toWsUrl('127.0.0.1:7101'), 'ws://127.0.0.1:7101/api');
  assert.equal(toWsUrl('ws://h:1/'), 'ws://h:1/api');
  assert.equal(toWsUrl('ws://h:1/api'), 'ws://h:1/api');
});

test('a follower redirects to the leader and the client follows with the same session', async () => {
  const leader = await fakeController((req) => ({ id: req.id, ok: true, result: { jobId: 7 } }));
  const follower = await fakeController((req) => ({
    id: req.id,
    ok: false,
    error: { code: 'not-leader', message: 'not the leader', leader: { id: 1, address: leader.address } },
  }));
  const client = new XceClient({ controllers: [follower.address], token: 't', clientId: 'c-test-0001' });
  try {
    assert.deepEqual(await client.submit({ command: ['true'] }), { jobId: 7 });
    assert.deepEqual(follower.seen[0]?.session, { client: 'c-test-0001', seq: 1 });
    assert.deepEqual(leader.seen[0]?.session, { client: 'c-test-0001', seq: 1 });
  } finally {
    client.close();
    await leader.close();
    await follower.close();
  }
});

test('a write retried after a dropped connection reuses its sequence number', async () => {
  let first = true;
  await withController(
    (req, ws) => {
      if (first) {
        first = false;
        ws.terminate(); // the leader dies before answering
        return undefined;
      }
      return { id: req.id, ok: true, result: { jobId: 1 } };
    },
    { clientId: 'c-test-0002' },
    async (client, ctl) => {
      await client.submit({ command: ['true'] });
      await client.submit({ command: ['true'] });
      assert.deepEqual(
        ctl.seen.map((s) => s.session?.seq),
        [1, 1, 2],
      );
    },
  );
});

test('a rejection is not retried and keeps its code and message', async () => {
  await withController(
    (req) => ({
      id: req.id,
      ok: false,
      error: {
        code: 'rejected',
        message: 'job sets rusage[license_foam=2] but application profile openfoam requires rusage[license_foam=1]',
      },
    }),
    {},
    async (client, ctl) => {
      await assert.rejects(
        client.submit({ command: ['x'] }),
        (e: unknown) => e instanceof ApiError && e.code === 'rejected' && /license_foam=1/.test(e.message),
      );
      assert.equal(ctl.seen.length, 1);
    },
  );
});

test('no reachable controller gives up at the deadline with a clear error', async () => {
  const client = new XceClient({ controllers: ['127.0.0.1:1'], callDeadline_ms: 300 });
  await assert.rejects(
    client.listApps(),
    (e: unknown) => e instanceof ApiError && e.code === 'unreachable' && /gave up after 300 ms/.test(e.message),
  );
  client.close();
});

test('a closed client fails its calls in flight and later ones at once instead of retrying to its deadline', async () => {
  const client = new XceClient({ controllers: ['127.0.0.1:1'], callDeadline_ms: 60_000 });
  const inFlight = client.listApps();
  await new Promise((r) => setTimeout(r, 50));
  client.close();
  const closed = (e: unknown): boolean =>
    e instanceof ApiError &&
    e.code === 'closed' &&
    /the client was closed \(apps\.list not sent again\)/.test(e.message);
  await assert.rejects(inFlight, closed);
  await assert.rejects(
    client.submit({ command: ['true'] }),
    (e: unknown) => e instanceof ApiError && e.code === 'closed' && /jobs\.submit/.test(e.message),
  );
});

test('concurrent writes each take their own session, so none is refused as out of order', async () => {
  await withController(
    (req) => ({ id: req.id, ok: true, result: { jobId: 1 } }),
    { clientId: 'c-test-0003' },
    async (client, ctl) => {
      await Promise.all([
        client.submit({ command: ['a'] }),
        client.submit({ command: ['b'] }),
        client.submit({ command: ['c'] }),
      ]);
      await client.submit({ command: ['d'] });
      const sessions = ctl.seen.map((s) => `${s.session?.client}#${s.session?.seq}`);
      assert.equal(new Set(sessions.slice(0, 3).map((s) => s.split('#')[0])).size, 3, sessions.join(' '));
      assert.equal(new Set(sessions).size, 4, 'no (session, seq) pair is used twice');
    },
  );
});

test('watch yields each change of a job and returns its final details', async () => {
  const states = ['PEND', 'PEND', 'RUN', 'DONE'];
  let i = 0;
  await withController(
    (req) => ({
      id: req.id,
      ok: true,
      result: { id: 9, state: states[Math.min(i++, states.length - 1)], pendReason: null, runNumber: 1 },
    }),
    {},
    async (client) => {
      const seen: string[] = [];
      const it = client.watch(9, { interval_ms: 1 });
      let r = await it.next();
      while (!r.done) {
        seen.push(String(r.value['state']));
        r = await it.next();
      }
      assert.deepEqual(seen, ['PEND', 'RUN']);
      assert.equal(r.value['state'], 'DONE');
    },
  );
});

test('a controller that stops answering (paused) is abandoned within the keepalive, not the request timeout', async () => {
  const paused = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/api', autoPong: false });
  await new Promise<void>((r) => paused.once('listening', () => r()));
  paused.on('connection', () => undefined); // accepts, then neither answers nor pongs: a SIGSTOPped process
  const live = await fakeController((req) => ({ id: req.id, ok: true, result: { jobId: 3 } }));
  // The request timeout is longer than the whole call's deadline: only the keepalive can get the
  // call to the live controller in time.
  const client = new XceClient({
    controllers: [`127.0.0.1:${(paused.address() as AddressInfo).port}`, live.address],
    requestTimeout_ms: 60_000,
    callDeadline_ms: 8_000,
  });
  try {
    assert.deepEqual(await client.submit({ command: ['true'] }), { jobId: 3 });
  } finally {
    client.close();
    for (const c of paused.clients) c.terminate();
    await new Promise((r) => paused.close(() => r(undefined)));
    await live.close();
  }
});

test('after a login as another user, writes go in new sessions (a session belongs to its first user)', async () => {
  await withController(
    (req) => ({
      id: req.id,
      ok: true,
      result: req.op === 'login' ? { token: `tok-${req.id}` } : { jobId: req.id },
    }),
    { clientId: 'c-first' },
    async (client, ctl) => {
      await client.login('alice', 'pw');
      await client.submit({ command: ['true'] });
      await client.login('alice', 'pw');
      await client.submit({ command: ['true'] });
      await client.login('bob', 'pw');
      await client.submit({ command: ['true'] });
      const sessions = ctl.seen.filter((s) => s.op === 'jobs.submit').map((s) => s.session);
      assert.deepEqual(
        sessions.slice(0, 2),
        [
          { client: 'c-first', seq: 1 },
          { client: 'c-first', seq: 2 },
        ],
        'the same user keeps its session',
      );
      assert.notEqual(sessions[2]?.client, 'c-first');
      assert.equal(sessions[2]?.seq, 1, "bob's first write starts a new session");
    },
  );
});

test('call is typed by operation: a submit answers a SubmitResult, a dry run a DryRunResult', async () => {
  await withController(
    (req) => ({
      id: req.id,
      ok: true,
      result: req.op === 'jobs.submit' ? { jobId: 5, profile: 'python', queue: 'normal' } : { jobs: [] },
    }),
    {},
    async (client) => {
      // Compile-time checks as much as run-time ones: no cast anywhere.
      const submitted: SubmitResult = await client.call('jobs.submit', { job: { command: ['true'] } });
      assert.equal(submitted.jobId, 5);
      const list = await client.call('jobs.list', { limit: 3 });
      assert.deepEqual(list.jobs, []);
      const dryRun = (): Promise<DryRunResult> =>
        client.call('jobs.submit', { job: { command: ['true'] }, dryRun: true });
      assert.equal(typeof dryRun, 'function');
    },
  );
});

/** An address on 127.0.0.1 that nothing listens on (a port just freed). */
async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return `127.0.0.1:${port}`;
}

test('a call without a connection says which addresses it is trying, once, then gives up at its deadline', async () => {
  const dead = await deadAddress();
  const stalls: Stall[] = [];
  const client = new XceClient({
    controllers: [dead],
    callDeadline_ms: 1_500,
    stallNotice_ms: 100,
    onStall: (s) => stalls.push(s),
  });
  try {
    await assert.rejects(
      client.listApps(),
      (e: unknown) =>
        e instanceof ApiError &&
        e.code === 'unreachable' &&
        e.message.includes(dead) &&
        /gave up after 1500 ms/.test(e.message),
    );
    assert.deepEqual(stalls, [{ addresses: [dead], waited_ms: 100, deadline_ms: 1_500 }]);
  } finally {
    client.close();
  }
});

test('a call waiting on an open connection (a slow answer) is not a stall', async () => {
  const stalls: Stall[] = [];
  await withController(
    (req, ws) => {
      if (req.op !== 'apps.list') return { id: req.id, ok: true, result: { jobs: [] } };
      setTimeout(() => ws.send(JSON.stringify({ id: req.id, ok: true, result: { apps: [] } })), 600);
      return undefined;
    },
    { stallNotice_ms: 200, onStall: (s) => stalls.push(s) },
    async (client) => {
      await client.listJobs(); // the connection is open from here on
      const before = stalls.length;
      assert.deepEqual(await client.listApps(), { apps: [] });
      assert.equal(stalls.length, before);
    },
  );
});
