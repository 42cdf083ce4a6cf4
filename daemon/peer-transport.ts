// Raft peer transport over WebSocket (`/raft`): binary frames, authenticated with the peer key
// (derived from the cluster secret, controllers only: daemon/keys.ts) by a fresh challenge-response
// handshake (daemon/handshake.ts: a nonce from the receiver, spent once). Each node dials every peer for what it SENDS, and accepts peers' dials for what it
// RECEIVES, so a pair of nodes holds two one-way streams and reconnecting is each sender's job.
//
// Raft tolerates loss, so the transport never blocks the core: when a peer is down or its socket
// is backed up past a bound, messages are dropped and counted; Raft's own retries repair that.
//
// A partition loses packets without closing anything, and TCP's retransmission timer doubles
// while it lasts (a link cut for 4 s resends next about 2.5 s after the heal). So each sender
// pings its link and drops it when the link shows no life for `dead_ms`: no pong, and no queued
// bytes draining (a large snapshot ahead of the ping is progress, not silence). It then redials
// at a short, capped interval, as etcd's rafthttp does, so a healed peer hears the leader within
// a redial. Each receiver drops a socket on which nothing, not even a ping, came for `idle_ms`:
// the other end of a link its sender gave up on during a partition.

import type { IncomingMessage, ServerResponse } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import {
  type ChallengeBook,
  type DialTls,
  wssDialOptions,
  fetchChallenge,
  HandshakeError,
  handshakeHeaders,
} from './handshake.js';
import type { Logger } from './log.js';
import { CHALLENGE_PATH } from './handshake.js';
import { type ControllerPort, refuse } from './http-server.js';
import type { PeerPort } from './controller/ports.js';

/** Bytes queued in one peer socket beyond which further messages are dropped. */
export const PEER_BUFFERED_BYTES_MAX = 64 * 1024 * 1024;
export const PEER_FRAME_BYTES_MAX = 256 * 1024 * 1024;
export const PEER_RECONNECT_MS_MIN = 50;
export const PEER_RECONNECT_MS_MAX = 250;
/** A dial that has not finished its WebSocket handshake by then is abandoned and redialled. */
export const PEER_HANDSHAKE_MS = 500;
/** How often a sender pings its link. */
export const PEER_PING_MS = 200;
/** A link with no pong and no draining for this long is dropped and redialled. */
export const PEER_DEAD_MS = 1_000;
/** A received link with nothing on it, not even a ping, for this long is dropped. */
export const PEER_IDLE_MS = 5_000;
/** A stream (a snapshot's chunks) sends its next frame once the link holds less than this. */
export const PEER_STREAM_LOW_WATER_BYTES = 4 * 1024 * 1024;
/** How often a stream waiting for its link to drain looks again. */
const STREAM_POLL_MS = 2;
/** A received link closed for a bad frame that has not finished its close handshake by then is cut. */
const REFUSED_CLOSE_MS = 1_000;
/** WebSocket close code for a link closed because of a frame it carried (RFC 6455 "policy violation"). */
export const CLOSE_BAD_FRAME = 1008;

export const HEADER_NODE = 'x-xce-node';

/** What a peer handshake proves: the sender and the receiver (a handshake for one is no good at another). */
export function peerSubject(from: number, to: number): string {
  return `${from}>${to}`;
}

export interface PeerAddress {
  readonly id: number;
  /** `host:port` of the peer's one WebSocket port. */
  readonly address: string;
}

export interface PeerTransportOptions {
  readonly self: number;
  /** The peer key (deriveClusterKeys(...).peer): controllers only. */
  readonly key: Uint8Array;
  /** This node's nonces, for the peers' handshakes it receives (served on GET /challenge). */
  readonly challenges: ChallengeBook;
  /** How to dial peers: TLS with this CA, or null for plain ws (insecure_dev). */
  readonly tls: DialTls | null;
  readonly log: Logger;
  /** Called for every frame received from an authenticated peer. */
  readonly onFrame: (from: number, frame: Uint8Array) => void;
  /** Jitter source for reconnect back-off (injected so tests can fix it). */
  readonly random?: () => number;
  /** Liveness timings (tests shorten them); defaults PEER_PING_MS, PEER_DEAD_MS, PEER_IDLE_MS. */
  readonly ping_ms?: number;
  readonly dead_ms?: number;
  readonly idle_ms?: number;
}

