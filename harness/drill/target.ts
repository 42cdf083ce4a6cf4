// What a drill drives. `OwnCluster`: three controllers and two workers the drill starts itself
// (harness/cluster.ts), with every fault kind the machine allows. `AttachedCluster`: a running
// cluster someone else started (`xceadmin drill --attach`, against `npm run cluster` say), where the
// drill only does what an operator would allow: leadership transfers always; SIGKILL and SIGSTOP of
// controllers only with `--allow-kill`, only to controller processes on this machine, and only
// where a supervisor (systemd `Restart=always`, `npm run cluster`) brings a killed one back.

import { type DialTls, httpGet } from '../../daemon/handshake.js';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XceClient } from '../../cli/client.js';
import { TestCluster, until, type Proc } from '../cluster.js';
import type { NetLab } from '../netlab.js';
import type { FaultKind } from './schedule.js';

export interface Health {
  readonly id: number;
  readonly leader: number;
  readonly applied: number;
  readonly pid?: number;
  /** With `digest`: SHA-256 of the state's snapshot encoding at `applied`, and its job count. */
  readonly digest?: string;
  readonly jobs?: number;
}

export type ClientRole = 'submitter' | 'reader';

export interface DrillTarget {
  readonly kind: 'own' | 'attached';
  readonly ids: readonly number[];
  /** Profiles to submit under; `null` is the cluster's default profile (no `--app`). */
  readonly apps: ReadonlyArray<string | null>;
  /** The profile whose outer layers the drill watches, if it has one. */
  readonly layersProfile: string | null;
  /** The working directory of the drill's jobs. */
  readonly jobDir: string;
  readonly lab: NetLab | null;
  /** Fault kinds this target cannot do here, each with the reason. */
  readonly unusable: ReadonlyArray<{ kind: FaultKind; reason: string }>;
  /** Why the drill does not change this cluster's configuration (null: it does, now and then). */
  readonly noUpgradeReason: string | null;
  /**
   * Hosts the drill closes and opens again now and then (`xceadmin hosts close|open`); none on a
   * cluster it did not start.
   */
  readonly closableHosts: readonly string[];
  /** Why the worker-status check cannot run (null: it can, the drill reads the workers' output). */
  readonly noWorkerCheckReason: string | null;
  address(id: number): string;
  client(role: ClientRole, deadline_ms: number, controllers?: string[]): Promise<XceClient>;
  /** Controller `id`'s /healthz, or null when it does not answer (down, paused, cut off); with
   * `digest`, also its state's digest at the applied index it reports. */
  health(id: number, digest?: boolean): Promise<Health | null>;
  /** The configuration files with the drill profile's version set to `version`. */
  upgradeFiles(version: number): Array<{ path: string; text: string }>;
  kill(id: number): Promise<void>;
  /** After a kill: start it again (own) or wait for its supervisor to (attached). */
  restart(id: number, wipe: boolean): Promise<Proc | null>;
  pause(id: number): void;
  resume(id: number): void;
  /** Called with each line a worker prints (own only). */
  watchWorkers(onLine: (line: string) => void): void;
  stop(): Promise<void>;
}

async function fetchHealth(address: string, tls: DialTls | null, digest = false): Promise<Health | null> {
  try {
    const r = await httpGet(address, `/healthz${digest ? '?digest=1' : ''}`, tls, digest ? 10_000 : 1_000);
    return JSON.parse(r.body) as Health;
  } catch {
    return null;
  }
}

// ---- a cluster the drill starts ----

/** The profile the drill adds: outer layers that leave a trace, bumped by live upgrades. */
export const DRILL_PROFILE = 'drill-layers';
/** Snapshot often so that a wiped node must catch up by InstallSnapshot. */
export const SNAPSHOT_EVERY_ENTRIES = 200;

function drillProfile(dir: string): string {
  return `
  - name: ${DRILL_PROFILE}
    description: "failover drill: outer layers that leave a trace"
    launch_type: serial
    resreq: "select[x86_64]"
    tasks: { min: 1, max: 1 }
    env: { DRILL_VERSION: "1" }
    limits: { runtime: 1h }
    pre_exec: 'echo pre >> ${dir}/layers.log'
    post_exec: 'echo post >> ${dir}/layers.log'
    job_pre_post_exec: allow
`;
}

export class OwnCluster implements DrillTarget {
  readonly kind = 'own';
  readonly apps = ['python', DRILL_PROFILE];
  readonly layersProfile = DRILL_PROFILE;
  readonly noUpgradeReason = null;
  readonly closableHosts = ['node01', 'node02'];
  readonly noWorkerCheckReason = null;
  readonly unusable: Array<{ kind: FaultKind; reason: string }> = [];

