// The Ready loop's saves and the per-hop trace, on a one-member core over the in-memory stores: a
// hard state that only moves the commit index is not written on its own but joins the next save,
// and every hop of a proposal is reported to the trace port in path order.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Entry, HardState } from '../../raft/types.js';
import { ControllerCore } from './core.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import { nodeClock } from './node-clock.js';
import type { LogStore, PeerPort, TraceHop, TracePort } from './ports.js';

interface Save {
  readonly hardState: HardState | undefined;
  readonly entries: number;
}

/** A log store that records every save it is asked for. */
function recording(store: LogStore, saves: Save[]): LogStore {
  return {
    recovered: store.recovered,
    entriesAfter: (i) => store.entriesAfter(i),
    save: (hardState: HardState | undefined, entries: readonly Entry[], startNow?: boolean) => {
      saves.push({ hardState, entries: entries.length });
      return store.save(hardState, entries, startNow);
    },
    saveSnapshot: (m) => store.saveSnapshot(m),
    compact: (i) => store.compact(i),
    close: () => store.close(),
  };
}

const noPeers: PeerPort = {
  setPeers: () => undefined,
  send: () => true,
  stream: () => Promise.resolve(true),
  connected: () => false,
  closeInbound: () => undefined,
  close: () => undefined,
};

const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function leaderCore(saves: Save[], trace: TracePort): Promise<ControllerCore> {
  const disk = new MemoryDisk({ name: 'node 1', onPending: (d) => void setImmediate(() => d.flush()) });
  const core = await ControllerCore.open({
    id: 1,
    log: quietLog,
    logStore: recording(MemoryLogStore.open(disk), saves),
    snapshots: MemorySnapshotStore.open(disk),
    peers: noPeers,
    clock: nodeClock,
    seed: 7,
    bootstrapVoters: [1],
    addresses: () => [{ id: 1, address: '127.0.0.1:1' }],
    dataDir: 'memory:node-1',
    tick_ms: 5,
    trace,
  });
  core.start();
  for (let i = 0; i < 400 && !core.isLeader(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(core.isLeader(), 'a one-member cluster elects itself within 2 s');
  // Let the election's own entry commit and apply.
  for (let i = 0; i < 400 && core.status().applied < core.status().lastIndex; i++)
    await new Promise((r) => setTimeout(r, 5));
  return core;
}

describe('Ready loop', () => {
  it('writes a commit-only hard state with the next save, not on its own', async () => {
    const saves: Save[] = [];
    const core = await leaderCore(saves, { hop: () => undefined });
    try {
      saves.length = 0;
      await core.propose(new Uint8Array(0));
      const first = core.status().commit;
      assert.ok(
        saves.every((s) => s.entries > 0),
        `only saves that carry entries: ${JSON.stringify(saves)}`,
      );
      saves.length = 0;
      await core.propose(new Uint8Array(0));
      const withEntries = saves.find((s) => s.entries > 0);
      assert.ok(withEntries !== undefined, 'the next proposal is saved');
      assert.equal(withEntries.hardState?.commit, first, 'carrying the commit index that was not written alone');
      assert.ok(saves.every((s) => s.entries > 0));
    } finally {
      await core.stop();
    }
  });

  it('reports each hop of a proposal to the trace port, in path order', async () => {
    const hops: { hop: TraceHop; first: number; last: number }[] = [];
    const core = await leaderCore([], { hop: (hop, first, last) => void hops.push({ hop, first, last }) });
    try {
      hops.length = 0;
      await core.propose(new Uint8Array(0));
      const index = hops.find((h) => h.hop === 'propose')?.first;
      assert.ok(index !== undefined && index > 0, 'the proposal names its index');
      const seen = hops.filter((h) => h.first <= index && index <= h.last).map((h) => h.hop);
      assert.deepEqual(seen, ['propose', 'ready', 'wal-start', 'wal-done', 'commit', 'applied']);
    } finally {
      await core.stop();
    }
  });
});
