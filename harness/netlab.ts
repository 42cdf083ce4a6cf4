// A private network for the drill's controllers, made of Linux network namespaces, so that a
// partition between controllers is real: packets are dropped by the kernel, not by our code.
//
//   controller i  ── namespace xce<pid>n<lab>-c<i>, interface eth0, 10.213.K.i/24
//        │ veth
//   bridge br0    ── namespace xce<pid>n<lab>-hub (one port per controller, one for this process)
//        │ veth
//   this process  ── the root namespace, interface xce<pid>n<lab>h, 10.213.K.254/24 (clients, workers)
//
// Every neighbour entry is static (`nud permanent`), so no ARP is ever needed and a cut is silent:
// - isolate(i): the bridge's port to controller i goes down. Nothing reaches it or leaves it,
//   clients and workers included; its own interface keeps its address and routes (NO-CARRIER).
// - cut(a, b): a and b point their entries for each other at a MAC address nobody has, so frames
//   between them are flooded by the bridge and dropped by every receiver. Everyone else, clients
//   included, still reaches both: the leader-in-a-minority case, where a client can still talk
//   to the old leader.
// - heal(): every port up, every entry right again. TCP connections that lived through the cut
//   resume; nothing was reset.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2; `probeNetLab()` says whether this
// machine allows it and, if not, why. Namespaces left by a run that was SIGKILLed are removed by
// the next run (their names carry the dead process's pid).

import { spawnSync } from 'node:child_process';

/** Which /24 inside 10.213.0.0/16 a lab uses: tried from the pid's, onwards, until a free one. */
const SUBNET_PREFIX = '10.213';
const HOST_OCTET = 254;
/** A locally administered MAC that no interface in the lab has: the target of a cut. */
const NOWHERE_MAC = '02:58:43:ff:ff:ff';
/** How long a heal may take to bring an isolated node's link back into service. */
const HEAL_WAIT_MS = 5_000;

export class NetLabError extends Error {
  override readonly name = 'NetLabError';
}

function ip(args: readonly string[]): string {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.error) throw new NetLabError(`cannot run "ip ${args.join(' ')}": ${r.error.message}`);
  if (r.status !== 0) throw new NetLabError(`"ip ${args.join(' ')}" failed (exit ${r.status}): ${r.stderr.trim()}`);
  return r.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether this machine lets us build a lab, and if not, why (in words an operator can act on). */
export function probeNetLab(): { ok: true } | { ok: false; reason: string } {
  if (process.platform !== 'linux')
    return { ok: false, reason: `network namespaces are Linux only (this is ${process.platform})` };
  const which = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (which.error) return { ok: false, reason: 'the "ip" command (iproute2) is not installed' };
  const name = `xce${process.pid}-probe`;
  const add = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (add.status !== 0)
    return {
      ok: false,
      reason: `this machine does not allow creating network namespaces ("ip netns add" said: ${add.stderr.trim() || `exit ${add.status}`}; it needs root)`,
    };
  try {
    const veth = spawnSync(
      'ip',
      ['-n', name, 'link', 'add', 'name', 'probe0', 'type', 'veth', 'peer', 'name', 'probe1'],
      { encoding: 'utf8' },
    );
    if (veth.status !== 0)
      return {
        ok: false,
        reason: `network namespaces can be created here, but not veth pairs ("ip link add type veth" said: ${veth.stderr.trim()})`,
      };
    const br = spawnSync('ip', ['-n', name, 'link', 'add', 'name', 'br0', 'type', 'bridge'], { encoding: 'utf8' });
    if (br.status !== 0)
      return {
        ok: false,
        reason: `network namespaces can be created here, but not bridges ("ip link add type bridge" said: ${br.stderr.trim()})`,
      };
    const exec = spawnSync('ip', ['netns', 'exec', name, process.execPath, '-e', '0'], { encoding: 'utf8' });
    if (exec.status !== 0)
      return {
        ok: false,
        reason: `network namespaces can be created here, but no process started in one ("ip netns exec" said: ${exec.stderr.trim() || `exit ${exec.status}`})`,
      };
    return { ok: true };
  } finally {
    spawnSync('ip', ['netns', 'del', name]);
  }
}

/**
 * Removes the namespaces of earlier runs whose process is gone (a SIGKILLed drill leaves them),
 * and kills the controllers still running in them.
 */
