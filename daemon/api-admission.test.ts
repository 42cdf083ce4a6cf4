// The client API's admission (api-admission.ts) on a fake socket, a fake handler and a hand-driven
// clock: what an unauthenticated connection may do, the bounds on requests in flight and on unsent
// answers, the per-turn scheduling, the heavy-operation gate, rate limits, the per-address
// connection cap, the log throttle; then the login gate's per-address limit through ApiServer and
// the client library's wait on `rate-limited`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import type { AddressInfo } from 'node:net';
import {
  API_ADMISSION_LIMITS,
  API_UNAUTHENTICATED_REQUESTS_MAX,
  ApiAdmission,
  CLOSE_POLICY,
  CLOSE_TRY_AGAIN,
  LogThrottle,
  WorkSlicer,
  clientAddress,
  type AdmissionLimits,
  type ApiConnection,
  type ApiHandler,
  type ApiSocket,
} from './api-admission.js';
import { ManualClock } from '../testing/manual-clock.js';
import { ApiServer } from './api-server.js';
import { TokenAuthority } from './auth.js';
import type { ControllerNode } from './controller-node.js';
import { createLogger } from './log.js';
import { LOGIN_ADDRESS_LIMITS } from './login-gate.js';
import { loadConfig } from '../model/config.js';
import { testClusterFiles } from '../testing/test-cluster.js';
import type { Request, Response } from '../api/protocol.js';
import { XceClient } from '../cli/client.js';

