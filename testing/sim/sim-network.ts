// The simulated network between controllers: every frame becomes an event of the run's queue,
// delayed, dropped, duplicated or reordered by the run's seeded PRNG, and lost across a partition.
// A snapshot stream (PeerPort.stream) keeps its chunks in order, as one WebSocket does; a chunk
// lost on the way fails the whole transfer (the leader retries later).

import type { SeededRandom } from '../../raft/prng.js';
import type { PeerPort } from '../../daemon/controller/ports.js';
import type { SimScheduler } from './virtual-clock.js';

/** Frames a stream hands to the link at once before it must wait (bounds one transfer's events). */
export const SIM_STREAM_FRAMES_MAX = 10_000;

/** What the network does to frames now (the chaos phase changes it; healing resets it). */
export interface NetworkConditions {
  /** Probability that a frame is lost. */
  dropRate: number;
  /** Probability that a frame is delivered twice. */
  dupRate: number;
  /** One-way delay, uniformly drawn in [minDelayMs, maxDelayMs]: different delays reorder frames. */
  minDelayMs: number;
  maxDelayMs: number;
}

/** Where delivered frames go: the simulator hands them to the live incarnation of `to`. */
export type DeliverFn = (from: number, to: number, frame: Uint8Array) => void;

export interface NetworkStats {
  sent: number;
  delivered: number;
  dropped: number;
  duplicated: number;
  streams: number;
  streamsFailed: number;
}

export class SimNetwork {
  readonly conditions: NetworkConditions = { dropRate: 0, dupRate: 0, minDelayMs: 1, maxDelayMs: 5 };
  /** Blocked one-way links, `from * 64 + to`. */
  private readonly blocked = new Set<number>();
  readonly stats: NetworkStats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0, streams: 0, streamsFailed: 0 };

  constructor(
    private readonly sched: SimScheduler,
    private readonly rng: SeededRandom,
    /** Whether a node's process is up now (frames to a dead node are lost; its links are down). */
    private readonly isUp: (id: number) => boolean,
    private readonly deliver: DeliverFn,
  ) {}

  block(from: number, to: number): void {
    this.blocked.add(from * 64 + to);
  }

  isBlocked(from: number, to: number): boolean {
    return this.blocked.has(from * 64 + to);
  }

  /** Whether frames from `from` reach `to` now (its process up, the link not cut). */
  linkUp(from: number, to: number): boolean {
    return this.isUp(to) && !this.isBlocked(from, to);
  }

  /** Cuts the nodes into `side` and the rest, both ways. */
  partition(side: ReadonlySet<number>, all: readonly number[]): void {
    this.blocked.clear();
    for (const a of all) for (const b of all) if (side.has(a) !== side.has(b)) this.block(a, b);
  }

  healLinks(): void {
    this.blocked.clear();
  }

  private delay(): number {
    const c = this.conditions;
    return c.minDelayMs + this.rng.nextFloat() * (c.maxDelayMs - c.minDelayMs);
  }

  /** Sends one frame; false when the link is down (peer process down), as the real transport says. */
  send(from: number, to: number, frame: Uint8Array): boolean {
    if (!this.isUp(to)) return false;
    this.stats.sent++;
    // The transport copies what it is given (ws.send): the codec may reuse its buffer.
    const bytes = frame.slice();
    if (this.isBlocked(from, to) || this.rng.chance(this.conditions.dropRate)) {
      this.stats.dropped++;
      return true;
    }
    this.schedule(from, to, bytes, this.delay());
    if (this.rng.chance(this.conditions.dupRate)) {
      this.stats.duplicated++;
      this.schedule(from, to, bytes, this.delay() * 2);
    }
    return true;
  }

  private schedule(from: number, to: number, bytes: Uint8Array, delayMs: number): void {
    this.sched.after(delayMs, `deliver ${from}->${to}`, () => {
      // A partition that started while the frame was on its way loses it too.
      if (!this.isUp(to) || this.isBlocked(from, to)) {
        this.stats.dropped++;
        return;
      }
      this.stats.delivered++;
      this.deliver(from, to, bytes);
    });
  }

  /**
   * Streams frames in order over one link; resolves (at a later event) true when every frame was
   * handed over, false when the link broke or a frame was lost on the way.
   */
  stream(from: number, to: number, frames: Iterable<Uint8Array>, linkAlive: () => boolean): Promise<boolean> {
    this.stats.streams++;
    let t = 0;
    let ok = this.isUp(to) && !this.isBlocked(from, to);
    let n = 0;
    if (ok) {
      for (const f of frames) {
        if (++n > SIM_STREAM_FRAMES_MAX)
          throw new RangeError(`a snapshot stream of more than ${SIM_STREAM_FRAMES_MAX} frames`);
        const bytes = f.slice();
        t = Math.max(t, this.delay()) + 0.01;
        // Chunks are lost less often than single frames (they ride one established connection).
        if (this.rng.chance(this.conditions.dropRate / 4)) {
          ok = false;
          break;
        }
        this.sched.after(t, `chunk ${from}->${to}`, () => {
          if (!this.isUp(to) || this.isBlocked(from, to)) return;
          this.deliver(from, to, bytes);
        });
      }
    }
    if (!ok) this.stats.streamsFailed++;
    const result = ok;
    return new Promise<boolean>((resolve) => {
      this.sched.after(t + 0.02, `stream ${from}->${to} done`, () => {
        if (!linkAlive()) return; // the sender died: its promise never settles
        resolve(result && this.isUp(to) && !this.isBlocked(from, to));
      });
    });
  }
}

/** One controller incarnation's PeerPort over the simulated network. */
export class SimPeerPort implements PeerPort {
  private peers = new Set<number>();
  private closed = false;

  constructor(
    private readonly net: SimNetwork,
    readonly self: number,
  ) {}

  setPeers(peers: ReadonlyArray<{ readonly id: number; readonly address: string }>): void {
    this.peers = new Set(peers.map((p) => p.id).filter((id) => id !== this.self));
  }

  /** The peers the core asked to be linked to (for the trace). */
  peerIds(): number[] {
    return [...this.peers];
  }

  send(to: number, frame: Uint8Array): boolean {
    if (this.closed || !this.peers.has(to)) return false;
    return this.net.send(this.self, to, frame);
  }

  stream(to: number, frames: Iterable<Uint8Array>): Promise<boolean> {
    if (this.closed || !this.peers.has(to)) return Promise.resolve(false);
    return this.net.stream(this.self, to, frames, () => !this.closed);
  }

  connected(to: number): boolean {
    return !this.closed && this.peers.has(to) && this.net.linkUp(this.self, to);
  }

  /** The simulated network has no per-link connections to close: a refused frame is only dropped. */
  closeInbound(_from: number, _reason: string): void {}

  close(): void {
    this.closed = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