export function removeStaleLabs(): string[] {
  const removed: string[] = [];
  for (const line of ip(['netns', 'list']).split('\n')) {
    const m = /^(xce(\d+)(?:n\d+)?-(?:hub|c\d+|probe))\b/.exec(line.trim());
    if (m && !alive(Number(m[2]))) {
      // Controllers a SIGKILLed drill left behind still run in there: they go with it.
      const pids = spawnSync('ip', ['netns', 'pids', m[1]!], { encoding: 'utf8' }).stdout ?? '';
      for (const pid of pids
        .split('\n')
        .map(Number)
        .filter((p) => Number.isInteger(p) && p > 1)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      spawnSync('ip', ['netns', 'del', m[1]!]);
      removed.push(m[1]!);
    }
  }
  return removed;
}

function mac(k: number, i: number): string {
  return `02:58:43:${k.toString(16).padStart(2, '0')}:00:${i.toString(16).padStart(2, '0')}`;
}

/** Labs made by this process so far: their number keeps names unique within one process. */
let labsMade = 0;

export class NetLab {
  private readonly tag = `xce${process.pid}n${labsMade++}`;
  private readonly hub = `${this.tag}-hub`;
  private readonly hostIf = `${this.tag}h`;
  private readonly cuts = new Set<string>();
  private readonly isolated = new Set<number>();
  private destroyed = false;

  private constructor(
    private readonly k: number,
    readonly ids: readonly number[],
  ) {}

  /** Builds the lab for controllers `ids` (each 1..253). Throws NetLabError naming the failed step. */
  static create(ids: readonly number[]): NetLab {
    for (const id of ids)
      if (!Number.isInteger(id) || id < 1 || id >= HOST_OCTET)
        throw new NetLabError(`controller id ${id} cannot be a host number in a /24 (1..253)`);
    removeStaleLabs();
    const used = ip(['-o', '-4', 'addr', 'show']) + ip(['-4', 'route', 'show']);
    let k = process.pid % 256;
    for (let tries = 0; used.includes(`${SUBNET_PREFIX}.${k}.`); tries++) {
      if (tries >= 256) throw new NetLabError(`every /24 of ${SUBNET_PREFIX}.0.0/16 is in use on this machine`);
      k = (k + 1) % 256;
    }
    const lab = new NetLab(k, ids);
    try {
      lab.build();
    } catch (err) {
      lab.destroy();
      throw err;
    }
    return lab;
  }

  /** The namespace a controller runs in (for `ip netns exec`). */
  namespace(id: number): string {
    return `${this.tag}-c${id}`;
  }

  /** The address of controller `id` (clients and peers use it). */
  address(id: number): string {
    return `${SUBNET_PREFIX}.${this.k}.${id}`;
  }

  /** Human description of the lab, for the drill's log. */
  describe(): string {
    return `controllers ${this.ids.map((id) => `${id}=${this.address(id)} (${this.namespace(id)})`).join(', ')}; this process ${SUBNET_PREFIX}.${this.k}.${HOST_OCTET} on ${this.hostIf}`;
  }

  private build(): void {
    ip(['netns', 'add', this.hub]);
    ip(['-n', this.hub, 'link', 'add', 'name', 'br0', 'type', 'bridge']);
    ip(['-n', this.hub, 'link', 'set', 'br0', 'up']);
    for (const id of this.ids) this.addController(id);
    this.addHostLink();
    this.addStaticNeighbours();
  }

  /** Controller `id`'s namespace and its eth0: a veth pair whose other end, `c<id>`, is a port of the hub's bridge. */
  private addController(id: number): void {
    const ns = this.namespace(id);
    ip(['netns', 'add', ns]);
    ip([
      '-n',
      ns,
      'link',
      'add',
      'name',
      'eth0',
      'address',
      mac(this.k, id),
      'type',
      'veth',
      'peer',
      'name',
      `c${id}`,
      'netns',
      this.hub,
    ]);
    ip(['-n', ns, 'addr', 'add', `${this.address(id)}/24`, 'dev', 'eth0']);
    ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
    ip(['-n', this.hub, 'link', 'set', `c${id}`, 'master', 'br0']);
    ip(['-n', this.hub, 'link', 'set', `c${id}`, 'up']);
  }

  /** This process's way in: a veth pair from the host's namespace (`hostIf`) to a port of the hub's bridge. */
  private addHostLink(): void {
    ip([
      'link',
      'add',
      'name',
      this.hostIf,
      'address',
      mac(this.k, HOST_OCTET),
      'type',
      'veth',
      'peer',
      'name',
      'host',
      'netns',
      this.hub,
    ]);
    ip(['-n', this.hub, 'link', 'set', 'host', 'master', 'br0']);
    ip(['-n', this.hub, 'link', 'set', 'host', 'up']);
    ip(['addr', 'add', `${SUBNET_PREFIX}.${this.k}.${HOST_OCTET}/24`, 'dev', this.hostIf]);
    ip(['link', 'set', this.hostIf, 'up']);
  }

  /** Static neighbours everywhere: no ARP, so a cut drops silently and a heal is instant. */
  private addStaticNeighbours(): void {
    const all = [
      ...this.ids.map((id) => ({ id, addr: this.address(id), mac: mac(this.k, id) })),
      { id: HOST_OCTET, addr: `${SUBNET_PREFIX}.${this.k}.${HOST_OCTET}`, mac: mac(this.k, HOST_OCTET) },
    ];
    for (const me of all) {
      for (const other of all) {
        if (other.id === me.id) continue;
        if (me.id === HOST_OCTET)
          ip(['neigh', 'replace', other.addr, 'lladdr', other.mac, 'dev', this.hostIf, 'nud', 'permanent']);
        else this.setNeighbour(me.id, other.addr, other.mac);
      }
    }
  }

  /** In controller `from`'s namespace, `addr` is at link-layer address `lladdr` (for good: no ARP). */
  private setNeighbour(from: number, addr: string, lladdr: string): void {
    ip(['-n', this.namespace(from), 'neigh', 'replace', addr, 'lladdr', lladdr, 'dev', 'eth0', 'nud', 'permanent']);
  }

  /** Controller `id` can reach nobody and nobody can reach it (its bridge port goes down). */
  isolate(id: number): void {
    ip(['-n', this.hub, 'link', 'set', `c${id}`, 'down']);
    this.isolated.add(id);
  }

  /** Controllers `a` and `b` can no longer reach each other; everyone else still reaches both. */
  cut(a: number, b: number): void {
    this.setNeighbour(a, this.address(b), NOWHERE_MAC);
    this.setNeighbour(b, this.address(a), NOWHERE_MAC);
    this.cuts.add(`${Math.min(a, b)}-${Math.max(a, b)}`);
  }

  /** Every cut and isolation undone; returns once the links carry packets again. */
  heal(): void {
    for (const id of this.isolated) ip(['-n', this.hub, 'link', 'set', `c${id}`, 'up']);
    // The kernel brings a link that was set up into service a moment later (its carrier events
    // are batched, up to a second under load); packets sent before then are dropped, and a TCP
    // connect whose SYN is dropped waits a whole second to retry.
    for (const id of this.isolated) this.waitForwarding(id);
    this.isolated.clear();
    for (const c of this.cuts) {
      const [a, b] = c.split('-').map(Number) as [number, number];
      this.setNeighbour(a, this.address(b), mac(this.k, b));
      this.setNeighbour(b, this.address(a), mac(this.k, a));
    }
    this.cuts.clear();
  }

  /** Waits (at most HEAL_WAIT_MS) until both ends of controller `id`'s link are up and its bridge port forwards. */
  private waitForwarding(id: number): void {
    const until = Date.now() + HEAL_WAIT_MS;
    for (;;) {
      const port = ip(['-n', this.hub, '-d', '-o', 'link', 'show', `c${id}`]);
      const end = ip(['-n', this.namespace(id), '-o', 'link', 'show', 'eth0']);
      if (/ state UP /.test(port) && /bridge_slave state forwarding/.test(port) && / state UP /.test(end)) return;
      if (Date.now() > until)
        throw new NetLabError(
          `controller ${id}'s link did not come back within ${HEAL_WAIT_MS} ms of the heal: hub side "${port.trim()}", its side "${end.trim()}"`,
        );
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }

  /** Removes every namespace and interface of the lab (idempotent; never throws). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    // Deleting the hub removes the bridge and every veth pair with an end in it, ours included.
    for (const ns of [this.hub, ...this.ids.map((id) => this.namespace(id))]) spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('ip', ['link', 'del', this.hostIf]);
  }
}
