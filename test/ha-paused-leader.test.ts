// A leader whose machine dies: its process is SIGSTOPped, so nothing it had open is refused or
// closed, connections to it just hang. One election timeout after its last heartbeat a follower
// stops naming it (raft's liveLeader, daemon/net/not-leader.ts): a worker's challenge request is
// answered 421 with no leader in the body, a client's request `no-leader`, so that both try the
// other controllers instead of waiting out a connection timeout on the dead one. Once the others
// elect a new leader, the follower names that one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestCluster, until } from '../harness/cluster.js';
import { withCluster } from '../testing/e2e.js';
import { httpGet } from '../daemon/handshake.js';
import { ApiError } from '../cli/api-error.js';

interface NotLeaderBody {
  type?: string;
  leader?: { id: number; address: string };
}

/** A worker's challenge request on controller `id`: the status and the `not-leader` body (null for a nonce). */
async function challenge(cluster: TestCluster, id: number): Promise<{ status: number; body: NotLeaderBody | null }> {
  const a = await httpGet(cluster.address(id), '/challenge?for=worker', cluster.dialTls(), 2_000);
  return { status: a.status, body: a.status === 421 ? (JSON.parse(a.body) as NotLeaderBody) : null };
}

/** The one of `ids` whose /healthz says it leads. */
async function leaderAmong(cluster: TestCluster, ids: readonly number[]): Promise<number | undefined> {
  for (const id of ids) {
    try {
      if ((await cluster.getJson<{ leader: number }>(id, '/healthz', 1_000)).leader === id) return id;
    } catch {
      // paused or busy: the next one
    }
  }
  return undefined;
}

test("a paused leader's followers stop naming it after an election timeout, then name the new leader", () =>
  withCluster({ controllers: 3 }, async (cluster) => {
    const old = await cluster.waitForLeader();
    const [f, g] = [...cluster.ports.keys()].filter((id) => id !== old) as [number, number];
    const named = await until(`controller ${f} to name the leader`, async () => {
      const c = await challenge(cluster, f);
      return c.body?.leader !== undefined ? c : undefined;
    });
    assert.deepEqual(named, {
      status: 421,
      body: { type: 'not-leader', leader: { id: old, address: cluster.address(old) } },
    });
    // A client that knows only controller f (logged in now, while there is a leader).
    const viaF = await cluster.client('alice', { controllers: [cluster.address(f)], deadline_ms: 3_000 });

    // The leader and g paused: f alone cannot elect, so its "no leader" answer stays until g resumes.
    cluster.pause(old);
    cluster.pause(g);
    try {
      const none = await until(
        `controller ${f} to stop naming the paused leader ${old}`,
        async () => {
          const c = await challenge(cluster, f);
          return c.status === 421 && c.body?.leader === undefined ? c : undefined;
        },
        15_000,
        50,
      );
      assert.deepEqual(none.body, { type: 'not-leader' }, 'a worker is told no leader, not the paused one');
      await assert.rejects(viaF.submit({ command: ['true'] }), (e: unknown) => {
        assert.ok(e instanceof ApiError, String(e));
        assert.equal(e.code, 'no-leader', `a client is told no leader, not the paused one: ${e.message}`);
        return true;
      });

      cluster.resume(g);
      const next = await until('f and g to elect a leader', () => leaderAmong(cluster, [f, g]), 15_000, 50);
      const other = next === f ? g : f;
      const renamed = await until(
        `controller ${other} to name the new leader ${next}`,
        async () => {
          const c = await challenge(cluster, other);
          return c.body?.leader?.id === next ? c : undefined;
        },
        15_000,
        50,
      );
      assert.deepEqual(renamed.body, { type: 'not-leader', leader: { id: next, address: cluster.address(next) } });
      const submitted = (await viaF.submit({ command: ['true'] })) as { jobId: number };
      assert.ok(submitted.jobId > 0, 'the client through f reached the new leader');
    } finally {
      cluster.resume(old);
      cluster.resume(g);
    }
  }));
