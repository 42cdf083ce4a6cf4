// Assembles one `xcectld`: validates the configuration directory (refusing to start on any error,
// as the brief requires for a dangling default), opens the node, and serves its one port:
// `/raft` (peers), `/api` (clients), `/worker` (workers), `/metrics` and `/healthz`.

import { readFileSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { ControllerNode, type ControllerFatalError, type ControllerNodeOptions } from './controller-node.js';
import { ControllerPort, pathOf, refuse } from './http-server.js';
import { RestServer } from './rest/server.js';
import { problem, sendProblem } from './rest/problem.js';
import { openApiDocument } from '../api/openapi.js';
import { ApiServer, countJobs } from './api-server.js';
import { registerAdmissionMetrics } from './api-admission-metrics.js';
import { TokenAuthority } from './auth.js';
import { ChallengeBook, type DialTls } from './handshake.js';
import { type ClusterKeys, deriveClusterKeys, formatHostCredential, hostCredentialKey } from './keys.js';
import { ControllerMetrics, ROLE_CODES, registerTlsMetrics, registerWorkerMetrics } from './metrics.js';
import type { Logger } from './log.js';
import { configFileKey, loadConfig } from '../model/config.js';
import type { ClusterConfig } from '../model/config-types.js';
import { formatDiagnostic } from '../model/diagnostics.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import { stateDigest } from '../statemachine/digest.js';
import { mismatchedHostCount } from '../statemachine/host-capacity.js';
import type { ConfigFile } from '../statemachine/facts.js';
import { StateType } from '../raft/raft.js';
import { WorkerHub, attachHub } from './worker-hub.js';
import { RetentionLoop } from './retention-loop.js';

/** xcectld's exit code after a fail-stop (a storage failure, a broken invariant): its supervisor
 * restarts it. Distinct from 1 (refused to start) so that an operator can tell them apart. */
export const EXIT_CODE_FAIL_STOP = 3;

export class ControllerStartError extends Error {
  override readonly name = 'ControllerStartError';
}

export interface ControllerOptions {
  readonly id: number;
  readonly configDir: string;
  /** The configuration directory's files (already read by the caller). */
  readonly configFiles: readonly ConfigFile[];
  readonly dataDir: string;
  readonly log: Logger;
  /** Listen here instead of the address xce.yaml gives this id (tests). */
  readonly listenHost?: string;
  readonly join?: boolean;
  readonly node?: Partial<
    Pick<
      ControllerNodeOptions,
      | 'tick_ms'
      | 'electionTicks'
      | 'heartbeatTicks'
      | 'snapshotEveryEntries'
      | 'snapshotCatchupEntries'
      | 'seed'
      | 'walFailSave'
    >
  >;
  /** Run the worker hub, scheduler and dispatcher (on the leader); default true. */
  readonly scheduler?: boolean;
  /** How long a new leader waits for workers to reconnect before scheduling. */
  readonly schedulerGrace_ms?: number;
  /** A host silent this long has its running jobs requeued (0: never). */
  readonly hostLost_ms?: number;
}

/** Loads and validates the configuration; throws ControllerStartError listing every error. */
export function loadBootstrapConfig(files: readonly ConfigFile[], configDir: string): ClusterConfig {
  const r = loadConfig(files);
  if (!r.ok) {
    throw new ControllerStartError(
      `the configuration in ${configDir} is invalid; refusing to start:\n  ${r.errors.map(formatDiagnostic).join('\n  ')}`,
    );
  }
  return r.config;
}

export function readSecret(config: ClusterConfig, configDir: string): Uint8Array {
  const s = config.cluster.secret;
  if (s.kind === 'inline') return new TextEncoder().encode(s.value);
  const path = isAbsolute(s.path) ? s.path : resolvePath(configDir, s.path);
  try {
    // Trailing whitespace (a final newline) is not part of the key: workers read it the same way.
    const bytes = readFileSync(path);
    let end = bytes.length;
    while (
      end > 0 &&
      (bytes[end - 1] === 0x0a || bytes[end - 1] === 0x0d || bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)
    )
      end--;
    return new Uint8Array(bytes.subarray(0, end));
  } catch (err) {
    throw new ControllerStartError(
      `cannot read the cluster secret file ${path} (xce.yaml secret_file): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** Reads xce.yaml's TLS files (paths relative to the configuration directory); null with insecure_dev. */
export function readTls(
  config: ClusterConfig,
  configDir: string,
  log: Logger,
): { cert: Buffer; key: Buffer; ca: Buffer } | null {
  const t = config.cluster.transport;
  if (t.kind === 'unset') {
    throw new ControllerStartError(
      'xce.yaml sets neither tls (cert_file, key_file, ca_file) nor insecure_dev: true; refusing to serve clients, peers and workers without TLS unless told so',
    );
  }
  if (t.kind === 'insecure') {
    log.warn(
      'INSECURE: xce.yaml says insecure_dev: true: /api, /raft and /worker are served over plain ws:// and http://, unencrypted (passwords, tokens, job environments in clear); development only',
    );
    return null;
  }
  const read = (field: string, path: string): Buffer => {
    const full = isAbsolute(path) ? path : resolvePath(configDir, path);
    try {
      return readFileSync(full);
    } catch (err) {
      throw new ControllerStartError(
        `cannot read xce.yaml tls.${field} ${full}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  };
  return { cert: read('cert_file', t.certFile), key: read('key_file', t.keyFile), ca: read('ca_file', t.caFile) };
}

export class Controller {
  readonly node: ControllerNode;
  readonly port: ControllerPort;
  /** How peers are dialled: the cluster CA over TLS, or null (insecure_dev). */
  readonly dialTls: DialTls | null;
  readonly api: ApiServer;
  /** The REST API (`/v1/...`) and the status page (`/`): daemon/rest/server.ts. */
  readonly rest: RestServer;
  readonly metrics: ControllerMetrics;
  readonly config: ClusterConfig;
  readonly tokens: TokenAuthority;
  /** The keys derived from the cluster secret, one per purpose (daemon/keys.ts). */
  readonly keys: ClusterKeys;
  /** The nonces of the handshakes this controller receives (peers' and workers'). */
  readonly challenges = new ChallengeBook();
  readonly hub: WorkerHub | null;
  readonly retention: RetentionLoop;
  private readonly files: ConfigFile[];
  address = '';

  constructor(private readonly opts: ControllerOptions) {
    this.config = loadBootstrapConfig(opts.configFiles, opts.configDir);
    // Facts carry base names: every controller stores the same bytes whatever its config path.
    this.files = opts.configFiles.map((f) => ({ path: configFileKey(f.path), text: f.text }));
    const me = this.config.cluster.controllers.find((c) => c.id === opts.id);
    if (me === undefined) {
      throw new ControllerStartError(
        `controller id ${opts.id} is not in xce.yaml controllers (ids: ${this.config.cluster.controllers.map((c) => c.id).join(', ')})`,
      );
    }
    const secret = readSecret(this.config, opts.configDir);
    try {
      this.keys = deriveClusterKeys(secret);
    } catch (err) {
      throw new ControllerStartError(`xce.yaml: ${(err as Error).message}`);
    }
    this.tokens = new TokenAuthority(this.keys.userToken, `xce:${this.config.cluster.name}`);
    const tls = readTls(this.config, opts.configDir, opts.log);
    this.port = new ControllerPort(tls !== null ? { ...tls, ticketRoot: this.keys.tlsTicketRoot } : undefined);
    this.dialTls = tls !== null ? { ca: tls.ca } : null;
    this.node = new ControllerNode({
      id: opts.id,
      dataDir: opts.dataDir,
      bootstrapControllers: this.config.cluster.controllers,
      secret,
      challenges: this.challenges,
      tls: this.dialTls,
      log: opts.log,
      ...(opts.join ? { join: true } : {}),
      ...opts.node,
    });
    this.retention = new RetentionLoop(this.node, opts.log.child({ component: 'retention' }));
    this.metrics = this.buildMetrics();
    this.api = new ApiServer(this.node, this.tokens, opts.log.child({ component: 'api' }), this.metrics, this.config);
    this.node.onFsync((s) => this.metrics.walFsync.observe(s));
    this.node.onApplied((rs) => this.metrics.applyBatch.observe(rs.length));
    this.node.onLeadership((leader) => {
      if (leader) void this.ensureConfig();
    });
    this.node.onFatal((err) => this.failStop(err));
    this.hub =
      opts.scheduler === false
        ? null
        : attachHub(
            this.node,
            { workerRoot: this.keys.workerRoot, challenges: this.challenges },
            {
              ...(opts.schedulerGrace_ms !== undefined ? { schedulerGrace_ms: opts.schedulerGrace_ms } : {}),
              ...(opts.hostLost_ms !== undefined ? { hostLost_ms: opts.hostLost_ms } : {}),
            },
          );
    this.api.hostCredential = (host, epoch) =>
      formatHostCredential({ host, epoch, key: hostCredentialKey(this.keys.workerRoot, host, epoch) });
    const hub = this.hub;
    if (hub !== null) {
      this.api.schedulerReason = (id) => hub.schedulerPendReason(id);
      this.api.availableHosts = () => hub.availableHosts();
      this.api.lostHosts = () => hub.lostHosts();
      this.api.peekWorker = (host, q) => hub.peek(host, q);
      registerWorkerMetrics(this.metrics.registry, hub);
    }
    registerTlsMetrics(this.metrics.registry, this.port.handshakes);
    hub?.scheduler.onPass((p) => this.metrics.schedulerPass.observe(p.duration_ms / 1000));
    registerAdmissionMetrics(this.metrics.registry, () => this.api.admissionStats());
    this.routes();
    this.rest = this.serveRest(opts.log);
    this.listenAt = { host: opts.listenHost ?? me.host, port: me.port };
  }

  private buildMetrics(): ControllerMetrics {
    const id = this.opts.id;
    return new ControllerMetrics(String(id), {
      term: () => (this.started ? this.node.status().term : 0),
      roleCode: () => {
        if (!this.started) return ROLE_CODES.follower;
        const s = this.node.status();
        if (!s.conf.voters.includes(id) && s.conf.learners.includes(id)) return ROLE_CODES.learner;
        return s.state === StateType.Leader
          ? ROLE_CODES.leader
          : s.state === StateType.Candidate
            ? ROLE_CODES.candidate
            : s.state === StateType.PreCandidate
              ? ROLE_CODES.precandidate
              : ROLE_CODES.follower;
      },
      commitIndex: () => (this.started ? this.node.status().commit : 0),
      appliedIndex: () => (this.started ? this.node.status().appliedIndex : 0),
      jobsByState: () => countJobs(this.node.state),
      framesRefused: () => this.node.framesRefused(),
      hostsMismatched: () => {
        const config = this.node.state.config?.cluster;
        return config === undefined ? 0 : mismatchedHostCount(config, this.node.state.hosts);
      },
      retention: () => this.retention.figures(),
    });
  }

  /** The port's paths: /raft, /api, /worker, /metrics, /healthz. */
  private routes(): void {
    const opts = this.opts;
    const hub = this.hub;
    this.node.transport.serveOn(
      this.port,
      () => (this.fatal !== null ? `this controller stopped: ${this.fatal.message}` : null),
      (req, res) => this.fatal === null && hub !== null && hub.answerMisdirectedChallenge(req, res),
    );
    this.port.onUpgrade('/api', (req, socket, head) =>
      this.fatal !== null
        ? refuse(socket, 503, `this controller stopped: ${this.fatal.message}`)
        : this.api.handleUpgrade(req, socket, head),
    );
    this.port.onUpgrade(
      '/worker',
      hub !== null
        ? (req, socket, head) =>
            this.fatal !== null
              ? refuse(socket, 503, `this controller stopped: ${this.fatal.message}`)
              : hub.handleUpgrade(req, socket, head)
        : (_req, socket) => refuse(socket, 404, 'this controller runs no worker hub (--no-scheduler)'),
    );
    this.port.onGet('/metrics', async (_req, res) => {
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(await this.metrics.text());
    });
    this.port.onGet('/healthz', (req, res) => {
      const s = this.node.status();
      // `?digest=1` adds the SHA-256 of the state's snapshot encoding at that same applied index
      // (the drill compares it across controllers); computed on request only: it costs a snapshot.
      const digest =
        new URL(req.url ?? '/', 'http://x').searchParams.get('digest') === '1'
          ? { digest: stateDigest(this.node.state), jobs: this.node.state.jobs.size }
          : {};
      // `api`: the client API's admission figures (connections, paused and stalled sockets, refusals; api-admission.ts).
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: opts.id,
          leader: s.lead,
          term: s.term,
          applied: s.appliedIndex,
          pid: process.pid,
          api: this.api.admissionStats(),
          ...digest,
        }) + '\n',
      );
    });
  }

  /** The REST API and the status page on the port's other paths (503 once the node fail-stopped). */
  private serveRest(log: Logger): RestServer {
    const rest = new RestServer({
      api: this.api,
      dialTls: this.dialTls,
      node: this.node,
      log: log.child({ component: 'rest' }),
      registry: this.metrics.registry,
      openapi: openApiDocument(),
    });
    this.port.onOther(
      (path) => rest.serves(path),
      (req, res) =>
        this.fatal !== null
          ? sendProblem(res, problem('unavailable', `this controller stopped: ${this.fatal.message}`, pathOf(req)))
          : rest.handle(req, res),
    );
    return rest;
  }

  private started = false;
  private readonly listenAt: { host: string; port: number };
  private fatal: ControllerFatalError | null = null;
  private readonly fatalListeners: Array<(err: ControllerFatalError) => void> = [];

  /** Called once when the node fail-stops (xcectld exits non-zero on it). */
  onFatal(fn: (err: ControllerFatalError) => void): void {
    this.fatalListeners.push(fn);
  }

  /**
   * The node fail-stopped (it already logged the cause): stop serving clients and workers at once,
   * so that they move to another controller instead of waiting on one that will never answer
   * (workers would otherwise stay attached and their jobs be requeued as lost hosts).
   */
  private failStop(err: ControllerFatalError): void {
    if (this.fatal !== null) return;
    this.fatal = err;
    this.retention.stop();
    this.api.close();
    this.hub?.close();
    for (const fn of this.fatalListeners) fn(err);
  }

  async start(): Promise<void> {
    await this.node.start();
    this.started = true;
    this.retention.start();
    try {
      const addr = await this.port.listen(this.listenAt.host, this.listenAt.port);
      this.address = `${addr.address}:${addr.port}`;
    } catch (err) {
      await this.node.stop();
      throw new ControllerStartError(
        `cannot listen on ${this.listenAt.host}:${this.listenAt.port}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    this.opts.log.info('controller listening', {
      id: this.opts.id,
      address: this.address,
      dataDir: this.opts.dataDir,
      configDir: this.opts.configDir,
    });
  }

  /** A new leader whose state has no configuration yet proposes the bootstrap one. */
  private async ensureConfig(): Promise<void> {
    for (let attempt = 0; attempt < 50 && this.node.isLeader(); attempt++) {
      try {
        await this.node.readBarrier();
        if (this.node.state.config !== null) return;
        const r = await this.node.propose(
          encodeFact({
            clientId: null,
            sequence: 0,
            timeMs: Date.now(),
            body: { kind: 'config', files: this.files, user: null },
          }),
        );
        this.opts.log.info('applied the bootstrap configuration', {
          result: r.kind,
          ...(r.kind === 'rejected' ? { message: r.message } : {}),
        });
        return;
      } catch (err) {
        this.opts.log.debug('bootstrap configuration not applied yet; retrying', { error: (err as Error).message });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async stop(opts: { transfer?: boolean } = {}): Promise<void> {
    this.retention.stop();
    this.api.close();
    this.hub?.close();
    await this.node.stop(opts);
    await this.port.close();
  }
}