  private constructor(
    readonly cluster: TestCluster,
    private readonly layers: string,
  ) {}

  static async start(opts: { netlab: boolean; layersDir: string }): Promise<OwnCluster> {
    const cluster = await TestCluster.start({
      controllers: 3,
      netlab: opts.netlab,
      snapshotEvery: SNAPSHOT_EVERY_ENTRIES,
      schedulerGrace_ms: 500,
      edit: {
        'applications.yaml': (t) => `${t.trimEnd()}\n${drillProfile(opts.layersDir)}`,
        'rbac.yaml': (t) => t.replace('values: [openfoam, mpich]', `values: [openfoam, mpich, ${DRILL_PROFILE}]`),
      },
      workers: ['node01', 'node02'].map((host) => ({
        host,
        slots: 8,
        bools: ['ib', 'x86_64'],
        nums: { mem: 262144 },
        extraArgs: ['--run-as-self'],
      })),
    });
    return new OwnCluster(cluster, opts.layersDir);
  }

  get ids(): number[] {
    return [...this.cluster.ports.keys()];
  }
  get jobDir(): string {
    return this.cluster.dir;
  }
  get lab(): NetLab | null {
    return this.cluster.lab;
  }
  address(id: number): string {
    return this.cluster.address(id);
  }
  client(role: ClientRole, deadline_ms: number, controllers?: string[]): Promise<XceClient> {
    return this.cluster.client(role === 'submitter' ? 'alice' : 'admin', {
      deadline_ms,
      ...(controllers ? { controllers } : {}),
    });
  }
  async health(id: number, digest = false): Promise<Health | null> {
    return this.cluster.controllers.has(id) ? fetchHealth(this.address(id), this.cluster.dialTls(), digest) : null;
  }
  upgradeFiles(version: number): Array<{ path: string; text: string }> {
    return this.cluster.configFiles({
      'applications.yaml': (t) => t.replace('DRILL_VERSION: "1"', `DRILL_VERSION: "${version}"`),
    });
  }
  kill(id: number): Promise<void> {
    return this.cluster.kill(id, 'SIGKILL');
  }
  async restart(id: number, wipe: boolean): Promise<Proc> {
    if (wipe) rmSync(join(this.cluster.dir, `controller-${id}`), { recursive: true, force: true });
    return this.cluster.startController(id);
  }
  pause(id: number): void {
    this.cluster.pause(id);
  }
  resume(id: number): void {
    this.cluster.resume(id);
  }
  watchWorkers(onLine: (line: string) => void): void {
    for (const p of this.cluster.workers.values()) {
      let rest = '';
      const on = (d: Buffer): void => {
        const lines = (rest + d.toString('utf8')).split('\n');
        rest = lines.pop() ?? '';
        for (const l of lines) onLine(l);
      };
      p.proc.stdout?.on('data', on);
      p.proc.stderr?.on('data', on);
    }
  }
  async stop(): Promise<void> {
    await this.cluster.stop();
    rmSync(this.layers, { recursive: true, force: true });
  }
}

// ---- a running cluster the drill attaches to ----

export interface AttachOptions {
  readonly controllers: readonly string[];
  readonly token: string;
  /** How the controllers are dialled: TLS with a CA (the system's when absent), or null for plain ws. */
  readonly tls: { readonly ca?: Buffer } | null;
  /** Profiles to submit under (default: the cluster's default profile). */
  readonly apps?: readonly string[];
  /** May SIGKILL and SIGSTOP controller processes on this machine (a supervisor must restart them). */
  readonly allowKill?: boolean;
  /** How long a killed controller may take to come back under its supervisor. */
  readonly comeBack_ms?: number;
}

export const COME_BACK_MS_DEFAULT = 30_000;

/** The cluster to attach to cannot be reached or is not what the options say. */
export class AttachError extends Error {
  override readonly name = 'AttachError';
}

/** Whether `pid` is an xcectld process on this machine (its command line names the daemon). */
function localController(pid: number | undefined): boolean {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 1) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('xcectld');
  } catch {
    return false;
  }
}

export class AttachedCluster implements DrillTarget {
  readonly kind = 'attached';
  readonly layersProfile = null;
  readonly lab = null;
  readonly jobDir = tmpdir();
  readonly noUpgradeReason = 'the drill does not change the configuration of a cluster it did not start';
  readonly closableHosts: readonly string[] = [];
  readonly noWorkerCheckReason = "attached to a running cluster: the drill cannot read its workers' output";
  readonly unusable: Array<{ kind: FaultKind; reason: string }> = [];
  readonly apps: ReadonlyArray<string | null>;
  /** Controller id → address, learned from each address's /healthz. */
  private readonly byId = new Map<number, string>();
  private readonly pids = new Map<number, number>();
  private readonly clients: XceClient[] = [];

