// TLS sessions resumed from one controller on another (tls-resumption.ts), on real TLS ports on
// 127.0.0.1: a worker's agent offers the session any controller gave it; a port with the same
// ticket root and period resumes it, any other makes a full handshake with the certificate
// verified, and a session never stands in for a certificate the CA did not sign.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDevTls, type DevTls } from '../harness/dev-tls.js';
import { ControllerPort } from './http-server.js';
import { dialAgent, httpGet } from './handshake.js';
import { deriveClusterKeys, tlsTicketKeys } from './keys.js';
import { ResumingAgent, TicketKeyRotation, TLS_TICKET_PERIOD_MS } from './tls-resumption.js';

const dir = mkdtempSync(join(tmpdir(), 'xce-tls-resume-'));
const cluster = makeDevTls(join(dir, 'cluster'), 'resume-test');
const impostor = makeDevTls(join(dir, 'impostor'), 'impostor');
const rootOf = (secret: string): Uint8Array =>
  deriveClusterKeys(new TextEncoder().encode(secret.padEnd(40, '.'))).tlsTicketRoot;
const ROOT = rootOf('the cluster secret');
const DAY_10 = 10 * TLS_TICKET_PERIOD_MS + 3_600_000;

async function port(
  tls: DevTls,
  ticketRoot: Uint8Array | undefined,
  now_ms = DAY_10,
): Promise<[ControllerPort, string]> {
  const p = new ControllerPort(
    { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile), ...(ticketRoot ? { ticketRoot } : {}) },
    () => now_ms,
  );
  p.onGet('/ping', (_req, res) => void res.writeHead(200).end('pong'));
  const a = await p.listen('127.0.0.1', 0);
  return [p, `127.0.0.1:${a.port}`];
}

const dialTls = { ca: readFileSync(cluster.caFile) };
const get = (address: string, agent: ResumingAgent) => httpGet(address, '/ping', dialTls, 5_000, 64, agent);

/** A worker link's agent (handshake.ts dialAgent): over TLS, one that offers sessions across controllers. */
function linkAgent(): ResumingAgent {
  const agent = dialAgent(dialTls);
  assert.ok(agent instanceof ResumingAgent, 'a TLS dialler offers sessions across controllers');
  return agent;
}

test('a session one controller gave resumes on another controller of the cluster, in the same period', async () => {
  const [a, aAddr] = await port(cluster, ROOT);
  const [b, bAddr] = await port(cluster, ROOT);
  const agent = linkAgent();
  try {
    assert.equal((await get(aAddr, agent)).body, 'pong');
    assert.deepEqual([a.handshakes.full, a.handshakes.resumed], [1, 0], 'the first dial: a full handshake');
    assert.ok(agent.hasSession(), 'the controller gave a session');
    assert.equal((await get(bAddr, agent)).body, 'pong');
    assert.deepEqual(
      [b.handshakes.full, b.handshakes.resumed],
      [0, 1],
      "the other controller resumed the first's session",
    );
    agent.destroy();
    const again = linkAgent();
    await get(bAddr, again);
    assert.deepEqual([b.handshakes.full, b.handshakes.resumed], [1, 1], 'a new agent has no session to offer');
    again.destroy();
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('another cluster, another period, or no shared keys: a full handshake, the certificate verified', async () => {
  const [a, aAddr] = await port(cluster, ROOT);
  const others = [
    await port(cluster, rootOf('another cluster secret')),
    await port(cluster, ROOT, DAY_10 + TLS_TICKET_PERIOD_MS),
    await port(cluster, undefined),
  ];
  try {
    for (const [other, address] of others) {
      const agent = linkAgent();
      await get(aAddr, agent);
      assert.equal((await get(address, agent)).body, 'pong', 'the dial succeeds');
      assert.deepEqual([other.handshakes.full, other.handshakes.resumed], [1, 0], `${address}: not resumed`);
      other.handshakes.full = 0;
      agent.destroy();
    }
  } finally {
    await Promise.all([a.close(), ...others.map(([p]) => p.close())]);
  }
});

test('a session never stands in for a certificate the CA did not sign', async () => {
  const [a, aAddr] = await port(cluster, ROOT);
  // A server of another CA, without the cluster's ticket keys: the session offered is not accepted,
  // the handshake is a full one, and the server's certificate fails verification.
  const [fake, fakeAddr] = await port(impostor, undefined);
  const agent = linkAgent();
  try {
    await get(aAddr, agent);
    assert.ok(agent.hasSession());
    await assert.rejects(get(fakeAddr, agent), /certificate/i, 'the impostor is refused');
    assert.equal(fake.handshakes.resumed, 0);
  } finally {
    agent.destroy();
    await Promise.all([a.close(), fake.close()]);
  }
});

test("the ticket keys are the period's, set again when the next period starts", () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  const set: Buffer[] = [];
  let now_ms = DAY_10;
  const rotation = new TicketKeyRotation({ setTicketKeys: (k) => void set.push(k) }, ROOT, () => now_ms);
  try {
    rotation.start();
    assert.deepEqual(set, [tlsTicketKeys(ROOT, 10)]);
    const untilNext_ms = 11 * TLS_TICKET_PERIOD_MS - DAY_10;
    now_ms += untilNext_ms - 1;
    mock.timers.tick(untilNext_ms - 1);
    assert.equal(set.length, 1, 'not before the period ends');
    now_ms += 2;
    mock.timers.tick(2);
    assert.deepEqual(set, [tlsTicketKeys(ROOT, 10), tlsTicketKeys(ROOT, 11)], 'the next period, its keys');
    assert.notDeepEqual(set[0], set[1]);
    rotation.stop();
    mock.timers.tick(2 * TLS_TICKET_PERIOD_MS);
    assert.equal(set.length, 2, 'stopped: no more changes');
  } finally {
    rotation.stop();
    mock.timers.reset();
  }
});
