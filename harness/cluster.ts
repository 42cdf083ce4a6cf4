// End-to-end harness: real `xcectld` and `xcecd` processes on 127.0.0.1, each with its own data
// directory under a temp folder, from a copy of the shipped configs/ whose controllers use free
// ports. Every process is killed when the test ends (the caller awaits `cluster.stop()`).
// With `netlab: true` each controller runs in a network namespace of its own instead
// (harness/netlab.ts), so that the drill can partition them for real. The command lines and the
// config copy come from harness/launch.ts, as `npm start`'s (harness/dev.ts) do.

import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XceClient } from '../cli/client.js';
import {
  controllerArgs,
  spawnDaemon,
  workerArgs,
  writeConfigCopy,
  writeHostCredential,
  writeSecretFile,
  type Daemon,
} from './launch.js';
import { NetLab } from './netlab.js';
import { type DialTls, fetchChallenge, type HandshakePurpose, handshakeHeaders, httpGet } from '../daemon/handshake.js';
import { type DevTls, makeDevTls } from './dev-tls.js';
import { type ClusterKeys, deriveClusterKeys } from '../daemon/keys.js';
import { freePort } from './ports.js';

export { repoRoot } from './launch.js';

export async function until<T>(
  what: string,
  f: () => T | undefined | false | Promise<T | undefined | false>,
  limit_ms = 15_000,
  every_ms = 25,
): Promise<T> {
  const end = Date.now() + limit_ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `timed out after ${limit_ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    await new Promise((r) => setTimeout(r, every_ms));
  }
}

export interface Proc {
  readonly name: string;
  proc: ChildProcess;
  log: string[];
}

export interface ClusterOptions {
  readonly controllers?: number;
  /** Worker hosts to start (each pretends to be that host of hosts.yaml, or one added here). */
  readonly workers?: ReadonlyArray<{
    host: string;
    slots?: number;
    bools?: string[];
    nums?: Record<string, number>;
    extraArgs?: string[];
  }>;
  /** Edit the config files before start: file name → new text (or a function of the old text). */
  readonly edit?: Record<string, (text: string) => string>;
  readonly snapshotEvery?: number;
  readonly schedulerGrace_ms?: number;
  readonly hostLost_ms?: number;
  /** Each controller in its own network namespace on a private bridge (needs root; see netlab.ts). */
  readonly netlab?: boolean;
  /** XCE_LOG_LEVEL of the controllers (default info; workers always log at info, waitForWorkers reads it). */
  readonly controllerLogLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Plain ws (xce.yaml insecure_dev: true) instead of TLS with the cluster's own throw-away CA. */
  readonly insecure?: boolean;
}

export class TestCluster {
  readonly dir = mkdtempSync(join(tmpdir(), 'xce-e2e-'));
  readonly configDir = join(this.dir, 'config');
  readonly secretFile = join(this.dir, 'cluster.secret');
  readonly ports = new Map<number, number>();
  readonly controllers = new Map<number, Proc>();
  readonly workers = new Map<string, Proc>();
  private readonly clients: XceClient[] = [];
  /** The controllers' private network, when started with `netlab: true`. */
  lab: NetLab | null = null;

  private constructor(private readonly opts: ClusterOptions) {}

  static async start(opts: ClusterOptions = {}): Promise<TestCluster> {
    const c = new TestCluster(opts);
    const n = opts.controllers ?? 3;
    for (let id = 1; id <= n; id++) c.ports.set(id, await freePort());
    if (opts.netlab) c.lab = NetLab.create([...c.ports.keys()]);
    try {
      c.writeConfig();
      for (let id = 1; id <= n; id++) c.startController(id);
      await c.waitForLeader();
      for (const w of opts.workers ?? []) c.startWorker(w.host, w);
      // A test that submits at once expects every worker to take jobs: without this, the
      // scheduler could place everything on whichever worker registered first.
      await c.waitForWorkers();
    } catch (err) {
      // What each controller said last, so that a cluster that never came up can be diagnosed.
      const said = [...c.controllers.values()].map(
        (p) =>
          `--- ${p.name} (exit ${p.proc.exitCode ?? 'none'}, signal ${p.proc.signalCode ?? 'none'}):\n${p.log.slice(-15).join('\n')}`,
      );
      await c.stop();
      if (err instanceof Error) err.message += `\n${said.join('\n')}`;
      throw err;
    }
    return c;
  }

  /** The host controller `id` listens on: 127.0.0.1, or its address in the lab. */
  host(id: number): string {
    return this.lab ? this.lab.address(id) : '127.0.0.1';
  }

  /** `host:port` of controller `id`. */
  address(id: number): string {
    return `${this.host(id)}:${this.ports.get(id)}`;
  }

  addresses(): string[] {
    return [...this.ports.keys()].map((id) => this.address(id));
  }

  private writeConfig(): void {
    const addresses = [...this.ports.keys()].map((id) => this.host(id)).filter((h) => h !== '127.0.0.1');
    this.tls = this.opts.insecure ? null : makeDevTls(join(this.dir, 'tls'), 'xce-test', addresses);
    const secret = writeConfigCopy(this.configDir, {
      controllers: [...this.ports].map(([id, port]) => ({ id, host: this.host(id), port })),
      edit: this.opts.edit,
      ...(this.tls !== null ? { tls: this.tls } : { insecure: true }),
    });
    writeSecretFile(this.secretFile, secret);
  }

  /** The cluster's throw-away CA and controller certificate; null with `insecure`. */
  tls: DevTls | null = null;

  /** What xcecli and xceadmin need in their environment to dial this cluster (its CA, or plain ws). */
  clientEnv(): Record<string, string> {
    return this.tls !== null ? { XCE_CA_FILE: this.tls.caFile } : { XCE_INSECURE_DEV: '1' };
  }

  /** GET `path` on controller `id` (https with the cluster's CA, or http), as JSON. */
  async getJson<T>(id: number, path: string, timeout_ms = 2_000): Promise<T> {
    const r = await httpGet(this.address(id), path, this.dialTls(), timeout_ms);
    if (r.status !== 200)
      throw new Error(`GET ${path} on controller ${id}: status ${r.status}: ${r.body.slice(0, 200)}`);
    return JSON.parse(r.body) as T;
  }

  /** GET `path` on controller `id` as text. */
  async getText(id: number, path: string, timeout_ms = 2_000): Promise<string> {
    return (await httpGet(this.address(id), path, this.dialTls(), timeout_ms)).body;
  }

  /** The cluster's root secret (controllers only: tests derive keys from it to forge handshakes). */
  rootSecret(): Uint8Array {
    return new TextEncoder().encode(readFileSync(this.secretFile, 'utf8'));
  }

  /** The keys the controllers derive from the root secret. */
  keys(): ClusterKeys {
    return deriveClusterKeys(this.rootSecret());
  }

  /** How to dial the controllers: their CA, or null over plain ws. */
  dialTls(): DialTls | null {
    return this.tls !== null ? { ca: readFileSync(this.tls.caFile) } : null;
  }

  /** `ws://` (or `wss://` over TLS) URL of `path` on controller `id`. */
  url(id: number, path: string): string {
    return `${this.dialTls() !== null ? 'wss' : 'ws'}://${this.address(id)}${path}`;
  }

  /** A fresh handshake's headers for controller `id` (a nonce from its GET /challenge), proved with `key`. */
  async handshake(
    id: number,
    purpose: HandshakePurpose,
    subject: string,
    key: Uint8Array,
  ): Promise<Record<string, string>> {
    const challenge = await fetchChallenge(this.address(id), this.dialTls(), 5_000);
    return handshakeHeaders(key, purpose, subject, challenge, Date.now());
  }

  /** Writes `host`'s credential at `epoch` (as `xceadmin host enroll` hands it out); returns its path. */
  writeCredential(host: string, epoch = 0): string {
    return writeHostCredential(
      join(this.dir, `${host}.credential`),
      readFileSync(this.secretFile, 'utf8'),
      host,
      epoch,
    );
  }

  /** Rewrites one config file in the test's config directory (for `config upgrade` tests). */
  configFiles(edit: Record<string, (text: string) => string> = {}): Array<{ path: string; text: string }> {
    return readdirSync(this.configDir)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => {
        const text = readFileSync(join(this.configDir, f), 'utf8');
        return { path: f, text: edit[f] ? edit[f](text) : text };
      });
  }

  private spawn(name: string, daemon: Daemon, args: string[], namespace?: string, logLevel = 'info'): Proc {
    // XCE_TEST_NODE_ARGS: extra node flags for the daemons (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
    const nodeArgs = (process.env['XCE_TEST_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
    const proc = spawnDaemon(daemon, args, { logLevel, nodeArgs, namespace });
    const p: Proc = { name, proc, log: [] };
    const keep = (d: Buffer) => {
      for (const line of d.toString('utf8').split('\n')) if (line !== '') p.log.push(line);
      if (p.log.length > 5_000) p.log.splice(0, p.log.length - 5_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    return p;
  }

  startController(id: number, extra: string[] = []): Proc {
    const { snapshotEvery, schedulerGrace_ms, hostLost_ms } = this.opts;
    const args = controllerArgs({
      configDir: this.configDir,
      id,
      dataDir: join(this.dir, `controller-${id}`),
      logFormat: 'json',
      tick_ms: 50,
      ...(snapshotEvery ? { snapshotEvery, snapshotCatchup: Math.max(1, Math.floor(snapshotEvery / 4)) } : {}),
      schedulerGrace_ms: schedulerGrace_ms || undefined,
      hostLost_ms,
      extraArgs: extra,
    });
    const p = this.spawn(`ctl-${id}`, 'xcectld', args, this.lab?.namespace(id), this.opts.controllerLogLevel);
    this.controllers.set(id, p);
    return p;
  }

  startWorker(
    host: string,
    w: { slots?: number; bools?: string[]; nums?: Record<string, number>; extraArgs?: string[] } = {},
  ): Proc {
    const args = workerArgs({
      host,
      controllers: this.addresses(),
      credentialFile: existsSync(join(this.dir, `${host}.credential`))
        ? join(this.dir, `${host}.credential`)
        : this.writeCredential(host),
      caFile: this.tls?.caFile ?? null,
      stateDir: join(this.dir, `xcecd-${host}`),
      slots: w.slots ?? 4,
      mem: '8G',
      bools: w.bools,
      nums: w.nums,
      extraArgs: w.extraArgs,
    });
    const p = this.spawn(`w-${host}`, 'xcecd', args);
    this.workers.set(host, p);
    return p;
  }

  /** A client logged in as `user` (dev password `<user>-dev`, see configs/users.yaml). */
  async client(user: string, opts: { controllers?: string[]; deadline_ms?: number } = {}): Promise<XceClient> {
    const c = new XceClient({
      controllers: opts.controllers ?? this.addresses(),
      callDeadline_ms: opts.deadline_ms ?? 20_000,
      tls: this.dialTls(),
    });
    this.clients.push(c);
    // One login (scrypt) per user; further clients reuse the token, as a user's shell does.
    let token = this.tokens.get(user);
    if (token === undefined) {
      token = c.login(user, `${user}-dev`);
      this.tokens.set(user, token);
      token.catch(() => this.tokens.delete(user));
    }
    c.token = await token;
    return c;
  }

  private readonly tokens = new Map<string, Promise<string>>();

  /** The leader's id as the controllers report it (cluster status through any of them). */
  async leader(): Promise<number> {
    for (const id of this.ports.keys()) {
      if (!this.controllers.has(id)) continue;
      try {
        const body = await this.getJson<{ leader: number }>(id, '/healthz', 500);
        if (body.leader > 0 && this.controllers.has(body.leader)) {
          const lr = await this.getJson<{ leader: number }>(body.leader, '/healthz', 500);
          if (lr.leader === body.leader) return body.leader;
        }
      } catch {
        // not up yet
      }
    }
    return 0;
  }

  /** Every started worker (or those named) has registered with a leader. */
  async waitForWorkers(hosts: readonly string[] = [...this.workers.keys()], limit_ms = 15_000): Promise<void> {
    await until(
      `workers ${hosts.join(', ')} to register with the leader`,
      async () =>
        hosts.every((h) => this.workers.get(h)?.log.some((l) => l.includes('registered with the leader'))) || undefined,
      limit_ms,
      50,
    );
  }

  async waitForLeader(limit_ms = 15_000): Promise<number> {
    return until('a leader', async () => (await this.leader()) || undefined, limit_ms);
  }

  kill(id: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.controllers.get(id);
    if (p === undefined) return Promise.resolve();
    this.controllers.delete(id);
    return killProc(p, signal);
  }

  /** SIGSTOP controller `id`: as if its machine died (no answer, no refused connection) until resume(id). */
  pause(id: number): void {
    this.controllers.get(id)?.proc.kill('SIGSTOP');
  }

  /** SIGCONT controller `id` after pause(id). */
  resume(id: number): void {
    this.controllers.get(id)?.proc.kill('SIGCONT');
  }

  killWorker(host: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.workers.get(host);
    if (p === undefined) return Promise.resolve();
    this.workers.delete(host);
    return killProc(p, signal);
  }

  dumpLogs(): string {
    return [...this.controllers.values(), ...this.workers.values()]
      .map((p) => `--- ${p.name}\n${p.log.slice(-40).join('\n')}`)
      .join('\n');
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
    // SIGKILL by default (fast, and what the tests are about); SIGTERM when profiling, so the
    // daemons write their profiles on the way out.
    const signal: NodeJS.Signals = process.env['XCE_TEST_NODE_ARGS'] ? 'SIGTERM' : 'SIGKILL';
    await Promise.all([...this.workers.keys()].map((h) => this.killWorker(h, signal)));
    await Promise.all([...this.controllers.keys()].map((id) => this.kill(id, signal)));
    this.lab?.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function killProc(p: Proc, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (p.proc.exitCode !== null || p.proc.signalCode !== null) return resolve();
    const t = setTimeout(() => p.proc.kill('SIGKILL'), 10_000);
    p.proc.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    p.proc.kill(signal);
    // A paused process (pause()) acts on the signal only once continued.
    if (signal !== 'SIGKILL') p.proc.kill('SIGCONT');
  });
}
