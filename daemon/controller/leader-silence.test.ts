// The core's `leaderId()`, which every `not-leader` answer names (daemon/net/not-leader.ts): a
// follower whose leader went silent (its machine died: no message, no refused connection) names no
// leader after one election timeout of ticks, its refused requests carry no hint either, and the
// next heartbeat names the leader again. The core is driven by hand: no clock runs (start() is not
// called), each tick is one `core.tick()`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, newMessage } from '../../raft/message.js';
import { encodeMessage } from '../raft-codec.js';
import { ControllerCore } from './core.js';
import { ELECTION_TICKS_DEFAULT } from './core-options.js';
import { NodeUnavailableError } from './errors.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import { nodeClock } from './node-clock.js';
import type { PeerPort } from './ports.js';

const quietPort: PeerPort = {
  setPeers: () => undefined,
  send: () => true,
  stream: () => Promise.resolve(true),
  connected: () => true,
  closeInbound: () => undefined,
  close: () => undefined,
};

const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** Node 2 of {1, 2, 3}, its election timer never firing within the test (a heartbeat resets it). */
async function follower(): Promise<ControllerCore> {
  const disk = new MemoryDisk({ name: 'node 2', onPending: (d) => void setImmediate(() => d.flush()) });
  return ControllerCore.open({
    id: 2,
    log: quietLog,
    logStore: MemoryLogStore.open(disk),
    snapshots: MemorySnapshotStore.open(disk),
    peers: quietPort,
    clock: nodeClock,
    seed: 1,
    bootstrapVoters: [1, 2, 3],
    addresses: () => [1, 2, 3].map((id) => ({ id, address: `127.0.0.1:${id}` })),
    dataDir: 'memory:node-2',
  });
}

function heartbeat(from: number, term: number): Uint8Array {
  return encodeMessage({ ...newMessage(MessageType.Heartbeat, from, 2, term), commit: 1 });
}

/** The refusal of a proposal on the follower: its code and the leader it names. */
async function refusal(p: Promise<unknown>): Promise<[string, number]> {
  const err: unknown = await p.then(
    () => assert.fail('a follower accepted a proposal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof NodeUnavailableError, `a NodeUnavailableError: ${String(err)}`);
  return [err.code, err.leaderId];
}

describe('ControllerCore.leaderId(): the leader a follower names', () => {
  it('is 0 once the leader was silent an election timeout, and the leader again after its next heartbeat', async () => {
    const core = await follower();
    try {
      core.receive(1, heartbeat(1, 5));
      assert.equal(core.leaderId(), 1);
      assert.deepEqual(await refusal(core.propose(new Uint8Array([1]))), ['not-leader', 1]);
      for (let t = 1; t < ELECTION_TICKS_DEFAULT; t++) {
        core.tick();
        assert.equal(core.leaderId(), 1, `named after ${t} silent ticks`);
      }
      core.tick();
      assert.equal(core.leaderId(), 0, 'not named after an election timeout of silence');
      assert.equal(core.status().leaderSilentTicks, ELECTION_TICKS_DEFAULT);
      assert.deepEqual(
        await refusal(core.propose(new Uint8Array([2]))),
        ['no-leader', 0],
        'a refused proposal names none',
      );

      core.receive(1, heartbeat(1, 5));
      assert.equal(core.leaderId(), 1, 'named again once it is heard from');
      assert.equal(core.status().leaderSilentTicks, 0);
    } finally {
      await core.stop();
    }
  });
});
