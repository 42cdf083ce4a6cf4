// Floods against the leader's client API (issue 21 item 3, "outsiders starve the leader"), with
// three real xcectld processes. Before the admission limits (daemon/api-admission.ts):
// 4,000 unauthenticated `jobs.list` frames on one connection cost the leader its leadership every
// time, and 20 connections x 4,000 requests whose answers were never read grew the leader to
// 1.49 GB and cost it its leadership too. For each flood: the leader and its term do not change,
// a legitimate submit made during the flood is acknowledged, and the flooding sockets are cut
// off as designed (closed, or no longer read). Over TLS, as every link is (issue 19): a flooder that
// does not read its TLS socket leaves the leader's writes unconfirmed, which is what the admission
// counts as unsent. The legitimate submit's latency is printed, not asserted (benchmarks/README.md,
// "Floods").
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { TestCluster, until } from '../harness/cluster.js';
import type { XceClient } from '../cli/client.js';
import { API_UNAUTHENTICATED_REQUESTS_MAX, CLOSE_POLICY, type ApiAdmissionStats } from '../daemon/api-admission.js';

/** Jobs in the cluster before the floods: each `jobs.list` answer is then about 75 KB, so
 * answers nobody reads pile up fast (the 1.49 GB case). */
const JOBS = 300;
/** Frames each flooding connection sends. */
const FRAMES = 4_000;

let cluster: TestCluster;
let alice: XceClient;
let bobToken: string;

interface Health {
  id: number;
  leader: number;
  term: number;
  pid: number;
  api?: ApiAdmissionStats;
}

async function health(id: number): Promise<Health> {
  return cluster.getJson<Health>(id, '/healthz');
}

/** Every controller's view of the leader and the term. */
async function leadership(): Promise<Array<{ id: number; leader: number; term: number }>> {
  return Promise.all(
    [...cluster.ports.keys()].map(async (id) => {
      const h = await health(id);
      return { id: h.id, leader: h.leader, term: h.term };
    }),
  );
}

/** No election happened: the same leader and term on every controller (else the controllers' last log lines, to see why). */
async function sameLeadership(was: Array<{ id: number; leader: number; term: number }>): Promise<void> {
  const now = await leadership();
  if (JSON.stringify(now) !== JSON.stringify(was))
    assert.fail(`leadership changed: ${JSON.stringify(was)} -> ${JSON.stringify(now)}\n${cluster.dumpLogs()}`);
}

/** A submit by alice (a token she got before the flood) through the client library; its latency in ms. */
async function legitimateSubmit(): Promise<number> {
  const t0 = performance.now();
  const r = (await alice.submit({ command: ['true'] })) as { jobId: number };
  const ms = performance.now() - t0;
  assert.ok(r.jobId > 0, `the submit is acknowledged with a job id: ${JSON.stringify(r)}`);
  return ms;
}

interface Flooder {
  readonly ws: WebSocket;
  answers: number;
  readonly closed: Promise<{ code: number; reason: string }>;
}

/**
 * A raw connection to the leader's /api; `read: false` never reads the socket (the client's TCP is
 * paused). `leader`: found once per flood (asking /healthz from 20 flooders at once under load can
 * time out and find none).
 */
async function flooder(read: boolean, leader: number): Promise<Flooder> {
  const ws = new WebSocket(cluster.url(leader, '/api'), { handshakeTimeout: 5_000, ...(cluster.dialTls() ?? {}) });
  ws.on('error', () => undefined);
  const f: Flooder = {
    ws,
    answers: 0,
    closed: new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
  };
  ws.on('message', () => f.answers++);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  if (!read) ws.pause();
  return f;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}

async function leaderStats(): Promise<ApiAdmissionStats> {
  const h = await health(await cluster.leader());
  assert.ok(h.api !== undefined, '/healthz reports the API admission figures');
  return h.api;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : -1;
}

before(async () => {
  cluster = await TestCluster.start({ controllers: 3 });
  alice = await cluster.client('alice');
  const bob = await cluster.client('bob');
  bobToken = bob.token!;
  // JOBS pending jobs, 16 submits at a time (no worker runs them).
  const writers = await Promise.all(Array.from({ length: 16 }, () => cluster.client('alice')));
  let next = 0;
  await Promise.all(
    writers.map(async (w) => {
      while (next < JOBS) {
        next++;
        await w.submit({ command: ['sleep', '1000'], name: 'flood-ballast' });
      }
    }),
  );
  await legitimateSubmit(); // warm: alice's connection is open and authenticated before the floods
});

after(async () => {
  await cluster?.stop();
});

