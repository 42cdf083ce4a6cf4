// The limits against abuse added to the client API admission (xce.yaml `api_limits`): the frame
// bucket on a clock passed in, sessions per user, the frame rate per connection, REST connections
// sharing the per-address count, and limits replaced at run time. Pure: fake sockets, a fake
// handler and a hand-driven clock (the rest of the admission is tested in api-admission.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiAdmission,
  CLOSE_TRY_AGAIN,
  FrameBucket,
  admissionLimitsOf,
  bucketOf,
  type AdmissionLimits,
  type ApiConnection,
  type ApiHandler,
  type ApiSocket,
} from './api-admission.js';
import { ManualClock } from '../testing/manual-clock.js';
import { createLogger } from './log.js';
import { API_LIMITS_DEFAULT } from '../model/config-types.js';
import type { Request, Response } from '../api/protocol.js';

class FakeSocket implements ApiSocket {
  readonly sent: string[] = [];
  paused = false;
  pauses = 0;
  closedWith: { code: number; reason: string } | null = null;
  send(text: string, done: (err?: Error) => void): void {
    this.sent.push(text);
    queueMicrotask(() => done());
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
  }
  close(code: number, reason: string): void {
    this.closedWith ??= { code, reason };
  }
  terminate(): void {}
  isOpen(): boolean {
    return this.closedWith === null;
  }
  answers(): Response[] {
    return this.sent.map((t) => JSON.parse(t) as Response).sort((a, b) => a.id - b.id);
  }
}

const handler: ApiHandler = {
  async authenticate(req: Request) {
    if (req.token?.startsWith('good-')) return { user: req.token.slice(5) };
    return { error: { code: 'unauthenticated', message: 'no token: log in first' } };
  },
  async serve(req: Request): Promise<Response> {
    if (req.op === 'login')
      return {
        id: req.id,
        ok: true,
        result: { token: `good-${req.args.user}`, user: req.args.user, expiresIn_s: 3600 },
      };
    return { id: req.id, ok: true, result: {} };
  },
};

const quiet = createLogger({ component: 'api' }, { sink: { write: () => undefined } });

function setup(limits: Partial<AdmissionLimits> = {}) {
  const clock = new ManualClock();
  const admission = new ApiAdmission(quiet, limits, clock);
  const connect = (address = '10.0.0.1'): { socket: FakeSocket; conn: ApiConnection | null } => {
    const socket = new FakeSocket();
    return { socket, conn: admission.accept(socket, address, handler) };
  };
  return { clock, admission, connect };
}

let nextId = 0;
function send(conn: ApiConnection, op: string, token: string | null, args: Record<string, unknown> = {}): void {
  const text = JSON.stringify({ id: ++nextId, op, ...(token !== null ? { token } : {}), args });
  conn.receive(text, Buffer.byteLength(text));
}

test('FrameBucket: a burst goes through, then the debt of every frame over it is the wait', () => {
  const b = new FrameBucket({ burst: 3, refill_ms: 100 }, 0);
  assert.deepEqual([b.take(0), b.take(0), b.take(0)], [0, 0, 0], 'the burst');
  assert.equal(b.take(0), 100, 'one frame over: one refill');
  assert.equal(b.take(0), 200, 'two over: two refills (a frame read is counted whatever the wait)');
  assert.equal(b.take(250), 50, 'paid back 2.5 of the 3 owed; this frame owes again');
  assert.equal(b.take(1_000), 0, 'out of debt after its wait');
  assert.equal(b.take(100_000), 0);
  assert.equal(b.take(100_000), 0);
  assert.equal(b.take(100_000), 0, 'refilled to the burst, not beyond');
  assert.equal(b.take(100_000), 100);
});

test('api_limits of xce.yaml become the admission bounds (rates as buckets)', () => {
  const l = admissionLimitsOf(API_LIMITS_DEFAULT);
  assert.equal(l.connectionsPerAddressMax, 512);
  assert.equal(l.sessionsPerUserMax, 512);
  assert.equal(l.authDeadline_ms, 10_000);
  assert.deepEqual(l.userRate, { burst: 40_000, refill_ms: 0.05 });
  assert.deepEqual(bucketOf({ rate: 4, burst: 1 }), { burst: 1, refill_ms: 250 });
});

