// Three controller nodes in one process on 127.0.0.1 with real WALs, snapshot stores and sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../harness/ports.js';
import {
  ControllerFatalError,
  ControllerNode,
  NodeUnavailableError,
  ProposalRejectedError,
  type ControllerNodeOptions,
} from './controller-node.js';
import { ApiServer } from './api-server.js';
import { TokenAuthority } from './auth.js';
import { StateType } from '../raft/raft.js';
import { WalGapError } from '../wal/errors.js';
import { ControllerPort } from './http-server.js';
import { createLogger } from './log.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import { snapshot } from '../statemachine/snapshot.js';
import { SnapshotStore } from '../wal/snapshot-store.js';
import { ConfChangeType } from '../raft/confchange.js';
import type { Fact } from '../statemachine/facts.js';
import { jobSpec } from '../testing/test-cluster.js';
import type { ControllerAddress } from '../model/config-types.js';

const secret = new TextEncoder().encode('controller-node-test-secret-0123456789');
const configDir = new URL('../../configs/', import.meta.url).pathname;

interface Member {
  node: ControllerNode;
  port: ControllerPort;
  dataDir: string;
}

type MemberOptions = Pick<
  ControllerNodeOptions,
  | 'snapshotEveryEntries'
  | 'snapshotSliceJobs'
  | 'snapshotSliceMs'
  | 'snapshotBetweenSlices'
  | 'join'
  | 'walFailSave'
  | 'walSegmentBytes'
>;

async function startMember(
  id: number,
  controllers: ControllerAddress[],
  dataDir: string,
  opts: MemberOptions = {},
): Promise<Member> {
  const node = new ControllerNode({
    id,
    dataDir,
    bootstrapControllers: controllers,
    secret,
    log: createLogger(
      { node: id },
      process.env['XCE_TEST_LOG'] ? { format: 'json', level: 'debug' } : { sink: { write: () => undefined } },
    ),
    tick_ms: 20,
    seed: id * 7919,
    ...opts,
  });
  const port = new ControllerPort();
  node.transport.serveOn(port);
  const me = controllers.find((c) => c.id === id)!;
  await port.listen('127.0.0.1', me.port);
  await node.start();
  return { node, port, dataDir };
}

async function stopMember(m: Member): Promise<void> {
  await m.node.stop();
  await m.port.close();
}