class PeerLink {
  private ws: WebSocket | null = null;
  private backoff_ms = PEER_RECONNECT_MS_MIN;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  dropped = 0;
  sent = 0;
  /** Links dropped because they showed no life for `dead_ms`. */
  silent = 0;

  constructor(
    readonly peer: PeerAddress,
    private readonly opts: PeerTransportOptions,
  ) {
    this.connect();
  }

  /** Asks the peer for a nonce, then dials with the handshake's proof; redials on any failure. */
  private connect(): void {
    if (this.stopped) return;
    const { tls, key, self } = this.opts;
    fetchChallenge(this.peer.address, tls, PEER_HANDSHAKE_MS).then(
      (challenge) => {
        if (this.stopped) return;
        const headers = {
          [HEADER_NODE]: String(self),
          ...handshakeHeaders(key, 'raft-peer', peerSubject(self, this.peer.id), challenge, Date.now()),
        };
        this.open(headers);
      },
      (err: Error) => {
        this.opts.log.debug('no challenge from peer; redialling', { peer: this.peer.id, error: err.message });
        this.schedule();
      },
    );
  }

  private open(headers: Record<string, string>): void {
    const tls = this.opts.tls;
    const ws = new WebSocket(`${tls !== null ? 'wss' : 'ws'}://${this.peer.address}/raft`, {
      headers,
      maxPayload: PEER_FRAME_BYTES_MAX,
      handshakeTimeout: PEER_HANDSHAKE_MS,
      perMessageDeflate: false,
      ...(tls !== null ? wssDialOptions(tls) : {}),
    });
    this.ws = ws;
    let watch: NodeJS.Timeout | null = null;
    ws.on('open', () => {
      this.backoff_ms = PEER_RECONNECT_MS_MIN;
      this.opts.log.debug('peer link up', { peer: this.peer.id });
      watch = this.watch(ws);
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (watch !== null) clearInterval(watch);
      if (this.ws === ws) this.ws = null;
      this.schedule();
    });
  }

  /** Pings an open link and drops it once it shows no life (see the file's head). */
  private watch(ws: WebSocket): NodeJS.Timeout {
    const dead_ms = this.opts.dead_ms ?? PEER_DEAD_MS;
    let alive = performance.now();
    let buffered = ws.bufferedAmount;
    ws.on('pong', () => {
      alive = performance.now();
    });
    return setInterval(() => {
      // Closing already (its 'close' clears this timer): ping() would throw on a socket not open.
      if (ws.readyState !== WebSocket.OPEN) return;
      const now = performance.now();
      const b = ws.bufferedAmount;
      if (b < buffered) alive = now;
      buffered = b;
      if (now - alive > dead_ms) {
        this.silent++;
        this.opts.log.info('peer link silent; redialling', {
          peer: this.peer.id,
          silent_ms: Math.round(now - alive),
          queued_bytes: b,
        });
        ws.terminate();
        return;
      }
      ws.ping();
    }, this.opts.ping_ms ?? PEER_PING_MS);
  }

  private schedule(): void {
    if (this.stopped || this.timer !== null) return;
    const jitter = 0.5 + (this.opts.random ?? Math.random)();
    const delay = Math.round(this.backoff_ms * jitter);
    this.backoff_ms = Math.min(this.backoff_ms * 2, PEER_RECONNECT_MS_MAX);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }

  send(frame: Uint8Array): boolean {
    const ws = this.ws;
    if (ws === null || ws.readyState !== WebSocket.OPEN || ws.bufferedAmount > PEER_BUFFERED_BYTES_MAX) {
      this.dropped++;
      return false;
    }
    ws.send(frame, { binary: true });
    this.sent++;
    return true;
  }

