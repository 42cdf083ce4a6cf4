// The worker's connection to the leader controller (`/worker`): dialing, following `not-leader`
// (to its challenge request or its upgrade: worker-redirect.ts) to the leader, back-off and its
// delays (redial.ts; daemon/net/leader-follower.ts), registration (a refusal logged once per
// reason), heartbeats, and handing the frames about jobs (start, kill, status-ack) to the agent;
// with a controller that names `reports-batch` at registration, the acks and statuses of one turn
// go in one frame (report-outbox.ts). A leader busy with registrations answers `busy`
// (daemon/worker-busy.ts): the worker dials it again after that long, jittered, without counting it
// a leader loss or growing its back-off.

import WebSocket from 'ws';
import type { Logger } from '../log.js';
import { LeaderFollower } from '../net/leader-follower.js';
import { dialAgent, wssDialOptions, handshakeHeaders } from '../handshake.js';
import { lastDialResumed } from '../tls-resumption.js';
import {
  type ControllerToWorkerFrame,
  encodeFrame,
  toWorkerUrl,
  WORKER_FRAME_BYTES_MAX,
  WORKER_HEADER_HOST,
  type WorkerToControllerFrame,
} from '../worker-protocol.js';
import { busyRetryOf } from '../worker-busy.js';
import { fetchWorkerChallenge, leaderHintOf, onRefusedUpgrade } from '../worker-redirect.js';
import { WORKER_HEADER_FEATURES } from '../worker-start-batch.js';
import { readControllerFrame } from './controller-frames.js';
import { FEATURE_REPORTS_BATCH } from '../worker-report-frames.js';
import { ReportOutbox } from './report-outbox.js';
import { RedialSchedule } from './redial.js';
import {
  FEATURE_PING_HEARTBEAT,
  WORKER_FEATURES,
  HANDSHAKE_TIMEOUT_MS,
  HEARTBEAT_MISSES_MAX,
  RECONNECT_MS_MAX_DEFAULT,
  REFUSED_WARN_EVERY_MS,
  REGISTER_TIMEOUT_MS_DEFAULT,
  type LinkAnswer,
  type LinkHandler,
  type LinkOptions,
  type Reply,
} from './link-contract.js';

export * from './link-contract.js';
export { REDIRECTS_MAX } from '../net/leader-follower.js';

export class LeaderLink {
  private readonly follower: LeaderFollower;
  private readonly redial: RedialSchedule;
  private ws: WebSocket | null = null;
  private registered = false;
  /** The registered connection's outbox when its controller takes `reports` frames. */
  private reports: { readonly ws: WebSocket; readonly box: ReportOutbox } | null = null;
  /** The last connection's `not-leader` named a leader to dial next, at once. */
  private followingHint = false;
  private heartbeatSeq = 0;
  /** The leader takes this connection's pings as its heartbeats: no `heartbeat` frame beside them. */
  private pingHeartbeat = false;
  /** Pings sent since the controller was last heard from (a frame or a pong). */
  private unanswered = 0;
  private heartbeat_ms = 0;
  private timers: { heartbeat?: NodeJS.Timeout; register?: NodeJS.Timeout; reconnect?: NodeJS.Timeout } = {};
  /** The reason the last connection's registration was refused (until the next connection). */
  private refusedReason: string | null = null;
  /** The refusal last logged as a warning, and when. */
  private refusedWarned: { reason: string; at: number } | null = null;
  /** The last connection was dropped for want of an answer to `register`; and how often in a row on this controller. */
  private registerTimedOut = false;
  private registerTimeoutsHere = 0;
  /** The last connection was answered `busy`: dial the same controller again after this long. */
  private busyRetry_ms: number | null = null;
  /** `busy` answers since this link started (tests, the fleet's counts). */
  busyAnswers = 0;
  /** The leader this worker is registered with, for logs and tests. */
  leaderId: number | null = null;
  /** Registrations the leader refused since the last one it accepted. */
  refusals = 0;
  /** A dial's challenge and WebSocket share one connection (handshake.ts dialAgent). */
  private readonly agent: ReturnType<typeof dialAgent>;