async function until<T>(what: string, f: () => T | undefined | false, limit_ms = 10_000): Promise<T> {
  const end = Date.now() + limit_ms;
  for (;;) {
    const v = f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The shipped configuration with xce.yaml's controllers replaced by this test cluster's. */
function configFiles(controllers: readonly ControllerAddress[]) {
  return readdirSync(configDir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => {
      let text = readFileSync(join(configDir, f), 'utf8');
      if (f === 'xce.yaml') {
        text = text.replace(
          /controllers:\n(  - .*\n)+/,
          `controllers:\n${controllers.map((c) => `  - { id: ${c.id}, host: ${c.host}, port: ${c.port} }\n`).join('')}`,
        );
      }
      return { path: f, text };
    });
}

let seq = 0;
function submitFact(user = 'alice'): Uint8Array {
  const fact: Fact = {
    clientId: 'c-node-test',
    sequence: ++seq,
    timeMs: 1_700_000_000_000 + seq,
    body: {
      kind: 'submit',
      user,
      queue: 'normal',
      profile: 'python',
      profileRequested: null,
      dependency: null,
      dependencyKill: false,
      spec: jobSpec({ command: ['echo', String(seq)], cwd: '/tmp' }),
    },
  };
  return encodeFact(fact);
}

function configFact(controllers: readonly ControllerAddress[]): Uint8Array {
  return encodeFact({
    clientId: null,
    sequence: 0,
    timeMs: 1_700_000_000_000,
    body: { kind: 'config', files: configFiles(controllers), user: 'admin' },
  });
}

async function cluster(n: number, opts: MemberOptions = {}) {
  const controllers: ControllerAddress[] = [];
  for (let i = 1; i <= n; i++) controllers.push({ id: i, host: '127.0.0.1', port: await freePort() });
  const base = mkdtempSync(join(tmpdir(), 'xce-node-'));
  const members = new Map<number, Member>();
  for (const c of controllers) members.set(c.id, await startMember(c.id, controllers, join(base, `n${c.id}`), opts));
  const leader = () => [...members.values()].find((m) => m.node.isLeader());
  return { controllers, members, leader, base };
}

test('three nodes elect one leader, replicate facts, and a follower refuses writes naming the leader', async () => {
  const c = await cluster(3);
  try {
    const leader = await until('a leader', c.leader);
    assert.equal([...c.members.values()].filter((m) => m.node.isLeader()).length, 1);
    const cfg = await leader.node.propose(configFact(c.controllers));
    assert.equal(cfg.kind, 'configApplied');
    const r = await leader.node.propose(submitFact());
    assert.equal(r.kind, 'submitted');
    const follower = [...c.members.values()].find((m) => m !== leader)!;
    await assert.rejects(
      follower.node.propose(submitFact()),
      (e: unknown) => e instanceof NodeUnavailableError && e.code === 'not-leader' && e.leaderId === leader.node.id,
    );
    await follower.node.readBarrier();
    assert.equal(follower.node.state.jobs.size, 1, 'a linearizable read on a follower sees the committed submit');
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a leader left in a minority steps down and fails its pending write and read as retryable at once', async () => {
  const c = await cluster(3);
  const stopped = new Set<Member>();
  try {
    const leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(c.controllers));
    for (const m of c.members.values()) {
      if (m === leader) continue;
      await stopMember(m);
      stopped.add(m);
    }
    // No quorum: the write cannot commit and the read cannot be confirmed. Check-quorum makes the
    // leader step down, and both are answered then (not at PROPOSAL_TIMEOUT_MS) so a client can
    // go to the new leader; the write may be retried safely under its session.
    const write = leader.node.propose(submitFact());
    const read = leader.node.readBarrier();
    const steppedDown = (e: unknown): boolean =>
      e instanceof NodeUnavailableError &&
      e.code === 'unavailable' &&
      /stopped being the leader \(term \d+\)/.test(e.message);
    await assert.rejects(
      write,
      (e: unknown) =>
        steppedDown(e) &&
        /before entry \d+ was committed; retry \(it is applied at most once\)/.test((e as Error).message),
    );
    await assert.rejects(
      read,
      (e: unknown) => steppedDown(e) && /before the read was confirmed/.test((e as Error).message),
    );
    assert.equal(leader.node.isLeader(), false);
  } finally {
    for (const m of c.members.values()) if (!stopped.has(m)) await stopMember(m);
  }
});

test('after the leader stops, a new leader has every acknowledged submit; the old one restarts and catches up', async () => {
  const c = await cluster(3);
  try {
    let leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(c.controllers));
    const acked: number[] = [];
    for (let i = 0; i < 50; i++) {
      // On a loaded machine the leader may lose its term meanwhile: that submit is not acknowledged
      // (retryable, applied at most once), and the next goes to whichever member leads.
      leader = await until('a leader', c.leader);
      try {
        const r = await leader.node.propose(submitFact());
        if (r.kind === 'submitted') acked.push(r.jobId);
      } catch (e) {
        if (!(e instanceof NodeUnavailableError)) throw e;
      }
    }
    leader = await until('a leader', c.leader);
    const oldId = leader.node.id;
    const oldDir = leader.dataDir;
    await stopMember(leader);
    c.members.delete(oldId);
    leader = await until('a new leader', c.leader);
    assert.notEqual(leader.node.id, oldId);
    await leader.node.readBarrier();
    for (const id of acked) assert.ok(leader.node.state.jobs.has(id), `job ${id} survived the failover`);
    const r = await leader.node.propose(submitFact());
    assert.equal(r.kind, 'submitted');
    const back = await startMember(oldId, c.controllers, oldDir);
    c.members.set(oldId, back);
    // Every job the leader holds (the acknowledged ones, the last submit, and any unacknowledged one
    // that was applied all the same), on the restarted node too.
    await leader.node.readBarrier();
    const want = leader.node.state.jobs.size;
    assert.ok(want >= acked.length + 1);
    await until('the restarted node to catch up', () => back.node.state.jobs.size === want);
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a leader encoding a snapshot goes on committing and applying: a submit is answered before the encoding ends, and the snapshot is of one index', async () => {
  // The test holds the encoder between two slices, as a million jobs hold it for seconds.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = false;
  const c = await cluster(3, {
    snapshotEveryEntries: 1_000_000,
    snapshotSliceJobs: 10,
    snapshotSliceMs: 0,
    snapshotBetweenSlices: () => ((held = true), gate),
  });
  try {
    const leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(c.controllers));
    for (let i = 0; i < 100; i++) assert.equal((await leader.node.propose(submitFact())).kind, 'submitted');
    const index = leader.node.status().appliedIndex;
    const expected = snapshot(leader.node.state);
    const taking = leader.node.snapshotNow();
    await until('the encoder held after its first slice', () => held);
    assert.equal(leader.node.status().snapshotJobsLeft, 90);

    // A write and a membership change commit, and the write is applied and answered, while the
    // encoder is still held: the snapshot keeps the jobs as they were at `index` (copy-on-write).
    let encodingEnded = false;
    void taking.then(() => (encodingEnded = true));
    const write = leader.node.propose(submitFact());
    const learner = leader.node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 9 });
    assert.deepEqual(await write, { kind: 'submitted', jobId: 101 });
    assert.equal(encodingEnded, false, 'the submit was answered before the snapshot encoding ended');
    assert.equal(leader.node.status().snapshotJobsLeft, 90, 'the encoder is still held');
    await until('the membership change in force while the snapshot is encoded', () =>
      leader.node.status().conf.learners.includes(9),
    );
    // A read issued now sees the write at once.
    await leader.node.readBarrier();
    assert.equal(leader.node.state.jobs.size, 101);
    // Changes to jobs the encoder has not written yet: it writes them as they were.
    const kill = await leader.node.propose(
      encodeFact({
        clientId: 'ctl',
        sequence: 1,
        timeMs: Date.now(),
        body: { kind: 'control', jobId: 100, action: 'kill', user: 'alice' },
      }),
    );
    assert.equal(kill.kind, 'controlled', JSON.stringify(kill));
    assert.equal(encodingEnded, false);
    release();
    assert.equal(await taking, index);
    assert.deepEqual(await learner, { kind: 'noop' });
    assert.equal(leader.node.state.jobs.get(100)?.state, 'EXIT');
    assert.equal(leader.node.status().snapshotJobsLeft, null);
    await stopMember(leader);
    c.members.delete(leader.node.id);
    const store = await SnapshotStore.open(join(leader.dataDir, 'snap'));
    try {
      const stored = await store.readAll();
      assert.equal(stored.meta.index, index);
      assert.deepEqual(stored.meta.conf.learners, [], 'the snapshot holds the membership at its index');
      assert.deepEqual(
        new Uint8Array(stored.data),
        expected,
        'the stored snapshot is the state at its index, byte for byte',
      );
    } finally {
      await store.close();
    }
  } finally {
    release();
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('the three members snapshot at different indexes, each about once per interval', async () => {
  // Each member's phase comes from its place in the configuration (snapshot-schedule.ts): with a
  // threshold of 90 entries their points are 30 apart, so no index is snapshotted by two members.
  const c = await cluster(3, { snapshotEveryEntries: 90 });
  try {
    const leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(c.controllers));
    const seen = new Map<number, Set<number>>([...c.members.keys()].map((id) => [id, new Set<number>()]));
    // Index 1 is the bootstrap snapshot (the initial membership) each member stores at its first start.
    const look = (): void => {
      for (const [id, m] of c.members)
        if (m.node.status().snapshotIndex > 1) seen.get(id)!.add(m.node.status().snapshotIndex);
    };
    for (let i = 0; i < 450; i++) {
      // On this shared machine a leader may lose its term meanwhile: the write is then proposed again
      // to whichever member leads (the test counts snapshots, not jobs).
      for (;;) {
        const now = await until('a leader', c.leader);
        try {
          assert.equal((await now.node.propose(submitFact('bob'))).kind, 'submitted');
          break;
        } catch (e) {
          if (!(e instanceof NodeUnavailableError)) throw e;
        }
      }
      look();
    }
    const last = (await until('a leader', c.leader)).node.status().appliedIndex;
    await until(
      'every member to apply the last write',
      () => [...c.members.values()].every((m) => m.node.status().appliedIndex >= last) || undefined,
    );
    look();
    for (const [id, s] of seen) {
      const at = [...s].sort((a, b) => a - b);
      assert.ok(at.length >= 3, `member ${id} snapshotted at ${at.join(', ')} in ${last} entries`);
      for (let k = 1; k < at.length; k++)
        assert.ok(at[k]! - at[k - 1]! >= 45 && at[k]! - at[k - 1]! <= 135 + 5, `member ${id}: ${at.join(', ')}`);
    }
    const all = [...seen.values()].flatMap((s) => [...s]);
    assert.equal(
      new Set(all).size,
      all.length,
      `an index snapshotted by two members: ${[...seen].map(([id, s]) => `${id}: ${[...s].join(' ')}`).join('; ')}`,
    );
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a controller started with join is added as a learner, catches up by snapshot, and is promoted to voter', async () => {
  // Three voters, and a fourth controller listed in xce.yaml but not yet a member.
  const c = await cluster(3, { snapshotEveryEntries: 50 });
  const fourth: ControllerAddress = { id: 4, host: '127.0.0.1', port: await freePort() };
  const controllers = [...c.controllers, fourth];
  try {
    const leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(controllers));
    for (let i = 0; i < 300; i++) assert.equal((await leader.node.propose(submitFact('bob'))).kind, 'submitted');
    assert.ok(leader.node.status().snapshotIndex > 200, 'the leader compacted its log: the newcomer needs a snapshot');
    const newcomer = await startMember(4, controllers, join(c.base, 'n4'), { snapshotEveryEntries: 50, join: true });
    c.members.set(4, newcomer);
    assert.deepEqual(newcomer.node.status().conf, { voters: [], learners: [] }, 'it starts with no membership');
    await leader.node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 4 });
    await until('the learner to catch up by snapshot', () => newcomer.node.state.jobs.size === 300, 20_000);
    assert.ok(newcomer.node.status().snapshotIndex > 200, 'it caught up from a snapshot, not from the compacted log');
    await leader.node.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: 4 });
    const r = await leader.node.propose(submitFact('bob'));
    assert.equal(r.kind, 'submitted');
    await until('the new voter to apply the next write', () => newcomer.node.state.jobs.size === 301);
    assert.deepEqual([...newcomer.node.status().conf.voters].sort(), [1, 2, 3, 4]);
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a node that missed a snapshot’s worth of entries catches up by InstallSnapshot', async () => {
  const c = await cluster(3, { snapshotEveryEntries: 50 });
  try {
    const leader = await until('a leader', c.leader);
    await leader.node.propose(configFact(c.controllers));
    const lagging = [...c.members.values()].find((m) => m !== leader)!;
    const lagId = lagging.node.id;
    await stopMember(lagging);
    c.members.delete(lagId);
    for (let i = 0; i < 2_200; i++) {
      const r = await leader.node.propose(submitFact('bob'));
      assert.equal(r.kind, 'submitted');
    }
    assert.ok(leader.node.status().snapshotIndex > 2_000, 'the leader took snapshots and compacted');
    const back = await startMember(lagId, c.controllers, lagging.dataDir, { snapshotEveryEntries: 50 });
    c.members.set(lagId, back);
    await until('catch-up by snapshot', () => back.node.state.jobs.size === 2_200, 20_000);
    assert.ok(back.node.status().snapshotIndex > 0);
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a membership change Raft refuses is a permanent rejection (not retryable): adding an existing voter, transferring to a non-voter', async () => {
  const c = await cluster(3);
  try {
    const leader = await until('a leader', c.leader);
    const follower = [...c.members.values()].find((m) => m !== leader)!;
    await assert.rejects(
      leader.node.proposeConfChange({ type: ConfChangeType.AddVoter, nodeId: follower.node.id }),
      (e: unknown) =>
        e instanceof ProposalRejectedError &&
        e.code === 'rejected' &&
        e.reason === 'invalid-conf-change' &&
        /already a voter/.test(e.message),
    );
    assert.throws(
      () => leader.node.transferLeader(42),
      (e: unknown) => e instanceof ProposalRejectedError && e.reason === 'invalid-transferee',
    );
    // A refusal of the moment stays retryable: a follower points at the leader (once it knows it:
    // `until('a leader')` returns as soon as one node leads, before its first append arrives).
    await until('the follower to know the leader', () => follower.node.leaderId() === leader.node.id);
    await assert.rejects(
      follower.node.proposeConfChange({ type: ConfChangeType.AddLearner, nodeId: 9 }),
      (e: unknown) => e instanceof NodeUnavailableError && e.code === 'not-leader',
    );
  } finally {
    for (const m of c.members.values()) await stopMember(m);
  }
});