  private constructor(private readonly opts: AttachOptions) {
    this.apps = opts.apps && opts.apps.length > 0 ? opts.apps : [null];
  }

  /** The CA to verify /healthz over https with (the system's CAs when none), or null for http. */
  private dialTls(): DialTls | null {
    return this.opts.tls === null
      ? null
      : this.opts.tls.ca !== undefined
        ? { ca: this.opts.tls.ca }
        : { ca: undefined };
  }

  /** Learns which controller answers at each address; throws naming an address that does not answer. */
  static async attach(opts: AttachOptions): Promise<AttachedCluster> {
    const t = new AttachedCluster(opts);
    for (const a of opts.controllers) {
      const h = await fetchHealth(a, t.dialTls());
      if (h === null || typeof h.id !== 'number')
        throw new AttachError(
          `controller ${a} does not answer /healthz: is the cluster running, and is ${a} one of its controllers?`,
        );
      if (t.byId.has(h.id))
        throw new AttachError(
          `controllers ${t.byId.get(h.id)} and ${a} are both node ${h.id}: list each controller once`,
        );
      t.byId.set(h.id, a);
      if (h.pid !== undefined) t.pids.set(h.id, h.pid);
    }
    if (t.byId.size < 3)
      t.unusable.push(
        ...(['kill-leader', 'kill-follower', 'pause-node'] as const).map((kind) => ({
          kind,
          reason: `only ${t.byId.size} controller(s) given: killing or pausing one would stop the cluster`,
        })),
      );
    else if (!opts.allowKill)
      t.unusable.push(
        ...(['kill-leader', 'kill-follower', 'pause-node'] as const).map((kind) => ({
          kind,
          reason:
            'not allowed: pass --allow-kill to let the drill SIGKILL and SIGSTOP controller processes on this machine (a supervisor must restart killed ones)',
        })),
      );
    else {
      const remote = [...t.byId.keys()].filter((id) => !localController(t.pids.get(id)));
      if (remote.length > 0)
        t.unusable.push(
          ...(['kill-leader', 'kill-follower', 'pause-node'] as const).map((kind) => ({
            kind,
            reason: `controller(s) ${remote.join(', ')} are not xcectld processes on this machine (their /healthz pid is not one here)`,
          })),
        );
    }
    t.unusable.push({
      kind: 'wipe-follower',
      reason: 'the drill wipes data directories only of clusters it started itself',
    });
    t.unusable.push({
      kind: 'partition',
      reason: 'the drill partitions only controllers it started in network namespaces of its own',
    });
    return t;
  }

  get ids(): number[] {
    return [...this.byId.keys()].sort((a, b) => a - b);
  }
  address(id: number): string {
    const a = this.byId.get(id);
    if (a === undefined) throw new RangeError(`controller ${id} is not one of ${this.ids.join(', ')}`);
    return a;
  }
  async client(_role: ClientRole, deadline_ms: number, controllers?: string[]): Promise<XceClient> {
    const c = new XceClient({
      controllers: controllers ?? [...this.byId.values()],
      callDeadline_ms: deadline_ms,
      token: this.opts.token,
      tls: this.opts.tls,
    });
    this.clients.push(c);
    return c;
  }
  async health(id: number, digest = false): Promise<Health | null> {
    const h = await fetchHealth(this.address(id), this.dialTls(), digest);
    if (h?.pid !== undefined) this.pids.set(id, h.pid);
    return h;
  }
  upgradeFiles(): never {
    throw new Error(this.noUpgradeReason);
  }
  private signal(id: number, signal: NodeJS.Signals): void {
    const pid = this.pids.get(id);
    if (!localController(pid))
      throw new Error(`controller ${id} (pid ${pid ?? 'unknown'}) is not an xcectld process on this machine`);
    process.kill(pid!, signal);
  }
  async kill(id: number): Promise<void> {
    const before = this.pids.get(id);
    this.signal(id, 'SIGKILL');
    await until(`controller ${id} (pid ${before}) to die`, () => !localController(before), 5_000, 20);
  }
  async restart(id: number): Promise<null> {
    const before = this.pids.get(id);
    const limit = this.opts.comeBack_ms ?? COME_BACK_MS_DEFAULT;
    await until(
      `controller ${id} to come back under its supervisor (it was SIGKILLed; systemd Restart=always or npm run cluster restarts it)`,
      async () => {
        const h = await this.health(id);
        return h !== null && h.pid !== before;
      },
      limit,
      100,
    );
    return null;
  }
  pause(id: number): void {
    this.signal(id, 'SIGSTOP');
  }
  resume(id: number): void {
    this.signal(id, 'SIGCONT');
  }
  watchWorkers(): void {}
  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
  }
}
