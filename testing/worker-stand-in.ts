// A stand-in controller's `/worker` for worker tests: it serves nonces (GET /challenge) and
// authenticates each worker's handshake exactly as a controller does (authenticateWorker), with
// keys derived from a test secret; the test scripts what happens on the accepted sockets. And the
// options of a worker agent that dials it (standInAgentOptions).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { IncomingMessage } from 'node:http';
import { CHALLENGE_PATH, ChallengeBook } from '../daemon/handshake.js';
import { pathOf, refuse } from '../daemon/http-server.js';
import { deriveClusterKeys, hostCredentialKey, type HostCredential } from '../daemon/keys.js';
import { authenticateWorker } from '../daemon/worker-protocol.js';
import type { AgentOptions } from '../daemon/worker/agent.js';
import { workerIsRoot } from '../daemon/worker/identity.js';
import { silentLog } from './worker-fixtures.js';

export const STAND_IN_SECRET = new TextEncoder().encode('a-test-cluster-secret-of-at-least-32-bytes!!');
export const STAND_IN_KEYS = deriveClusterKeys(STAND_IN_SECRET);

/** The credential `xceadmin host enroll` would write for `host` of the stand-in cluster. */
export function standInCredential(host: string, epoch = 0, secret: Uint8Array = STAND_IN_SECRET): HostCredential {
  return { host, epoch, key: hostCredentialKey(deriveClusterKeys(secret).workerRoot, host, epoch) };
}

export interface StandInServer {
  readonly address: string;
  readonly challenges: ChallengeBook;
  /** Why each refused handshake was refused. */
  readonly authFailures: string[];
  close(): Promise<void>;
}

/** Serves /challenge and /worker on a free port of 127.0.0.1; `onConnection` gets each authenticated socket. */
export async function standInWorkerServer(
  onConnection: (ws: WebSocket, req: IncomingMessage, host: string) => void,
): Promise<StandInServer> {
  const challenges = new ChallengeBook();
  const authFailures: string[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((req, res) => {
    // By path, as a controller routes it (a worker asks `/challenge?for=worker`: worker-redirect.ts).
    if (pathOf(req) === CHALLENGE_PATH) res.end(JSON.stringify(challenges.issue()));
    else res.writeHead(404).end();
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    socket.on('error', () => undefined);
    let host: string;
    try {
      host = authenticateWorker(req.headers, challenges, STAND_IN_KEYS.workerRoot, () => 0);
    } catch (err) {
      authFailures.push((err as Error).message);
      return refuse(socket, 401, `worker authentication failed: ${(err as Error).message}`);
    }
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req, host));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    challenges,
    authFailures,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A worker agent's options for host h1 dialling `controllers` (stand-ins), short timings, no state dir; `over` replaces some. */
export function standInAgentOptions(controllers: string[], over: Partial<AgentOptions> = {}): AgentOptions {
  return {
    host: 'h1',
    controllers,
    resources: { slots: 8, mem_bytes: 16 * 1024 ** 3, numerics: {} },
    version: '0.1.0-test',
    credential: standInCredential('h1'),
    tls: null,
    stateDir: null,
    log: silentLog(),
    launchers: { openmpi: 'mpirun', mpich: 'mpirun' },
    asRoot: workerIsRoot(),
    setpriv: null,
    killGrace_ms: 300,
    hookTimeout_ms: 5_000,
    jobsMax: 16,
    now: Date.now,
    random: () => 0.5,
    reconnectMin_ms: 20,
    reconnectMax_ms: 100,
    statusResend_ms: 100,
    shutdownFlush_ms: 1_000,
    ...over,
  };
}