test('a WAL fsync failure fail-stops the leader: no more ticks or steps, links closed, leadership given up, every request answered unavailable', async () => {
  const broken = new Set<number>();
  const controllers: ControllerAddress[] = [];
  for (let i = 1; i <= 3; i++) controllers.push({ id: i, host: '127.0.0.1', port: await freePort() });
  const base = mkdtempSync(join(tmpdir(), 'xce-node-'));
  const members = new Map<number, Member>();
  for (const ctl of controllers)
    members.set(
      ctl.id,
      await startMember(ctl.id, controllers, join(base, `n${ctl.id}`), { walFailSave: () => broken.has(ctl.id) }),
    );
  try {
    const leader = await until('a leader', () => [...members.values()].find((m) => m.node.isLeader()));
    await leader.node.propose(configFact(controllers));
    const fatal: ControllerFatalError[] = [];
    const leadership: boolean[] = [];
    leader.node.onFatal((e) => fatal.push(e));
    leader.node.onLeadership((l) => leadership.push(l));

    broken.add(leader.node.id);
    await assert.rejects(
      leader.node.propose(submitFact()),
      (e: unknown) =>
        e instanceof NodeUnavailableError && e.code === 'unavailable' && /stopped on a fatal error/.test(e.message),
    );
    assert.equal(fatal.length, 1, 'onFatal is called once');
    assert.equal(fatal[0]!.kind, 'storage');
    assert.match(
      fatal[0]!.message,
      /stopped \(fail-stop\) on a storage failure: WalFailedError: WAL write to .* failed/,
    );
    assert.ok(fatal[0]!.message.includes(`Data directory: ${leader.dataDir}`), fatal[0]!.message);
    assert.deepEqual(leadership, [false], 'the hub is told that this node no longer leads');
    assert.equal(leader.node.isLeader(), false);
    await assert.rejects(
      leader.node.readBarrier(),
      (e: unknown) => e instanceof NodeUnavailableError && e.code === 'unavailable',
    );

    // Its Raft is frozen where it failed: no tick (it would step down by check-quorum) and no step
    // (the new leader's higher term would reach it), while the others elect and commit.
    const frozen = leader.node.status();
    assert.equal(frozen.state, StateType.Leader);
    const others = [...members.values()].filter((m) => m !== leader);
    const next = await until('a new leader among the others', () => others.find((m) => m.node.isLeader()), 10_000);
    assert.equal((await next.node.propose(submitFact())).kind, 'submitted');
    await new Promise((r) => setTimeout(r, 500)); // 25 ticks: more than two election timeouts
    const after = leader.node.status();
    assert.equal(after.state, StateType.Leader, 'no tick, no step: the failed Raft stays as it was');
    assert.equal(after.term, frozen.term);
    assert.ok(next.node.status().term > frozen.term);
    assert.equal(leader.node.transport.stats().length, 0, 'its peer links are closed');

    // The API on it answers unavailable (the client goes to another controller).
    const tokens = new TokenAuthority(secret, 'xce:test');
    const api = new ApiServer(
      leader.node,
      tokens,
      createLogger({}, { sink: { write: () => undefined } }),
      null,
      leader.node.state.config!.cluster,
    );
    const r = await api.handle(
      JSON.stringify({ id: 1, op: 'jobs.list', token: await tokens.issue('alice'), args: {} }),
    );
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.code, 'unavailable');
  } finally {
    for (const m of members.values()) await stopMember(m);
  }
});

