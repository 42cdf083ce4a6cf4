// A registration storm on a leader with a small bound (xce.yaml `worker_registrations`, issue 14):
// 40 hosts dial the three real controllers at once; the leader handles 2 handshakes or registers a
// turn with at most 4 waiting and answers the others `busy`, which their leader links (the real
// worker code, in this process) wait out before dialling it again. Every host ends registered with
// that same leader, at the term it had before the storm (taken once the startup elections were
// over): the storm caused no leader change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestCluster, until } from '../harness/cluster.js';
import { deriveClusterKeys, hostCredentialKey } from '../daemon/keys.js';
import { LeaderLink } from '../daemon/worker/leader-link.js';
import { idleLinkHandler, silentLog } from '../testing/worker-fixtures.js';

const HOSTS = 40;
const hostName = (i: number): string => `storm${String(i).padStart(2, '0')}`;

/** A metric's value in a controller's /metrics text (0 when absent). */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The leader once the configuration is applied and the leader and term have held for `hold_ms` (startup elections over). */
async function settledLeader(cluster: TestCluster, hold_ms = 2_000): Promise<{ id: number; term: number }> {
  await cluster.client('alice'); // a login: users.yaml, so the configuration, is applied
  let seen = { id: 0, term: -1, since: 0 };
  return until(
    'a settled leader',
    async () => {
      const id = await cluster.leader();
      const term = id === 0 ? -1 : (await cluster.getJson<{ term: number }>(id, '/healthz')).term;
      if (id !== seen.id || term !== seen.term) seen = { id, term, since: Date.now() };
      return id > 0 && Date.now() - seen.since >= hold_ms ? { id, term } : undefined;
    },
    60_000,
    100,
  );
}

function links(cluster: TestCluster): LeaderLink[] {
  const root = deriveClusterKeys(cluster.rootSecret()).workerRoot;
  return Array.from({ length: HOSTS }, (_, i) => {
    const host = hostName(i);
    return new LeaderLink(
      {
        controllers: cluster.addresses(),
        host,
        resources: { slots: 8, mem_bytes: 64 * 1024 ** 3, booleans: ['ib', 'x86_64'], numerics: { mem: 65536 } },
        version: 'test',
        credential: { host, epoch: 0, key: hostCredentialKey(root, host, 0) },
        tls: null,
        random: Math.random,
        now: Date.now,
      },
      silentLog(host),
      idleLinkHandler(),
    );
  });
}

test('more simultaneous registrations than the bound: the rest are told busy, all end registered, no leader change', async () => {
  const hostsYaml = Array.from(
    { length: HOSTS },
    (_, i) =>
      `  - { name: ${hostName(i)}, slots: 8, mem: 64G, resources: [ib, x86_64], numeric: { mem: 65536 }, strings: { rack: r1 } }`,
  ).join('\n');
  const cluster = await TestCluster.start({
    controllers: 3,
    insecure: true,
    edit: {
      'xce.yaml': (t) => `${t.trimEnd()}\nworker_registrations: { per_turn: 2, queued_max: 4 }\n`,
      'hosts.yaml': (t) => `${t.trimEnd()}\n${hostsYaml}\n`,
    },
  });
  const fleet = links(cluster);
  try {
    const { id: leader, term: termBefore } = await settledLeader(cluster);
    for (const l of fleet) l.connect();
    await until('every host registered', () => fleet.every((l) => l.isRegistered()) || undefined, 90_000, 50);
    const texts = await Promise.all([1, 2, 3].map((id) => cluster.getText(id, '/metrics')));
    // Followers bound their handshakes too (a worker may dial one first): the busy answers of all three.
    const deferred = texts.reduce((n, t) => n + metric(t, 'xce_worker_registrations_deferred_total'), 0);
    const busy = fleet.reduce((n, l) => n + l.busyAnswers, 0);
    assert.ok(busy > 0, 'some hosts were answered busy');
    assert.ok(deferred > 0, `the controllers counted their busy answers (${deferred}; the hosts saw ${busy})`);
    assert.deepEqual(new Set(fleet.map((l) => l.leaderId)), new Set([leader]), 'every host is registered with it');
    assert.equal(await cluster.leader(), leader, 'the same leader');
    assert.equal(
      metric(texts[leader - 1]!, 'xce_raft_term'),
      termBefore,
      'at the same term: no election during the storm',
    );
  } catch (err) {
    process.stderr.write(cluster.dumpLogs() + '\n');
    throw err;
  } finally {
    for (const l of fleet) l.close();
    await cluster.stop();
  }
});