  constructor(
    private readonly opts: LinkOptions,
    private readonly log: Logger,
    private readonly handler: LinkHandler,
  ) {
    // `wss://` when dialling over TLS (a leader's address comes as `host:port` or `ws://`).
    const toUrl = (a: string): string => (opts.tls !== null ? toWorkerUrl(a).replace(/^ws:/, 'wss:') : toWorkerUrl(a));
    this.follower = new LeaderFollower({ addresses: opts.controllers, toUrl });
    this.agent = dialAgent(opts.tls);
    this.redial = new RedialSchedule(opts);
  }

  isRegistered(): boolean {
    return this.registered;
  }

  /** How to send on the registered connection now; null when there is none. */
  registeredSender(): Reply | null {
    const ws = this.ws;
    if (ws === null || !this.registered) return null;
    return (frame) => this.send(ws, frame);
  }

  /** Stops at once: no more connections, timers cleared, the connection dropped. */
  close(): void {
    this.follower.close();
    for (const t of Object.values(this.timers)) {
      clearTimeout(t);
      clearInterval(t);
    }
    this.timers = {};
    this.ws?.terminate();
    this.ws = null;
    this.agent.destroy();
  }

  /**
   * Asks the controller for a nonce, then dials with the handshake's proof (daemon/handshake.ts); a
   * controller that is not the leader answers `not-leader` instead of a nonce (worker-redirect.ts).
   */
  connect(): void {
    if (this.follower.closed) return;
    const url = this.follower.current();
    this.followingHint = false;
    this.opts.trace?.({ kind: 'dial', url });
    const c = this.opts.credential;
    const plain = { [WORKER_HEADER_HOST]: this.opts.host, [WORKER_HEADER_FEATURES]: WORKER_FEATURES };
    if (c === null) return this.open(url, plain);
    fetchWorkerChallenge(new URL(url).host, this.opts.tls, HANDSHAKE_TIMEOUT_MS, this.agent).then(
      (challenge) => {
        if (this.follower.closed) return;
        if ('notLeader' in challenge) {
          this.onNotLeader(url, challenge.notLeader);
          return this.retry(url, null);
        }
        this.open(url, {
          ...plain,
          ...handshakeHeaders(c.key, 'worker', this.opts.host, challenge, this.opts.now()),
        });
      },
      (err: Error) => {
        this.log.debug('no challenge from the controller', { url, error: err.message });
        this.answered(url, 'unreachable', err.message);
        this.retry(url, null);
      },
    );
  }

  private open(url: string, headers: Record<string, string>): void {
    const tls = this.opts.tls;
    const ws = new WebSocket(url, {
      headers,
      maxPayload: WORKER_FRAME_BYTES_MAX,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      agent: this.agent,
      ...(tls !== null ? wssDialOptions(tls) : {}),
    });
    this.ws = ws;
    // A refused handshake says why: 401 (a revoked host, a credential of another epoch), 503 (busy).
    onRefusedUpgrade(ws, (status, body) => {
      if (ws !== this.ws) return;
      if (status === 401) this.onRefused(url, body || 'authentication failed');
      if (status === 503) this.busyRetry_ms = busyRetryOf(body);
      if (status === 503) this.answered(url, 'busy');
      if (status === 421) this.onNotLeader(url, leaderHintOf(body));
      if (status !== 401 && status !== 503 && status !== 421) this.answered(url, 'error', `HTTP ${status}`);
    });
    this.log.debug('connecting', { url });
    ws.on('open', () => {
      this.unanswered = 0;
      this.send(ws, {
        type: 'register',
        host: this.opts.host,
        resources: this.opts.resources,
        version: this.opts.version,
        running: this.handler.running(),
      });
      this.timers.register = setTimeout(() => {
        if (!this.registered) {
          this.log.warn('no answer to register; trying again, then another controller', { url });
          this.registerTimedOut = true;
          this.answered(url, 'register-timeout');
          ws.terminate();
        }
      }, this.opts.registerTimeout_ms ?? REGISTER_TIMEOUT_MS_DEFAULT);
    });
    ws.on('message', (data, isBinary) => this.onMessage(ws, url, isBinary ? (data as Buffer) : data.toString()));
    ws.on('pong', () => {
      if (ws === this.ws) this.unanswered = 0;
    });
    ws.on('error', (err) => {
      this.log.debug('connection error', { url, error: err.message });
      if (ws === this.ws) this.answered(url, 'error', err.message);
    });
    ws.on('close', (code, reason) => this.onClosed(ws, url, code, reason.toString('utf8')));
  }