test('one unauthenticated connection sending 4,000 jobs.list frames is closed after a few; the leader stays', async () => {
  const was = await leadership();
  const f = await flooder(true, await cluster.waitForLeader());
  const t0 = performance.now();
  for (let i = 1; i <= FRAMES; i++) f.ws.send(JSON.stringify({ id: i, op: 'jobs.list', args: {} }));
  const ms = await legitimateSubmit();
  const closed = await within(f.closed, 15_000, 'the unauthenticated flooder to be closed');
  const closedAfter = performance.now() - t0;
  assert.equal(closed.code, CLOSE_POLICY, `closed with a policy violation: ${JSON.stringify(closed)}`);
  assert.match(closed.reason, /log in/);
  assert.ok(
    f.answers <= API_UNAUTHENTICATED_REQUESTS_MAX,
    `at most ${API_UNAUTHENTICATED_REQUESTS_MAX} frames answered before the close, not ${f.answers}`,
  );
  await new Promise((r) => setTimeout(r, 1_000)); // an election the flood caused would show by now
  await sameLeadership(was);
  console.log(
    `flood 1 (1 unauthenticated connection x ${FRAMES} jobs.list): legitimate submit acknowledged in ${ms.toFixed(1)} ms; flooder answered ${f.answers} times, then closed after ${closedAfter.toFixed(0)} ms (${closed.code} "${closed.reason}")`,
  );
});

test('300 wrong-password logins from 10 connections: each connection is closed after a few; the leader stays', async () => {
  const was = await leadership();
  const leader = await cluster.waitForLeader();
  const floods = await Promise.all(Array.from({ length: 10 }, () => flooder(true, leader)));
  for (const f of floods)
    for (let i = 1; i <= 30; i++)
      f.ws.send(JSON.stringify({ id: i, op: 'login', args: { user: 'admin', password: `guess-${i}` } }));
  const ms = await legitimateSubmit();
  const closed = await within(Promise.all(floods.map((f) => f.closed)), 20_000, 'the login flooders to be closed');
  for (const c of closed) {
    assert.equal(c.code, CLOSE_POLICY, JSON.stringify(c));
    assert.match(c.reason, /log in/);
  }
  const answered = floods.reduce((n, f) => n + f.answers, 0);
  assert.ok(
    answered <= 10 * API_UNAUTHENTICATED_REQUESTS_MAX,
    `at most ${API_UNAUTHENTICATED_REQUESTS_MAX} logins answered per connection (${answered} in all)`,
  );
  await new Promise((r) => setTimeout(r, 1_000));
  await sameLeadership(was);
  console.log(
    `flood 2 (10 connections x 30 wrong-password logins): legitimate submit acknowledged in ${ms.toFixed(1)} ms; ${answered} logins answered, all 10 connections closed`,
  );
});

test('20 authenticated connections x 4,000 jobs.list whose answers are never read stop being served; the leader stays', async () => {
  const was = await leadership();
  const leaderPid = (await health(was[0]!.leader)).pid;
  const stalls0 = (await leaderStats()).stalls;
  const leader = await cluster.waitForLeader();
  const floods = await Promise.all(Array.from({ length: 20 }, () => flooder(false, leader)));
  try {
    for (const f of floods)
      for (let i = 1; i <= FRAMES; i++)
        f.ws.send(JSON.stringify({ id: i, op: 'jobs.list', token: bobToken, args: {} }));
    const ms = await legitimateSubmit();
    // Each flooding connection's unread answers reach the backlog bound: the leader stops serving it.
    const stats = await until(
      'every flooding connection to be stalled on its unread answers',
      async () => {
        const s = await leaderStats();
        return s.stalls - stalls0 >= floods.length ? s : undefined;
      },
      30_000,
      100,
    ).catch(async (err: Error) => {
      assert.fail(
        `${err.message}; leadership ${JSON.stringify(await leadership())} (was ${JSON.stringify(was)})\n${cluster.dumpLogs()}`,
      );
    });
    const after = await legitimateSubmit();
    const rss = rssMiB(leaderPid);
    assert.ok(
      stats.stalled >= floods.length,
      `the flooders are not served while their answers are unread: ${JSON.stringify(stats)}`,
    );
    assert.ok(stats.paused >= floods.length, `their sockets are not read: ${JSON.stringify(stats)}`);
    await new Promise((r) => setTimeout(r, 1_000));
    await sameLeadership(was);
    // The backlog bound holds memory: far below the 1.49 GB of before (a loose bound, not a measurement).
    assert.ok(rss < 1024, `the leader's resident memory stays bounded: ${rss} MiB`);
    console.log(
      `flood 3 (20 authenticated connections x ${FRAMES} jobs.list, answers never read): legitimate submit acknowledged in ${ms.toFixed(1)} ms during, ${after.toFixed(1)} ms once the flooders were stalled; leader RSS ${rss} MiB; backlog ${(stats.backlogBytes / 1048576).toFixed(1)} MiB over ${stats.stalled} stalled connections`,
    );
  } finally {
    for (const f of floods) f.ws.terminate();
  }
});
