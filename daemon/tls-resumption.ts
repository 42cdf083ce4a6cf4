// TLS session resumption from one controller to another, for the storm of worker re-registrations
// after a failover. Every controller encrypts its TLS 1.3 session tickets with the same keys, those
// of the current period (a UTC day), derived from the cluster secret (keys.ts tlsTicketKeys). A
// worker keeps the latest session any controller gave it and offers it on its next dial, whichever
// controller that goes to (ResumingAgent). So after a leader dies, its hosts resume their sessions
// on the new leader instead of making full handshakes with it.
//
// What a resumed handshake leaves out: the server sends no certificate and signs nothing, and the
// client parses and verifies none (Node's getPeerCertificate and checkServerIdentity were about a
// quarter of a simulated host's CPU in a 2,000-host failover: benchmarks/README.md). The key
// exchange is still made (TLS 1.3 psk_dhe_ke), so each session's traffic keys stay forward-secret.
//
// What it proves: the server opened the ticket, so it holds the period's ticket key, and only the
// controllers derive that, from the cluster secret. Whoever holds that secret can already mint
// host credentials and user tokens and join the Raft group. A ticket from another period or another
// cluster, or one offered to a server without the key, is not accepted. The handshake is then a
// full one, with the certificate verified against the CA as always.

import type { Duplex } from 'node:stream';
import type { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type RequestOptions } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tlsTicketKeys } from './keys.js';

/** A period of ticket keys: a UTC day. A ticket is accepted until its period ends. */
export const TLS_TICKET_PERIOD_MS = 24 * 3600 * 1000;

/**
 * The session context every controller names (OpenSSL resumes only a session of the same context).
 * Node's default is a hash of the process's command line, which differs from one controller to the
 * next (`--id`, `--data`): with it no session would resume on another controller.
 */
export const TLS_SESSION_ID_CONTEXT = 'xce-controller';

/**
 * The TLS server options under which a session one controller gave resumes on another; the keys
 * themselves are the period's, set by TicketKeyRotation when the port starts listening.
 */
export const TICKET_SERVER_OPTIONS = {
  // A ticket's age is bounded by a period's length, so that a session from the start of a day
  // still resumes at its end (the keys change then anyway).
  sessionTimeout: TLS_TICKET_PERIOD_MS / 1000,
  sessionIdContext: TLS_SESSION_ID_CONTEXT,
} as const;

function ticketKeysAt(ticketRoot: Uint8Array, now_ms: number): Buffer {
  return tlsTicketKeys(ticketRoot, Math.floor(now_ms / TLS_TICKET_PERIOD_MS));
}

/**
 * Sets a TLS server's ticket keys to those of each new period when it starts. Controllers whose
 * clocks differ around midnight disagree for that long: a ticket one issued is then not accepted
 * by the other, and the handshake is a full one.
 */
export class TicketKeyRotation {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly server: { setTicketKeys(keys: Buffer): void },
    private readonly ticketRoot: Uint8Array,
    private readonly now: () => number = Date.now,
  ) {}

  /** Sets the keys of the period now, and again at the start of each next one. */
  start(): void {
    this.stop();
    const now_ms = this.now();
    this.server.setTicketKeys(ticketKeysAt(this.ticketRoot, now_ms));
    const next_ms = (Math.floor(now_ms / TLS_TICKET_PERIOD_MS) + 1) * TLS_TICKET_PERIOD_MS;
    this.timer = setTimeout(() => this.start(), next_ms - now_ms + 1);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** Handshakes a TLS server completed, full and resumed. */
export class HandshakeCounts {
  full = 0;
  resumed = 0;

  /** Counts a TLS socket once its handshake is done (a server's `secureConnection`). */
  count(socket: { isSessionReused(): boolean }): void {
    if (socket.isSessionReused()) this.resumed++;
    else this.full++;
  }
}

/**
 * An https agent that offers, on every new connection, the latest TLS session any server gave it:
 * a worker's link dials whichever controller leads, and the controllers share their ticket keys.
 * An agent of Node's own keeps a session per address, so a dial of another controller would make
 * a full handshake. A session a server does not accept costs nothing: the handshake is a full one,
 * and its new session replaces the old.
 */
export class ResumingAgent extends HttpsAgent {
  private session: Buffer | null = null;
  /** Whether the handshake of the connection made last resumed a session. */
  lastResumed = false;

  override createConnection(
    options: RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const offered: RequestOptions & { session?: Buffer } =
      this.session !== null ? { ...options, session: this.session } : options;
    const socket = super.createConnection(offered, callback);
    socket?.on('session', (session: Buffer) => {
      this.session = session;
    });
    socket?.once('secureConnect', () => (this.lastResumed = (socket as TLSSocket).isSessionReused()));
    return socket;
  }

  /** Whether a server gave a session to offer (for tests). */
  hasSession(): boolean {
    return this.session !== null;
  }
}

/**
 * Whether a dialler's latest connection resumed a TLS session (a worker's link, in its log line on
 * registering): false over plain http, or with an agent that does not offer sessions.
 */
export function lastDialResumed(agent: HttpAgent): boolean {
  return agent instanceof ResumingAgent && agent.lastResumed;
}