  private onMessage(ws: WebSocket, url: string, text: string | Buffer): void {
    if (ws !== this.ws) return;
    this.unanswered = 0;
    readControllerFrame(text, {
      frame: (frame) => this.onFrame(ws, url, frame),
      unreadableStart: (start, error) => {
        if (this.registered) this.handler.onUnreadableStart((f) => this.send(ws, f), url, start, error);
        return this.registered;
      },
      bad: (what, error) => this.log.warn(`dropping a bad ${what} from the controller`, { url, error: error.message }),
    });
  }

  private onFrame(ws: WebSocket, url: string, frame: ControllerToWorkerFrame): void {
    const reply: Reply = (f) => this.send(ws, f);
    switch (frame.type) {
      case 'registered':
        // The outbox first: the statuses re-sent on registration go in it.
        this.reports = frame.features?.includes(FEATURE_REPORTS_BATCH)
          ? { ws, box: new ReportOutbox(this.opts.host, (text) => this.write(ws, text)) }
          : null;
        this.pingHeartbeat = frame.features?.includes(FEATURE_PING_HEARTBEAT) === true;
        this.onRegistered(ws, url, frame.leaderId, frame.heartbeat_ms, frame.hosts);
        return;
      case 'not-leader':
        this.onNotLeader(url, frame.leader?.address);
        if (this.followingHint) {
          this.log.info('following the leader', { from: url, leader: frame.leader?.id, to: this.follower.current() });
        } else {
          this.log.info('controller knows no leader; backing off', { url });
        }
        ws.close();
        return;
      case 'refused':
        if (!this.registered) this.onRefused(url, frame.reason);
        ws.close();
        return;
      case 'busy':
        if (!this.registered) this.answered(url, 'busy');
        if (!this.registered) this.busyRetry_ms = frame.retry_ms;
        ws.close();
        return;
      case 'start':
        if (!this.registered) return this.log.warn('start before registered: ignored', { url });
        return this.handler.onStart(reply, frame.startInfo);
      case 'kill':
        if (!this.registered) return;
        return this.handler.onKill(reply, frame);
      case 'signal':
        if (!this.registered) return;
        return this.handler.onSignal(reply, frame);
      case 'status-ack':
        return this.handler.onStatusAck(frame.statusId);
      case 'status-acks':
        for (const id of frame.statusIds) this.handler.onStatusAck(id);
        return;
      case 'peek':
        if (!this.registered) return;
        return this.handler.onPeek(reply, frame);
    }
  }

  /** The leader will not take this host: say why, clearly, without repeating it every retry. */
  private onRefused(url: string, reason: string): void {
    clearTimeout(this.timers.register);
    this.answered(url, 'refused');
    this.refusedReason = reason;
    this.refusals++;
    const now = this.opts.now();
    const w = this.refusedWarned;
    const retry_ms = this.opts.reconnectMax_ms ?? RECONNECT_MS_MAX_DEFAULT;
    if (w === null || w.reason !== reason || now - w.at >= REFUSED_WARN_EVERY_MS) {
      this.refusedWarned = { reason, at: now };
      this.log.warn(`the leader refused this worker's registration: ${reason}`, { url, reason, retry_ms });
    }
  }

  /** A `not-leader` answer (a 421 or a frame): follow its hint at once, or back off. */
  private onNotLeader(url: string, hint: string | undefined): void {
    this.followingHint = this.follower.follow(url, hint);
    const ignored = this.followingHint ? '' : '-ignored';
    this.answered(url, hint === undefined ? 'no-leader' : `not-leader-hint${ignored}`, hint);
  }

  private answered(url: string, answer: LinkAnswer, detail?: string): void {
    this.opts.trace?.({ kind: 'answer', url, answer, ...(detail !== undefined ? { detail } : {}) });
  }

  /** `hosts`: the hosts the cluster lists, when the leader says (the spread of the next reconnect). */
  private onRegistered(ws: WebSocket, url: string, leaderId: number, heartbeat_ms: number, hosts?: number): void {
    clearTimeout(this.timers.register);
    this.answered(url, 'registered');
    this.registerTimeoutsHere = 0;
    if (this.refusedWarned !== null)
      this.log.info('registered after the leader had refused this worker', { refusals: this.refusals });
    this.refusedWarned = null;
    this.refusals = 0;
    this.registered = true;
    this.leaderId = leaderId;
    this.follower.reached();
    this.redial.reached(hosts);
    this.heartbeat_ms = heartbeat_ms;
    this.heartbeatSeq = 0;
    clearInterval(this.timers.heartbeat);
    this.timers.heartbeat = setInterval(() => this.heartbeat(ws), heartbeat_ms);
    this.handler.onRegistered(url, leaderId, lastDialResumed(this.agent));
  }

