// Limits against abuse (xce.yaml `api_limits`, daemon/api-admission.ts) on a real controller, set
// low in its xce.yaml: too many connections from one address are refused with the limit's name and
// value, a flood of frames on one connection is throttled (its socket not read for a while) and
// still answered, an idle unauthenticated socket is closed at the deadline, a user over its
// sessions is refused, REST answers 429 with Retry-After as problem+json, the metrics count it all,
// and a legitimate client is served throughout. Attackers bind other loopback addresses
// (127.0.0.2, ...: Linux routes all of 127/8 to lo), so that the legitimate client on 127.0.0.1 is
// a different source address.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import WebSocket from 'ws';
import { TestCluster, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { CLOSE_POLICY, CLOSE_TRY_AGAIN } from '../daemon/api-admission.js';

const LIMITS = [
  'api_limits:',
  '  connections_per_address: 4',
  '  sessions_per_user: 3',
  '  requests_per_address: { rate: 1, burst: 20 }',
  '  frames_per_connection: { rate: 100, burst: 20 }',
  '  auth_deadline: 2s',
].join('\n');

let cluster: TestCluster;
let alice: XceClient;
let bobToken: string;

interface Raw {
  readonly ws: WebSocket;
  readonly answers: Array<{ id: number; ok: boolean; error?: { code: string; message: string } }>;
  readonly closed: Promise<{ code: number; reason: string }>;
}

/** A raw /api connection from `localAddress`; resolves once open (or closed at once by the server). */
async function raw(localAddress: string): Promise<Raw> {
  const ws = new WebSocket(`ws://${cluster.address(1)}/api`, { localAddress, handshakeTimeout: 5_000 });
  ws.on('error', () => undefined);
  const r: Raw = {
    ws,
    answers: [],
    closed: new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
  };
  ws.on('message', (d: Buffer) => r.answers.push(JSON.parse(d.toString('utf8')) as Raw['answers'][number]));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('close', () => resolve());
    ws.once('error', reject);
  });
  return r;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

async function legitimateSubmit(): Promise<void> {
  const r = (await alice.submit({ command: ['true'] })) as { jobId: number };
  assert.ok(r.jobId > 0, `the legitimate submit is acknowledged: ${JSON.stringify(r)}`);
}

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://${cluster.address(1)}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** GET `path` from `localAddress` with bob's token on a fresh connection: status, headers, body. */
function restGet(
  localAddress: string,
  path: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const [host, port] = cluster.address(1).split(':');
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port: Number(port), path, localAddress, agent: false, headers: { authorization: `Bearer ${bobToken}` } },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('REST request timed out')));
    req.end();
  });
}

before(async () => {
  cluster = await TestCluster.start({
    controllers: 1,
    insecure: true,
    edit: { 'xce.yaml': (t) => `${t}\n${LIMITS}\n` },
  });
  alice = await cluster.client('alice');
  bobToken = (await cluster.client('bob')).token!;
  await legitimateSubmit();
});

after(async () => {
  await cluster?.stop();
});

test('too many connections from one address: the one over is closed naming the limit; the legitimate client is served', async () => {
  const held = await Promise.all(Array.from({ length: 4 }, () => raw('127.0.0.2')));
  const over = await raw('127.0.0.2');
  const closed = await within(over.closed, 10_000, 'the connection over the limit to be closed');
  assert.equal(closed.code, CLOSE_TRY_AGAIN);
  assert.equal(
    closed.reason,
    'too many connections from 127.0.0.2 (api_limits.connections_per_address: 4): close some',
  );
  await legitimateSubmit();
  assert.ok((await metric('xce_api_connections_refused_total', 'reason="connections-per-address"')) >= 1);
  assert.ok((await metric('xce_api_connections', 'kind="unauthenticated"')) >= 4);
  // The idle, unauthenticated ones are closed at the deadline (2 s), saying why.
  for (const h of held) {
    const c = await within(h.closed, 15_000, 'an idle unauthenticated connection to be closed');
    assert.equal(c.code, CLOSE_POLICY);
    assert.match(c.reason, /not logged in within 2 s \(api_limits\.auth_deadline\): log in \(or send a token\) first/);
  }
  assert.ok((await metric('xce_api_connections_closed_total', 'reason="auth-deadline"')) >= 4);
  // Their slots are free again.
  const again = await raw('127.0.0.2');
  assert.equal(again.ws.readyState, WebSocket.OPEN);
  again.ws.close();
});

