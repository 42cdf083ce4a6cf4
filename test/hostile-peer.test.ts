// A peer that passed the /raft handshake cannot crash or wedge a controller (issue 21, item 2):
// three real xcectld processes; the test dials a follower's /raft with the peer key (a fresh handshake), as a
// peer, and sends frames no correct peer sends. Each is refused (logged with the peer and the
// reason, the link closed); every controller stays up, the leader and its term do not move, and
// submits are still acknowledged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { until, type TestCluster } from '../harness/cluster.js';
import { withCluster } from '../testing/e2e.js';
import { HEADER_NODE, peerSubject } from '../daemon/peer-transport.js';
import { encodeMessage, encodeSnapshotChunk } from '../daemon/raft-codec.js';
import { MessageType, newMessage } from '../raft/message.js';

interface Health {
  id: number;
  leader: number;
  term: number;
}

async function health(cluster: TestCluster, id: number): Promise<Health> {
  return cluster.getJson<Health>(id, '/healthz');
}

/** Dials `target`'s /raft authenticated as peer `as`, sends `frame`, and waits (bounded) for the
 * controller to close the link; resolves with the close code and reason. */
async function sendAs(
  cluster: TestCluster,
  target: number,
  as: number,
  frame: Uint8Array,
): Promise<{ code: number; reason: string }> {
  const proof = await cluster.handshake(target, 'raft-peer', peerSubject(as, target), cluster.keys().peer);
  const ws = new WebSocket(cluster.url(target, '/raft'), {
    headers: { [HEADER_NODE]: String(as), ...proof },
    perMessageDeflate: false,
    ...(cluster.dialTls() ?? {}),
  });
  let opened = false;
  let closed: { code: number; reason: string } | undefined;
  let failure: Error | undefined;
  ws.on('open', () => {
    opened = true;
  });
  ws.on('close', (code, reason) => {
    closed = { code, reason: reason.toString('utf8') };
  });
  ws.on('error', (err) => {
    failure = err;
  });
  try {
    await until(
      `the /raft handshake with controller ${target} as peer ${as}`,
      () => {
        if (failure !== undefined) throw failure;
        return opened || undefined;
      },
      10_000,
    );
    ws.send(frame, { binary: true });
    return await until(`controller ${target} to close the link of the bad frame`, () => closed, 10_000);
  } finally {
    ws.terminate();
  }
}

test('frames a correct peer never sends are refused: no controller dies, the leader and its term stay, submits are acknowledged', () =>
  withCluster({ controllers: 3 }, async (cluster) => {
    // The cluster settled: every controller names the same leader in the same term.
    const before = await until(
      'every controller to agree on the leader and term',
      async () => {
        const hs = await Promise.all([...cluster.controllers.keys()].map((id) => health(cluster, id)));
        const l = hs[0]!;
        return l.leader > 0 && hs.every((h) => h.leader === l.leader && h.term === l.term)
          ? { leader: l.leader, term: l.term }
          : undefined;
      },
      20_000,
    );
    const ids = [...cluster.controllers.keys()];
    const target = ids.find((id) => id !== before.leader)!;
    const other = ids.find((id) => id !== before.leader && id !== target)!;
    const T = before.term;

    const frames: Array<{ what: string; as: number; frame: Uint8Array; reason: string }> = [
      {
        what: "a snapshot chunk announcing 2^40 bytes, from the leader's id in its term",
        as: before.leader,
        frame: encodeSnapshotChunk({
          from: before.leader,
          to: target,
          term: T,
          meta: { index: 1_000, term: T, conf: { voters: ids, learners: [] } },
          offset: 0,
          totalBytes: 2 ** 40,
          data: new Uint8Array(64),
        }),
        reason: 'snapshot-too-large',
      },
      {
        what: 'a heartbeat of term 2^60',
        as: other,
        frame: encodeMessage(newMessage(MessageType.Heartbeat, other, target, 2 ** 60)),
        reason: 'not-a-count',
      },
      {
        what: 'a heartbeat of term current + 1,000,000',
        as: other,
        frame: encodeMessage(newMessage(MessageType.Heartbeat, other, target, T + 1_000_000)),
        reason: 'term-too-far-ahead',
      },
      {
        what: 'a TimeoutNow from a follower',
        as: other,
        frame: encodeMessage(newMessage(MessageType.TimeoutNow, other, target, T)),
        reason: 'timeout-now-not-from-leader',
      },
    ];
    const log = cluster.controllers.get(target)!.log;
    for (const f of frames) {
      const closed = await sendAs(cluster, target, f.as, f.frame);
      assert.equal(closed.code, 1008, `${f.what}: the link is closed as a policy violation`);
      assert.match(closed.reason, new RegExp(f.reason), `${f.what}: the close names the reason`);
      const line = await until(
        `${f.what}: controller ${target} to log the refusal`,
        () => log.find((l) => l.includes('refused a bad frame') && l.includes(`"reason":"${f.reason}"`)),
        10_000,
      );
      assert.match(line, new RegExp(`"peer":${f.as}\\b`), 'the line names the peer');
    }

    // A submit through the API is still acknowledged.
    const alice = await cluster.client('alice');
    const r = (await alice.submit({ command: ['echo', 'after-hostile-peer'] })) as { jobId: number };
    assert.ok(r.jobId > 0, 'the submit is acknowledged');

    for (const [id, p] of cluster.controllers) {
      assert.equal(
        p.proc.exitCode,
        null,
        `controller ${id} is still running (exit code ${p.proc.exitCode}):\n${p.log.slice(-10).join('\n')}`,
      );
      assert.equal(p.proc.signalCode, null, `controller ${id} was not killed`);
    }
    for (const id of ids) {
      const h = await health(cluster, id);
      assert.deepEqual(
        { leader: h.leader, term: h.term },
        before,
        `controller ${id}: the leader and its term did not move`,
      );
    }
  }));