class FakeSocket implements ApiSocket {
  readonly sent: string[] = [];
  /** Answers not yet "written to the kernel" when the client does not read. */
  readonly unflushed: Array<() => void> = [];
  reads = true;
  paused = false;
  closedWith: { code: number; reason: string } | null = null;
  terminated = false;
  /** The client reads: every answer is flushed at once. */
  flushes = true;
  send(text: string, done: (err?: Error) => void): void {
    this.sent.push(text);
    if (this.flushes) queueMicrotask(() => done());
    else this.unflushed.push(() => done());
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
  close(code: number, reason: string): void {
    this.closedWith ??= { code, reason };
  }
  terminate(): void {
    this.terminated = true;
  }
  isOpen(): boolean {
    return this.closedWith === null && !this.terminated;
  }
  /** The answers in request order (they are sent as they are ready; the id correlates them). */
  answers(): Response[] {
    return this.sent.map((t) => JSON.parse(t) as Response).sort((a, b) => a.id - b.id);
  }
  flushAll(): void {
    for (const f of this.unflushed.splice(0)) f();
  }
}

/** A handler whose `serve` can be held (answers wait until released) and whose answers can be made large. */
class FakeHandler implements ApiHandler {
  readonly served: Request[] = [];
  /** The user each served request was handed with (authenticate's answer; null for a login). */
  readonly servedAs: (string | null)[] = [];
  /** Requests authenticate was asked about. */
  authenticated = 0;
  hold = false;
  answerBytes = 10;
  private readonly held: Array<() => void> = [];
  /** jobs.list requests being served, and the most at once. */
  lists = 0;
  listsMax = 0;
  async authenticate(
    req: Request,
  ): Promise<{ user: string } | { error: { code: 'unauthenticated'; message: string } }> {
    this.authenticated++;
    if (req.token === 'good-alice') return { user: 'alice' };
    if (req.token === 'good-bob') return { user: 'bob' };
    return { error: { code: 'unauthenticated', message: 'no token: log in first' } };
  }
  async serve(req: Request, _address: string, user: string | null): Promise<Response> {
    this.served.push(req);
    this.servedAs.push(user);
    if (req.op === 'login') {
      return req.args.password === 'right'
        ? { id: req.id, ok: true, result: { token: 'good-alice', user: req.args.user, expiresIn_s: 3600 } }
        : {
            id: req.id,
            ok: false,
            error: { code: 'unauthenticated', message: 'user name or password is not correct' },
          };
    }
    const list = req.op === 'jobs.list';
    if (list) this.listsMax = Math.max(this.listsMax, ++this.lists);
    if (this.hold) await new Promise<void>((r) => this.held.push(r));
    if (list) this.lists--;
    return { id: req.id, ok: true, result: { pad: 'x'.repeat(this.answerBytes) } };
  }
  release(n = Infinity): number {
    const out = this.held.splice(0, n);
    for (const r of out) r();
    return out.length;
  }
  get waiting(): number {
    return this.held.length;
  }
}

const quiet = createLogger({ component: 'api' }, { sink: { write: () => undefined } });

function setup(limits: Partial<AdmissionLimits> = {}, logLines?: string[]) {
  const clock = new ManualClock();
  const log = logLines
    ? createLogger({ component: 'api' }, { sink: { write: (l) => void logLines.push(l) }, format: 'json' })
    : quiet;
  const admission = new ApiAdmission(log, limits, clock);
  const handler = new FakeHandler();
  const connect = (address = '10.0.0.1'): { socket: FakeSocket; conn: ApiConnection | null } => {
    const socket = new FakeSocket();
    return { socket, conn: admission.accept(socket, address, handler) };
  };
  return { clock, admission, handler, connect };
}

let nextId = 0;
/** A request frame; `token` null: none. */
function frame(op: string, token: string | null = 'good-alice', args: Record<string, unknown> = {}): string {
  return JSON.stringify({ id: ++nextId, op, ...(token !== null ? { token } : {}), args });
}
function send(conn: ApiConnection, text: string): void {
  conn.receive(text, Buffer.byteLength(text));
}

test('an unauthenticated connection is served one request at a time, and closed past the limit, saying why', async () => {
  const { clock, connect, handler } = setup();
  const { socket, conn } = connect();
  assert.ok(conn);
  for (let i = 0; i < 100; i++) send(conn, frame('jobs.list', null));
  await clock.settle();
  assert.equal(socket.sent.length, API_UNAUTHENTICATED_REQUESTS_MAX, 'only the allowed number is answered');
  assert.ok(socket.answers().every((a) => !a.ok && a.error.code === 'unauthenticated'));
  assert.equal(handler.served.length, 0, 'no operation ran for it');
  assert.deepEqual(socket.closedWith?.code, CLOSE_POLICY);
  assert.match(socket.closedWith!.reason, /8 requests without a login or a valid token: log in first/);
  assert.ok(socket.paused, 'the socket was not read while 100 frames waited');
  clock.advance(API_ADMISSION_LIMITS.closeGrace_ms);
  assert.ok(socket.terminated, 'a client that does not finish the close handshake is cut');
});

test('a login or a valid token authenticates the connection; more requests are then served, in parallel', async () => {
  const { clock, connect, handler } = setup();
  const a = connect();
  send(a.conn!, frame('login', null, { user: 'alice', password: 'wrong' }));
  send(a.conn!, frame('login', null, { user: 'alice', password: 'right' }));
  for (let i = 0; i < 20; i++) send(a.conn!, frame('jobs.show', null, { id: 1 }));
  await clock.settle();
  assert.equal(a.conn!.authenticated, true);
  assert.equal(a.socket.closedWith, null);
  assert.equal(
    a.socket.sent.length,
    22,
    'requests without a token on an authenticated connection are answered (unauthenticated), not counted against it',
  );
  // A token on the first request: many requests at once are not held one at a time once it is verified.
  const b = connect();
  handler.hold = true;
  for (let i = 0; i < 20; i++) send(b.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  assert.equal(b.conn!.authenticated, true);
  assert.ok(handler.waiting > 1, `served in parallel once authenticated (${handler.waiting} in flight)`);
  handler.release();
  await clock.settle();
  assert.equal(b.socket.sent.length, 20);
  assert.equal(b.socket.closedWith, null);
});

test('a request is served for the user its token named, verified once (a login: for no user)', async () => {
  const { clock, connect, handler } = setup();
  const { socket, conn } = connect();
  send(conn!, frame('login', null, { user: 'alice', password: 'right' }));
  await clock.settle();
  send(conn!, frame('jobs.show', 'good-bob', { id: 1 }));
  send(conn!, frame('jobs.show', 'good-alice', { id: 2 }));
  send(conn!, frame('jobs.show', 'bad', { id: 3 }));
  await clock.settle();
  assert.deepEqual(handler.servedAs, [null, 'bob', 'alice'], 'the bad token is answered before serve');
  assert.equal(handler.authenticated, 3, 'one verification per request with a token, none for the login');
  assert.deepEqual(
    socket.answers().map((a) => a.ok),
    [true, true, true, false],
  );
});

test('an unauthenticated connection is closed at the deadline; an authenticated one stays', async () => {
  const { clock, connect } = setup();
  const idle = connect();
  const authed = connect();
  send(authed.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  clock.advance(API_ADMISSION_LIMITS.authDeadline_ms - 1);
  assert.ok(idle.socket.isOpen());
  clock.advance(1);
  assert.equal(idle.socket.closedWith?.code, CLOSE_POLICY);
  assert.match(idle.socket.closedWith!.reason, /not logged in within 10 s/);
  assert.equal(authed.socket.closedWith, null);
});

test('connections per address are capped; one more is closed with a reason; a closed one frees its slot', async () => {
  const lines: string[] = [];
  const { connect, admission } = setup({ connectionsPerAddressMax: 3 }, lines);
  const conns = [connect('10.0.0.9'), connect('10.0.0.9'), connect('10.0.0.9')];
  assert.ok(conns.every((c) => c.conn !== null));
  const refused = connect('10.0.0.9');
  assert.equal(refused.conn, null);
  assert.equal(refused.socket.closedWith?.code, CLOSE_TRY_AGAIN);
  assert.match(
    refused.socket.closedWith!.reason,
    /too many connections from 10\.0\.0\.9 \(api_limits\.connections_per_address: 3\): close some/,
  );
  assert.ok(connect('10.0.0.10').conn, 'another address is not affected');
  conns[0]!.conn!.closedBySocket();
  assert.equal(admission.connectionsFrom('10.0.0.9'), 2);
  assert.ok(connect('10.0.0.9').conn, 'the freed slot is taken again');
  // Refusals are logged once per address per minute, however many.
  for (let i = 0; i < 5; i++) connect('10.0.0.9');
  assert.equal(lines.filter((l) => l.includes('refused a client API connection')).length, 1);
  assert.equal(admission.stats().refused, 6);
});

test('past the in-flight bound the socket is not read, and it is read again once answers went out', async () => {
  const { clock, connect, handler } = setup();
  const { socket, conn } = connect();
  handler.hold = true;
  for (let i = 0; i < 200; i++) send(conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  assert.equal(handler.waiting, API_ADMISSION_LIMITS.inflightMax, 'no more than the bound is started');
  assert.ok(socket.paused);
  assert.equal(conn!.outstanding, 200);
  // The 200 - 64 queued are started as the first ones finish; reading resumes once 32 or fewer wait.
  for (let round = 0; round < 10 && conn!.outstanding > 0; round++) {
    handler.release();
    await clock.settle();
  }
  assert.equal(socket.sent.length, 200);
  assert.equal(socket.paused, false);
});

test('a connection whose answers are not read stops being served, is not read, and is closed if that lasts', async () => {
  const { clock, connect, handler, admission } = setup({ backlogBytesMax: 10_000 });
  const { socket, conn } = connect();
  socket.flushes = false;
  handler.answerBytes = 3_000;
  for (let i = 0; i < 50; i++) send(conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  const answered = socket.sent.length;
  assert.ok(answered >= 4 && answered < 50, `served until about 10,000 bytes are unsent (${answered} answers)`);
  assert.ok(conn!.stalled && socket.paused);
  assert.ok(admission.stats().backlogBytes >= 10_000);
  await clock.settle();
  assert.equal(socket.sent.length, answered, 'nothing more while stalled');
  // The client reads: served again.
  socket.flushAll();
  await clock.settle();
  assert.ok(socket.sent.length > answered);
  // It stops reading for good: closed after the stuck time, by cutting the socket (a close frame would wait behind the answers).
  socket.flushes = false;
  for (let i = 0; i < 10 && !conn!.stalled; i++) {
    socket.flushAll();
    socket.flushes = false;
    await clock.settle();
  }
  assert.ok(conn!.stalled);
  clock.advance(API_ADMISSION_LIMITS.backlogStuck_ms);
  assert.ok(socket.terminated);
  assert.equal(admission.stats().closed['backlog-stuck'], 1);
  conn!.closedBySocket();
  assert.equal(admission.stats().backlogBytes, 0, 'its unsent bytes are given back');
});

test('unsent answers past the hard bound cut the connection at once', async () => {
  const { clock, connect, handler, admission } = setup({ backlogBytesMax: 10_000, backlogHardBytes: 30_000 });
  const { socket, conn } = connect();
  socket.flushes = false;
  handler.answerBytes = 8_000;
  handler.hold = true;
  for (let i = 0; i < 10; i++) send(conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  assert.equal(handler.waiting, 10, 'all started while nothing was unsent');
  handler.release();
  await clock.settle();
  assert.ok(socket.terminated, 'ten 8 KB answers in flight overshoot the soft bound; the hard one cuts');
  assert.equal(admission.stats().closed['backlog-hard'], 1);
});

test('over the total bound, connections with unsent answers wait and those without are served', async () => {
  const { clock, connect, handler } = setup({
    backlogBytesMax: 1_000_000,
    backlogTotalBytesMax: 20_000,
    backlogFairBytes: 5_000,
  });
  const slow = connect();
  slow.socket.flushes = false;
  handler.answerBytes = 6_000;
  for (let i = 0; i < 10; i++) send(slow.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  const slowAnswered = slow.socket.sent.length;
  assert.ok(slowAnswered < 10, `the slow reader is held once the total is over (${slowAnswered} answers)`);
  const fast = connect('10.0.0.2');
  for (let i = 0; i < 10; i++) send(fast.conn!, frame('jobs.show', 'good-bob', { id: 1 }));
  await clock.settle();
  assert.equal(fast.socket.sent.length, 10, 'a client that reads is served');
  slow.socket.flushAll();
  for (let i = 0; i < 20 && slow.socket.sent.length < 10; i++) {
    await clock.settle();
    slow.socket.flushAll();
  }
  assert.equal(slow.socket.sent.length, 10, 'and the slow one once its answers went out');
});

test('each turn starts a bounded number of requests, round robin over the connections', async () => {
  const { clock, connect, handler } = setup({ requestsPerTurn: 10, requestsPerConnectionTurn: 4 });
  handler.hold = true;
  const conns = [connect(), connect(), connect()];
  const ids = conns.map(() => new Set<number>());
  conns.forEach((c, i) => {
    for (let k = 0; k < 30; k++) {
      const text = frame('jobs.show', 'good-alice', { id: 1 });
      ids[i]!.add((JSON.parse(text) as { id: number }).id);
      send(c.conn!, text);
    }
  });
  // First turn: each connection's first request alone (it authenticates the connection).
  await clock.turn();
  assert.equal(handler.served.length, 3);
  // Next turn: requestsPerTurn in all, at most requestsPerConnectionTurn from one connection.
  await clock.turn();
  const turn = handler.served.slice(3);
  assert.equal(turn.length, 10);
  const perConn = ids.map((set) => turn.filter((r) => set.has(r.id)).length);
  assert.ok(
    perConn.every((n) => n >= 2 && n <= 4),
    `round robin, at most 4 each: ${perConn.join(', ')}`,
  );
  assert.ok(clock.pending > 0, 'the rest waits for the next turn (setImmediate)');
  for (let i = 0; i < 100 && conns.some((c) => c.conn!.outstanding > 0); i++) {
    handler.release();
    await clock.settle();
  }
  assert.ok(conns.every((c) => c.socket.sent.length === 30));
});

test('the per-turn time budget ends a turn early', async () => {
  const { clock, connect, handler } = setup({
    requestsPerTurn: 1_000,
    requestsPerConnectionTurn: 1_000,
    turnBudget_ms: 5,
  });
  const { conn } = connect();
  send(conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  handler.hold = true;
  for (let i = 0; i < 50; i++) send(conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  // Each start "costs" 1 ms on the budget clock.
  const real = clock.elapsed.bind(clock);
  let calls = 0;
  clock.elapsed = () => real() + calls++;
  const before = handler.served.length;
  await clock.turn();
  const started = handler.served.length - before;
  assert.ok(started >= 1 && started <= 6, `a 5 ms budget at 1 ms a start: ${started} started`);
  handler.release();
  clock.elapsed = real;
  for (let i = 0; i < 10 && conn!.outstanding > 0; i++) {
    await clock.settle();
    handler.release();
  }
});

test('operations over every job run a few at a time over all connections', async () => {
  const { clock, connect, handler, admission } = setup({ heavyInflightMax: 3 });
  handler.hold = true;
  const conns = [connect(), connect(), connect(), connect()];
  for (const c of conns) for (let i = 0; i < 5; i++) send(c.conn!, frame('jobs.list', 'good-alice'));
  for (const c of conns) send(c.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  assert.equal(admission.heavyInflight, 3);
  for (let i = 0; i < 100 && conns.some((c) => c.conn!.outstanding > 0); i++) {
    handler.release(1);
    await clock.settle();
    assert.ok(admission.heavyInflight <= 3);
  }
  assert.ok(conns.every((c) => c.socket.sent.length === 6));
  assert.equal(handler.listsMax, 3, 'at most 3 lists at once');
});

test('rate limits per user and per address answer rate-limited with a wait, and refill', async () => {
  const { clock, connect, admission } = setup({
    userRate: { burst: 5, refill_ms: 100 },
    addressRate: { burst: 8, refill_ms: 50 },
  });
  const a = connect('10.0.0.1');
  for (let i = 0; i < 7; i++) send(a.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  const codes = a.socket.answers().map((r) => (r.ok ? 'ok' : r.error.code));
  assert.deepEqual(codes, ['ok', 'ok', 'ok', 'ok', 'ok', 'rate-limited', 'rate-limited']);
  const limited = a.socket.answers()[5]!;
  assert.ok(!limited.ok);
  assert.match(
    limited.error.message,
    /too many requests for user alice \(more than 10 a second, api_limits\.requests_per_user\); retry in \d+ ms/,
  );
  assert.ok((limited.error.retryAfter_ms ?? 0) > 0 && (limited.error.retryAfter_ms ?? 0) <= 100);
  // bob from the same address: his own user bucket, but the address's is nearly used up.
  const b = connect('10.0.0.1');
  for (let i = 0; i < 3; i++) send(b.conn!, frame('jobs.show', 'good-bob', { id: 1 }));
  await clock.settle();
  const bob = b.socket.answers().map((r) => (r.ok ? 'ok' : r.error.code));
  assert.deepEqual(bob, ['ok', 'rate-limited', 'rate-limited'], 'the address allowed 8 in all');
  assert.match((b.socket.answers()[1] as { error: { message: string } }).error.message, /from 10\.0\.0\.1/);
  clock.advance(1_000);
  send(a.conn!, frame('jobs.show', 'good-alice', { id: 1 }));
  await clock.settle();
  assert.equal(a.socket.answers().at(-1)!.ok, true, 'the buckets refill');
  assert.equal(admission.stats().rateLimited, 4);
});

test('a frame that is not a request is answered and counts; queued bytes pause the socket, and past the bound close it', async () => {
  const { clock, connect, admission } = setup({ queuedBytesPause: 500, queuedBytesMax: 1_000 });
  const { socket, conn } = connect();
  send(conn!, '{"id": 1, "op": ');
  await clock.settle();
  assert.equal(socket.answers()[0]!.ok, false);
  assert.equal((socket.answers()[0] as { error: { code: string } }).error.code, 'bad-frame');
  const big = 'x'.repeat(600);
  send(conn!, big);
  assert.ok(socket.paused && socket.isOpen(), 'one large frame waiting: not read further');
  send(conn!, big);
  assert.equal(socket.closedWith?.code, CLOSE_POLICY);
  assert.equal(admission.stats().closed['queue-overflow'], 1);
});

test('the log throttle logs once per key per period and says how many it held back', () => {
  const t = new LogThrottle(60_000, 2);
  assert.equal(t.admit('a', 0), 0);
  assert.equal(t.admit('a', 1_000), null);
  assert.equal(t.admit('a', 59_999), null);
  assert.equal(t.admit('b', 2_000), 0);
  assert.equal(t.admit('a', 60_000), 2);
  t.admit('c', 60_001); // bounded: the least recently logged (b) is forgotten
  assert.equal(t.admit('b', 60_002), 0);
});

test('client addresses: an IPv4-mapped IPv6 address is the IPv4 one', () => {
  assert.equal(clientAddress('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(clientAddress('::1'), '::1');
  assert.equal(clientAddress(undefined), 'unknown');
});

test('login: the client address is passed to the login gate, whose per-address limit answers rate-limited', async () => {
  const loaded = loadConfig(testClusterFiles());
  assert.ok(loaded.ok);
  const node = { state: { config: null }, isLeader: () => true } as unknown as ControllerNode;
  const tokens = new TokenAuthority(
    new TextEncoder().encode('api-admission-test-secret-0123456789abcdef'),
    'testcluster',
  );
  const api = new ApiServer(node, tokens, quiet, null, loaded.config);
  let id = 0;
  const login = (user: string, address: string) =>
    api.handle(JSON.stringify({ id: ++id, op: 'login', args: { user, password: 'wrong' } }), address);
  // Spread over five users so that no per-user limit (10) is reached first.
  const users = ['root', 'alice', 'bob', 'carol', 'olga'];
  for (let i = 0; i < LOGIN_ADDRESS_LIMITS.burst; i++) {
    const r = await login(users[i % users.length]!, '10.1.2.3');
    assert.equal(!r.ok && r.error.code, 'unauthenticated');
  }
  const limited = await login('olga', '10.1.2.3');
  assert.ok(!limited.ok);
  assert.equal(limited.error.code, 'rate-limited');
  assert.match(limited.error.message, /too many login attempts from 10\.1\.2\.3/);
  assert.ok((limited.error.retryAfter_ms ?? 0) > 0);
  const other = await login('olga', '10.1.2.4');
  assert.equal(!other.ok && other.error.code, 'unauthenticated', 'another address is not limited');
});

test('the client library waits retryAfter_ms on rate-limited and sends again on the same connection', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/api' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  let connections = 0;
  const seen: number[] = [];
  wss.on('connection', (ws) => {
    connections++;
    ws.on('message', (data) => {
      const req = JSON.parse(data.toString()) as { id: number };
      seen.push(Date.now());
      const answer =
        seen.length <= 2
          ? {
              id: req.id,
              ok: false,
              error: { code: 'rate-limited', message: 'too many requests for user alice', retryAfter_ms: 150 },
            }
          : { id: req.id, ok: true, result: { jobs: [] } };
      ws.send(JSON.stringify(answer));
    });
  });
  const client = new XceClient({
    controllers: [`127.0.0.1:${(wss.address() as AddressInfo).port}`],
    token: 't',
    callDeadline_ms: 5_000,
  });
  try {
    assert.deepEqual(await client.listJobs(), { jobs: [] });
    assert.equal(seen.length, 3);
    assert.ok(
      seen[1]! - seen[0]! >= 140 && seen[2]! - seen[1]! >= 140,
      `waited about retryAfter_ms between tries: ${seen[1]! - seen[0]!}, ${seen[2]! - seen[1]!} ms`,
    );
    assert.equal(connections, 1, 'the same connection');
    // A wait longer than what is left of the call's deadline is not waited for.
    seen.length = 0;
    const short = new XceClient({
      controllers: [`127.0.0.1:${(wss.address() as AddressInfo).port}`],
      token: 't',
      callDeadline_ms: 100,
    });
    await assert.rejects(
      short.listJobs(),
      (e: Error & { code?: string }) => e.code === 'rate-limited' && /deadline/.test(e.message),
    );
    short.close();
  } finally {
    client.close();
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(() => r(undefined)));
  }
});

test('WorkSlicer: due once its slice is used; yield lets a turn of the event loop pass', async () => {
  const s = new WorkSlicer(0);
  assert.equal(s.due(), true);
  let other = false;
  setImmediate(() => (other = true));
  await s.yield();
  assert.equal(other, true, 'what was waiting for the loop ran first');
  assert.equal(new WorkSlicer(60_000).due(), false);
});
