// The leader's appends that only move the commit index (ready.ts sendAfterApply), on three cores
// over in-memory stores with a hand-driven transport and hand-driven deferrals: when something was
// proposed before they go out, the append carrying it (and the new commit index) goes instead of
// them; when nothing was, they go out as before; either way the followers learn the commit index.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, type Message } from '../../raft/message.js';
import { decodeFrame } from '../raft-codec.js';
import { ControllerCore } from './core.js';
import { MemoryDisk, MemoryLogStore, MemorySnapshotStore } from './memory-stores.js';
import { nodeClock } from './node-clock.js';
import type { ClockPort, PeerPort } from './ports.js';

const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const IDS = [1, 2, 3];

interface Frame {
  readonly from: number;
  readonly to: number;
  readonly bytes: Uint8Array;
}

/** Three cores whose frames and deferred callbacks wait until the test lets them run (or run at once in `auto`). */
class Harness {
  readonly cores = new Map<number, ControllerCore>();
  readonly frames: Frame[] = [];
  readonly deferred: (() => void)[] = [];
  /** Every frame a leader's core sent, decoded, in order. */
  readonly sent: Message[] = [];
  auto = true;

  async start(): Promise<void> {
    for (const id of IDS) {
      const disk = new MemoryDisk({ name: `node ${id}`, onPending: (d) => void setImmediate(() => d.flush()) });
      const peers: PeerPort = {
        setPeers: () => undefined,
        send: (to, bytes) => {
          const f = decodeFrame(bytes);
          if (f.kind === 'message') this.sent.push(f.message);
          this.frames.push({ from: id, to, bytes });
          if (this.auto) setImmediate(() => this.deliverAll());
          return true;
        },
        stream: () => Promise.resolve(true),
        connected: () => true,
        closeInbound: () => undefined,
        close: () => undefined,
      };
      const clock: ClockPort = {
        ...nodeClock,
        defer: (fn) => {
          if (this.auto) setImmediate(fn);
          else this.deferred.push(fn);
        },
      };
      const core = await ControllerCore.open({
        id,
        log: quietLog,
        logStore: MemoryLogStore.open(disk),
        snapshots: MemorySnapshotStore.open(disk),
        peers,
        clock,
        seed: id,
        bootstrapVoters: IDS,
        addresses: () => IDS.map((i) => ({ id: i, address: `127.0.0.1:${i}` })),
        dataDir: `memory:node-${id}`,
        tick_ms: 20,
      });
      this.cores.set(id, core);
    }
    for (const c of this.cores.values()) c.start();
  }

  deliverAll(): void {
    for (const f of this.frames.splice(0)) this.cores.get(f.to)!.receive(f.from, f.bytes);
  }

  /** Runs what is deferred, delivers frames and lets the disks flush, until nothing is left (bounded). */
  async settle(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      for (const fn of this.deferred.splice(0)) fn();
      this.deliverAll();
      await new Promise((r) => setTimeout(r, 1));
      if (this.deferred.length === 0 && this.frames.length === 0) return;
    }
  }

  leader(): ControllerCore | undefined {
    return [...this.cores.values()].find((c) => c.isLeader());
  }

  async stop(): Promise<void> {
    this.auto = true;
    for (const c of this.cores.values()) await c.stop();
  }
}

/** A leader, and the cluster quiet (every entry applied everywhere), deferrals then held by the test. */
async function quietCluster(): Promise<{ h: Harness; leader: ControllerCore; leaderId: number }> {
  const h = new Harness();
  await h.start();
  for (let i = 0; i < 300 && h.leader() === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  const leader = h.leader();
  assert.ok(leader !== undefined, 'three cores elect a leader within 3 s');
  await leader.propose(new Uint8Array(0));
  h.auto = false;
  await h.settle();
  const leaderId = IDS.find((id) => h.cores.get(id) === leader)!;
  return { h, leader, leaderId };
}

/** Appends without entries from `from` (commit-only appends). */
const commitOnly = (ms: readonly Message[], from: number) =>
  ms.filter((m) => m.from === from && m.type === MessageType.App && m.entries.length === 0);

/**
 * Proposes A and carries it to commitment by hand: the followers' acknowledgements are stepped by
 * the leader, and the Ready that commits A is handled; its commit-only appends are then deferred.
 */
async function commitOne(h: Harness, leader: ControllerCore): Promise<{ applied: Promise<unknown>; index: number }> {
  const applied = leader.propose(new Uint8Array(0));
  const index = leader.status().lastIndex;
  // The Ready carrying A: its appends go out, the leader's save starts.
  for (let i = 0; i < 50 && h.frames.length === 0; i++) {
    for (const fn of h.deferred.splice(0)) fn();
    await new Promise((r) => setTimeout(r, 1));
  }
  h.deliverAll(); // A to both followers
  for (let i = 0; i < 100 && leader.status().commit < index; i++) {
    for (const fn of h.deferred.splice(0)) fn();
    h.deliverAll();
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.ok(leader.status().commit >= index, 'A is committed at the leader');
  return { applied, index };
}

describe('a leader’s commit-only appends', () => {
  it('are not sent when an append proposed meanwhile carries the commit index', async () => {
    const { h, leader, leaderId } = await quietCluster();
    try {
      const { applied, index } = await commitOne(h, leader);
      const from = h.sent.length;
      // Run the deferred Ready that applies A (its commit-only appends are deferred after it), then propose B.
      for (let i = 0; i < 50 && leader.status().applied < index; i++) {
        for (const fn of h.deferred.splice(0)) fn();
        await new Promise((r) => setTimeout(r, 1));
      }
      await applied;
      const b = leader.propose(new Uint8Array(0));
      await h.settle();
      await b;
      const after = h.sent.slice(from).filter((m) => m.from === leaderId);
      const withB = after.filter((m) => m.type === MessageType.App && m.entries.length > 0);
      assert.equal(new Set(withB.map((m) => m.to)).size, 2, 'B went to both followers');
      const firstB = after.indexOf(withB[0]!);
      assert.ok(
        withB.every((m) => m.commit >= index),
        'the append of B carried A as committed',
      );
      assert.deepEqual(
        commitOnly(after.slice(0, firstB), leaderId).filter((m) => m.commit === index),
        [],
        'no append only saying A is committed went out before B’s',
      );
      for (const [id, c] of h.cores) assert.ok(c.status().commit >= index, `node ${id} knows A is committed`);
    } finally {
      await h.stop();
    }
  });

  it('go out as before when nothing was proposed meanwhile', async () => {
    const { h, leader, leaderId } = await quietCluster();
    try {
      const { applied, index } = await commitOne(h, leader);
      const from = h.sent.length;
      await h.settle();
      await applied;
      const sent = commitOnly(h.sent.slice(from), leaderId).filter((m) => m.commit >= index);
      assert.equal(new Set(sent.map((m) => m.to)).size, 2, 'each follower is told A is committed');
      for (const [id, c] of h.cores) assert.ok(c.status().commit >= index, `node ${id} knows A is committed`);
    } finally {
      await h.stop();
    }
  });
});