  connected(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Sends `frames` in order on the link open now, each once the link has drained below
   * PEER_STREAM_LOW_WATER_BYTES, so that a stream of any size holds a bounded amount of memory and
   * never crowds out the link's other messages (they are dropped past PEER_BUFFERED_BYTES_MAX).
   * False when there is no open link, or it closes or is replaced before the last frame is handed
   * to it (the receiver would then hold a stream with a gap).
   */
  async stream(frames: Iterable<Uint8Array>): Promise<boolean> {
    const ws = this.ws;
    if (ws === null || ws.readyState !== WebSocket.OPEN) return false;
    for (const frame of frames) {
      while (ws.bufferedAmount > PEER_STREAM_LOW_WATER_BYTES && ws.readyState === WebSocket.OPEN && !this.stopped) {
        await new Promise((r) => setTimeout(r, STREAM_POLL_MS));
      }
      if (this.ws !== ws || ws.readyState !== WebSocket.OPEN || this.stopped) return false;
      ws.send(frame, { binary: true });
      this.sent++;
      // Let timers (heartbeats, elections) run between frames even when the link never backs up.
      await new Promise((r) => setImmediate(r));
    }
    return this.ws === ws && ws.readyState === WebSocket.OPEN;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.ws?.terminate();
  }
}

export class PeerTransport implements PeerPort {
  private readonly links = new Map<number, PeerLink>();
  /** Received links, by the peer each was authenticated as. */
  private readonly inbound = new Map<number, Set<WebSocket>>();
  /** Received links closed for a bad frame: whatever else they carry is ignored. */
  private readonly refused = new WeakSet<WebSocket>();
  /** The received link whose frame `onFrame` is handling right now (closeInbound closes that one). */
  private delivering: { readonly from: number; readonly ws: WebSocket } | null = null;
  /** Received links closed for a bad frame. */
  closedForBadFrames = 0;
  readonly server: WebSocketServer;

  constructor(private readonly opts: PeerTransportOptions) {
    this.server = new WebSocketServer({ noServer: true, maxPayload: PEER_FRAME_BYTES_MAX, perMessageDeflate: false });
  }

  /**
   * Authenticates a `/raft` upgrade (the handshake's nonce is spent): the peer id, or why it is
   * refused (the caller answers 401 with it). A replayed handshake is logged as a warning.
   */
  authenticate(req: IncomingMessage): { readonly id: number } | { readonly refused: string } {
    const id = Number(req.headers[HEADER_NODE]);
    // Node ids are UInt32 on the wire, and no peer is this node.
    if (!Number.isInteger(id) || id <= 0 || id > 0xffff_ffff || id === this.opts.self)
      return { refused: `peer authentication failed: missing or bad ${HEADER_NODE} header` };
    try {
      this.opts.challenges.verify(req.headers, this.opts.key, 'raft-peer', peerSubject(id, this.opts.self));
      return { id };
    } catch (err) {
      if (!(err instanceof HandshakeError)) throw err;
      const about = { peer: id, address: req.socket.remoteAddress, error: err.message };
      if (err.code === 'replayed') this.opts.log.warn('refused a replayed peer handshake', about);
      else this.opts.log.info('refused a peer handshake', about);
      return { refused: `peer authentication failed: ${err.message}` };
    }
  }