test('sessions per user: one more authenticated connection is answered naming the limit, then closed; a closed one frees its session', async () => {
  const { clock, admission, connect } = setup({ sessionsPerUserMax: 2 });
  const a = connect();
  const b = connect('10.0.0.2');
  send(a.conn!, 'jobs.show', 'good-alice', { id: 1 });
  send(b.conn!, 'login', null, { user: 'alice', password: 'x' });
  await clock.settle();
  assert.equal(admission.sessionsOf('alice'), 2);
  const c = connect('10.0.0.3');
  send(c.conn!, 'jobs.show', 'good-alice', { id: 1 });
  await clock.settle();
  const refused = c.socket.answers()[0]!;
  assert.ok(!refused.ok);
  assert.equal(refused.error.code, 'unavailable');
  assert.match(
    refused.error.message,
    /too many sessions of user alice \(api_limits\.sessions_per_user: 2\): close some/,
  );
  assert.equal(c.socket.closedWith?.code, CLOSE_TRY_AGAIN);
  assert.match(c.socket.closedWith!.reason, /too many sessions of user alice/);
  // A login over the limit: the answer is the refusal, not a token.
  const d = connect('10.0.0.4');
  send(d.conn!, 'login', null, { user: 'alice', password: 'x' });
  await clock.settle();
  const login = d.socket.answers()[0]!;
  assert.ok(!login.ok && login.error.code === 'unavailable');
  assert.equal(d.socket.closedWith?.code, CLOSE_TRY_AGAIN);
  // Another user is not affected; alice gets a session back when one of hers closes.
  const e = connect();
  send(e.conn!, 'jobs.show', 'good-bob', { id: 1 });
  await clock.settle();
  assert.equal(e.socket.answers()[0]!.ok, true);
  a.conn!.closedBySocket();
  assert.equal(admission.sessionsOf('alice'), 1);
  const f = connect();
  send(f.conn!, 'jobs.show', 'good-alice', { id: 1 });
  await clock.settle();
  assert.equal(f.socket.answers()[0]!.ok, true);
  const s = admission.stats();
  assert.equal(s.refusedBy['sessions-per-user'], 2);
  assert.equal(s.closed['sessions-per-user'], 2);
});

test('frames over the per-connection rate pause the socket until the excess is paid back; all are still served', async () => {
  const { clock, admission, connect } = setup({ frameRate: { burst: 10, refill_ms: 100 } });
  const { socket, conn } = connect();
  for (let i = 0; i < 10; i++) send(conn!, 'jobs.show', 'good-alice', { id: 1 });
  assert.equal(socket.paused, false, 'the burst is read');
  for (let i = 0; i < 5; i++) send(conn!, 'jobs.show', 'good-alice', { id: 1 });
  assert.equal(socket.paused, true, 'over the rate: not read');
  await clock.settle();
  assert.equal(socket.sent.length, 15, 'frames already read are served');
  assert.equal(socket.paused, true, 'still owing 5 frames');
  clock.advance(499);
  assert.equal(socket.paused, true);
  clock.advance(1);
  assert.equal(socket.paused, false, 'read again once paid back (5 x 100 ms)');
  const s = admission.stats();
  assert.equal(s.framesThrottled, 5);
  assert.equal(s.throttles, 1, 'one throttle for the whole excess');
  // Another connection has its own bucket.
  const other = connect();
  send(other.conn!, 'jobs.show', 'good-alice', { id: 1 });
  assert.equal(other.socket.paused, false);
});

test('REST connections share the per-address count with /api connections', () => {
  const { admission, connect } = setup({ connectionsPerAddressMax: 3 });
  assert.equal(admission.acceptRest('10.0.0.7'), null);
  assert.equal(admission.acceptRest('10.0.0.7'), null);
  assert.ok(connect('10.0.0.7').conn);
  const ws = connect('10.0.0.7');
  assert.equal(ws.conn, null, 'the fourth, a WebSocket, is refused');
  assert.match(
    admission.acceptRest('10.0.0.7') ?? '',
    /too many connections from 10\.0\.0\.7 \(api_limits\.connections_per_address: 3\)/,
  );
  admission.releaseRest('10.0.0.7');
  assert.equal(admission.stats().restConnections, 1);
  assert.ok(connect('10.0.0.7').conn, 'a REST connection closed frees its slot');
  assert.equal(admission.stats().refusedBy['connections-per-address'], 2);
});

test('new limits apply at once to new connections; the counts carry on', async () => {
  const { clock, admission, connect } = setup({ connectionsPerAddressMax: 1 });
  assert.ok(connect().conn);
  assert.equal(connect().conn, null);
  admission.setLimits({ connectionsPerAddressMax: 2, userRate: { burst: 1, refill_ms: 1_000 } });
  const b = connect();
  assert.ok(b.conn, 'the raised bound admits one more');
  assert.equal(connect().conn, null);
  send(b.conn!, 'jobs.show', 'good-carol', { id: 1 });
  send(b.conn!, 'jobs.show', 'good-carol', { id: 1 });
  await clock.settle();
  assert.deepEqual(
    b.socket.answers().map((r) => (r.ok ? 'ok' : r.error.code)),
    ['ok', 'rate-limited'],
  );
  assert.equal(admission.stats().refused, 2);
});