test('a lost first WAL segment (the snapshot older than the log) refuses to start with WalGapError naming the data directory and the remedy', async () => {
  const port = await freePort();
  const controllers: ControllerAddress[] = [{ id: 1, host: '127.0.0.1', port }];
  const dataDir = join(mkdtempSync(join(tmpdir(), 'xce-node-')), 'n1');
  const opts: MemberOptions = { walSegmentBytes: 4096, snapshotEveryEntries: 1_000_000 };
  const m = await startMember(1, controllers, dataDir, opts);
  try {
    await until('a leader', () => m.node.isLeader());
    await m.node.propose(configFact(controllers));
    for (let i = 0; i < 60; i++) assert.equal((await m.node.propose(submitFact())).kind, 'submitted');
  } finally {
    await stopMember(m);
  }
  const segments = readdirSync(join(dataDir, 'wal'))
    .filter((f) => f.endsWith('.wal'))
    .sort();
  assert.ok(segments.length >= 3, `several segments (${segments.join(', ')})`);
  // Lose the segments up to the one holding entry 2, the first after the bootstrap snapshot (index 1).
  // Which segment that is depends on group commit: entry 2 alone fits beside the first segment's
  // snapshot mark, but written in one record with the config fact (entry 3) under load it starts the
  // second segment, and then the first holds nothing the second's header does not repeat (its loss is
  // no gap: wal/gap.test.ts). A segment's name is `<seq>-<first index>.wal`, both in hex.
  const firstIndex = (name: string): number => parseInt(name.split('-')[1]!, 16);
  const lost = segments.filter((name, k) => firstIndex(name) <= 2 && k < segments.length - 1);
  for (const name of lost) rmSync(join(dataDir, 'wal', name));
  const said: string[] = [];
  const node = new ControllerNode({
    id: 1,
    dataDir,
    bootstrapControllers: controllers,
    secret,
    log: createLogger({}, { sink: { write: (line: string) => void said.push(line) } }),
    tick_ms: 20,
    ...opts,
  });
  // A node that starts after all is stopped before the test fails, so the run never hangs on it
  // (seen about once in four runs under load; the log lines say how it recovered).
  const started = node.start().then(async () => {
    await node.stop();
    throw new Error(`started without the first segment (${segments.join(', ')}):\n${said.join('')}`);
  });
  await assert.rejects(started, (e: unknown) => {
    assert.ok(e instanceof WalGapError, `WalGapError, got ${(e as Error).name}: ${(e as Error).message}`);
    assert.match(e.message, /starts at entry \d+ but the latest snapshot ends at 1: entries 2\.\.\d+ are missing/);
    assert.ok(e.message.includes(`move its data directory (${dataDir})`), e.message);
    return true;
  });
  // Nothing is left open: the data directory can be opened again at once (its lock was released).
  await assert.rejects(
    new ControllerNode({
      id: 1,
      dataDir,
      bootstrapControllers: controllers,
      secret,
      log: createLogger({}, { sink: { write: () => undefined } }),
      ...opts,
    }).start(),
    WalGapError,
  );
});

test('the data directory is private to its owner (0700), WAL files 0600, even over a looser existing directory', async () => {
  const port = await freePort();
  const controllers: ControllerAddress[] = [{ id: 1, host: '127.0.0.1', port }];
  const dataDir = join(mkdtempSync(join(tmpdir(), 'xce-node-')), 'n1');
  mkdirSync(dataDir, { mode: 0o755 });
  chmodSync(dataDir, 0o755);
  const m = await startMember(1, controllers, dataDir);
  try {
    await until('a leader', () => m.node.isLeader());
    assert.equal((await m.node.propose(configFact(controllers))).kind, 'configApplied');
  } finally {
    await stopMember(m);
  }
  const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);
  assert.equal(mode(dataDir), '700');
  assert.equal(mode(join(dataDir, 'wal')), '700');
  const files = readdirSync(join(dataDir, 'wal'));
  assert.ok(
    files.some((f) => f.endsWith('.wal')),
    `WAL segments in ${files.join(', ')}`,
  );
  for (const f of files) assert.equal(mode(join(dataDir, 'wal', f)), '600', f);
});