test('a flood of frames on one connection is throttled and answered; the legitimate client is served meanwhile', async () => {
  const f = await raw('127.0.0.3');
  const FRAMES = 300;
  for (let i = 1; i <= FRAMES; i++) f.ws.send(JSON.stringify({ id: i, op: 'queues.list', token: bobToken, args: {} }));
  await legitimateSubmit();
  await until(
    `${FRAMES} answers on the flooding connection`,
    async () => f.answers.length >= FRAMES || undefined,
    60_000,
    50,
  );
  assert.equal(f.ws.readyState, WebSocket.OPEN, 'throttled, not closed');
  const codes = new Set(f.answers.map((a) => (a.ok ? 'ok' : a.error?.code)));
  assert.ok(
    [...codes].every((c) => c === 'ok' || c === 'rate-limited'),
    [...codes].join(', '),
  );
  const limited = f.answers.find((a) => !a.ok);
  assert.ok(limited, 'requests over api_limits.requests_per_address are answered rate-limited');
  assert.match(
    limited.error!.message,
    /too many requests from 127\.0\.0\.3 \(more than 1 a second, api_limits\.requests_per_address\); retry in \d+ ms/,
  );
  assert.ok((await metric('xce_api_frames_throttled_total')) > 0, 'frames over 100 a second were throttled');
  assert.ok((await metric('xce_api_rate_limited_total', 'limit="address"')) > 0);
  f.ws.close();
  await within(f.closed, 10_000, 'the flooding connection to close');
});

test('a user over sessions_per_user is refused naming the limit', async () => {
  // bob holds one session already (his client of before()): two more are let in, the third refused.
  const bobs = await Promise.all(['127.0.0.4', '127.0.0.5', '127.0.0.6'].map((a) => raw(a)));
  bobs.forEach((b, i) => b.ws.send(JSON.stringify({ id: i + 1, op: 'queues.list', token: bobToken, args: {} })));
  await until('3 answers', async () => bobs.every((b) => b.answers.length === 1) || undefined, 20_000, 50);
  const refused = bobs.filter((b) => !b.answers[0]!.ok);
  assert.equal(refused.length, 1, 'three sessions of bob, the fourth refused');
  assert.equal(refused[0]!.answers[0]!.error?.code, 'unavailable');
  assert.match(
    refused[0]!.answers[0]!.error!.message,
    /too many sessions of user bob \(api_limits\.sessions_per_user: 3\)/,
  );
  const c = await within(refused[0]!.closed, 10_000, 'the refused session to be closed');
  assert.equal(c.code, CLOSE_TRY_AGAIN);
  assert.ok((await metric('xce_api_connections_refused_total', 'reason="sessions-per-user"')) >= 1);
  for (const b of bobs) b.ws.close();
  await legitimateSubmit();
});

test('REST: over the request rate of an address, 429 with Retry-After as problem+json naming the limit', async () => {
  const answers = [];
  for (let i = 0; i < 40; i++) answers.push(await restGet('127.0.0.8', '/v1/queues'));
  assert.equal(answers[0]!.status, 200);
  const limited = answers.find((a) => a.status === 429);
  assert.ok(
    limited,
    `40 requests from one address, more than its burst of 20 and its rate of 1 a second: ${answers.map((a) => a.status)}`,
  );
  assert.equal(limited.headers['content-type'], 'application/problem+json');
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  const p = JSON.parse(limited.body) as { code: string; detail: string; status: number };
  assert.equal(p.code, 'rate-limited');
  assert.match(
    p.detail,
    /too many requests from 127\.0\.0\.8 \(more than 1 a second, api_limits\.requests_per_address\)/,
  );
  await legitimateSubmit();
});

test('REST: connections from one address count with its /api connections', async () => {
  const held = await Promise.all(Array.from({ length: 4 }, () => raw('127.0.0.9')));
  const r = await restGet('127.0.0.9', '/v1/queues');
  assert.equal(r.status, 429);
  assert.equal(r.headers['connection'], 'close');
  assert.match(
    (JSON.parse(r.body) as { detail: string }).detail,
    /too many connections from 127\.0\.0\.9 \(api_limits\.connections_per_address: 4\)/,
  );
  for (const h of held) h.ws.close();
});