  /**
   * Serves this transport on a controller's port: `GET /challenge` (the nonces of every handshake
   * this node receives, peers' and workers') and the `/raft` upgrade. `unavailable` says why the
   * node takes no link now (it fail-stopped), or null. `misdirected` answers a challenge request
   * instead of a nonce when it returns true (a worker's, on a controller that is not the leader:
   * worker-redirect.ts).
   */
  serveOn(
    port: ControllerPort,
    unavailable: () => string | null = () => null,
    misdirected: (req: IncomingMessage, res: ServerResponse) => boolean = () => false,
  ): void {
    port.onGet(CHALLENGE_PATH, (req, res) => {
      if (misdirected(req, res)) return;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.opts.challenges.issue()));
    });
    port.onUpgrade('/raft', (req, socket, head) => {
      const why = unavailable();
      if (why !== null) return refuse(socket, 503, why);
      const a = this.authenticate(req);
      if ('refused' in a) return refuse(socket, 401, a.refused);
      this.server.handleUpgrade(req, socket, head, (ws) => this.accept(ws, a.id));
    });
  }

  /** Takes over an authenticated upgraded socket from a peer. */
  accept(ws: WebSocket, from: number): void {
    ws.binaryType = 'nodebuffer';
    const idle_ms = this.opts.idle_ms ?? PEER_IDLE_MS;
    let heard = performance.now();
    ws.on('ping', () => {
      heard = performance.now();
    });
    const reap = setInterval(
      () => {
        if (performance.now() - heard <= idle_ms) return;
        this.opts.log.info('peer link idle; dropping it', {
          peer: from,
          idle_ms: Math.round(performance.now() - heard),
        });
        ws.terminate();
      },
      Math.min(idle_ms, 1_000),
    );
    let mine = this.inbound.get(from);
    if (mine === undefined) this.inbound.set(from, (mine = new Set()));
    mine.add(ws);
    ws.on('close', () => {
      clearInterval(reap);
      const set = this.inbound.get(from);
      set?.delete(ws);
      if (set?.size === 0) this.inbound.delete(from);
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (this.refused.has(ws)) return;
      heard = performance.now();
      if (!isBinary) {
        this.opts.log.warn('peer sent a text frame on /raft; closing', { peer: from });
        ws.close(1003, 'binary frames only');
        return;
      }
      this.delivering = { from, ws };
      try {
        this.opts.onFrame(from, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      } finally {
        this.delivering = null;
      }
    });
    ws.on('error', () => undefined);
  }

  /** Closes the received link carrying the frame being handled (else every link from `from`) for a
   * bad frame: a close with CLOSE_BAD_FRAME and the reason, cut if the peer does not complete it. */
  closeInbound(from: number, reason: string): void {
    const d = this.delivering;
    const targets = d !== null && d.from === from ? [d.ws] : [...(this.inbound.get(from) ?? [])];
    for (const ws of targets) {
      if (this.refused.has(ws)) continue;
      this.refused.add(ws);
      this.closedForBadFrames++;
      ws.close(CLOSE_BAD_FRAME, `bad frame: ${reason}`.slice(0, 120));
      setTimeout(() => ws.terminate(), REFUSED_CLOSE_MS).unref();
    }
  }

  setPeers(peers: readonly PeerAddress[]): void {
    const want = new Map(peers.filter((p) => p.id !== this.opts.self).map((p) => [p.id, p]));
    for (const [id, link] of this.links) {
      const p = want.get(id);
      if (p === undefined || p.address !== link.peer.address) {
        link.stop();
        this.links.delete(id);
      }
    }
    for (const [id, p] of want) if (!this.links.has(id)) this.links.set(id, new PeerLink(p, this.opts));
  }

  send(to: number, frame: Uint8Array): boolean {
    return this.links.get(to)?.send(frame) ?? false;
  }

  connected(to: number): boolean {
    return this.links.get(to)?.connected() ?? false;
  }

  /** Streams frames to a peer with flow control (PeerLink.stream); false when it could not. */
  stream(to: number, frames: Iterable<Uint8Array>): Promise<boolean> {
    return this.links.get(to)?.stream(frames) ?? Promise.resolve(false);
  }

  stats(): { peer: number; sent: number; dropped: number; silent: number; connected: boolean }[] {
    return [...this.links.values()].map((l) => ({
      peer: l.peer.id,
      sent: l.sent,
      dropped: l.dropped,
      silent: l.silent,
      connected: l.connected(),
    }));
  }

  close(): void {
    for (const link of this.links.values()) link.stop();
    this.links.clear();
    for (const c of this.server.clients) c.terminate();
    this.server.close();
  }
}