  private heartbeat(ws: WebSocket): void {
    if (ws !== this.ws || !this.registered) return;
    // Counted in heartbeats, not wall time: a worker whose own event loop stalled did not miss anything.
    if (this.unanswered >= HEARTBEAT_MISSES_MAX) {
      this.log.warn('the leader stopped answering; reconnecting', {
        heartbeats_missed: this.unanswered,
        heartbeat_ms: this.heartbeat_ms,
      });
      ws.terminate();
      return;
    }
    if (!this.pingHeartbeat) this.send(ws, { type: 'heartbeat', host: this.opts.host, seq: this.heartbeatSeq++ });
    ws.ping();
    this.unanswered++;
  }

  private onClosed(ws: WebSocket, url: string, code: number, reason: string): void {
    if (ws !== this.ws) return;
    this.ws = null;
    this.reports = null;
    const wasRegistered = this.registered;
    this.registered = false;
    this.leaderId = null;
    clearInterval(this.timers.heartbeat);
    clearTimeout(this.timers.register);
    const refused = this.refusedReason;
    this.refusedReason = null;
    if (this.follower.closed) return;
    if (wasRegistered) this.log.warn('lost the connection to the leader', { url });
    if (wasRegistered) this.opts.trace?.({ kind: 'lost', url });
    // A controller that closes for a policy reason (1008) without a `refused` frame (an older one,
    // or a frame it would not take) still says why in the close reason.
    else if (refused === null && code === 1008)
      this.log.warn(`the controller closed the connection: ${reason || 'no reason given'}`, { url, code });
    this.retry(url, refused, wasRegistered);
  }

  /** Dials again: at once after a leader's hint, else after the back-off (its longest after a refusal). */
  private retry(url: string, refused: string | null, wasRegistered = false): void {
    if (this.follower.closed) return;
    const busy_ms = this.busyRetry_ms;
    this.busyRetry_ms = null;
    if (busy_ms !== null) {
      // The leader is busy with registrations: the same controller, after that long and up to half again.
      this.busyAnswers++;
      const delay = Math.round(busy_ms * (1 + this.opts.random() / 2));
      this.opts.trace?.({ kind: 'wait', why: 'busy', ms: delay });
      this.log.debug('the controller is busy with registrations; dialling it again', { url, retry_ms: busy_ms, delay });
      this.timers.reconnect = setTimeout(() => this.connect(), delay);
      return;
    }
    if (this.followingHint) {
      this.registerTimeoutsHere = 0;
      this.timers.reconnect = setTimeout(() => this.connect(), 0);
      return;
    }
    // A controller that took the connection but did not answer `register` in time is most likely the
    // leader, busy with a storm of registrations: it is dialled once more before the next one (which
    // would only redirect here again, a handshake more for the leader each time).
    const timedOut = this.registerTimedOut;
    this.registerTimedOut = false;
    if (timedOut && ++this.registerTimeoutsHere === 1) this.log.debug('dialling the same controller again', { url });
    else {
      this.registerTimeoutsHere = 0;
      this.follower.next(url);
    }
    const delay = wasRegistered
      ? this.redial.afterLoss()
      : refused !== null
        ? this.redial.afterRefusal()
        : this.redial.afterFailedDial();
    const why = wasRegistered ? 'spread' : refused !== null ? 'refused' : 'backoff';
    this.opts.trace?.({ kind: 'wait', why, ms: delay });
    if (refused !== null)
      this.log.debug('registration refused; retrying', { url, reason: refused, refusals: this.refusals, in_ms: delay });
    this.timers.reconnect = setTimeout(() => this.connect(), delay);
  }

  /** Sends on `ws`; an ack or status on a connection with an outbox goes at the end of the turn, with the others. */
  private send(ws: WebSocket, frame: WorkerToControllerFrame): boolean {
    if (ws.readyState !== WebSocket.OPEN) return false;
    if (this.reports?.ws === ws && this.reports.box.push(frame)) return true;
    ws.send(encodeFrame(frame));
    return true;
  }

  private write(ws: WebSocket, text: string): boolean {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  }
}
