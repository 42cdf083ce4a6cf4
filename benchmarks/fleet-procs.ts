// The simulated worker hosts of a benchmark, from the bench's side: the hosts.yaml lines that
// declare them, and the fleet processes (host-fleet.ts, forked with IPC) that connect them to a
// TestCluster as real `/worker` clients, with their latest counts and their registration times.
// Used by hosts.bench.ts and mixed.bench.ts.

import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestCluster } from '../harness/cluster.js';
import { simHostName, type FleetCounts, type FromFleet, type ToFleet } from './host-fleet.js';
import type { TimelineStep } from './link-timeline.js';

/** A fleet process serves at most this many hosts unless told otherwise. */
export const HOSTS_PER_PROC = 1_000;

export interface FleetProcsOptions {
  /** Host names are `<prefix><index, 5 digits>`, from index 0. */
  readonly prefix: string;
  readonly hosts: number;
  /** Fleet processes (default: one per HOSTS_PER_PROC hosts). */
  readonly procs?: number;
  readonly slots: number;
  /** A simulated job finishes (exit 0) after a random runtime in [min, max]. */
  readonly runtimeMin_ms: number;
  readonly runtimeMax_ms: number;
  /** The hosts dial their first connection spread over this long (host-fleet.ts' default when absent). */
  readonly connectSpread_ms?: number;
}

/** An edit of hosts.yaml (TestCluster's `edit`) that appends the fleet's `hosts` hosts, `slots` slots each, `ib`. */
export function simHostsYaml(prefix: string, hosts: number, slots: number): (text: string) => string {
  return (text) => {
    const lines = Array.from(
      { length: hosts },
      (_, i) =>
        `  - { name: ${simHostName(prefix, i)}, slots: ${slots}, mem: 64G, resources: [ib, x86_64], ` +
        `numeric: { mem: 65536 }, strings: { rack: r${i % 40} } }`,
    );
    return `${text.trimEnd()}\n${lines.join('\n')}\n`;
  };
}

/** The fleet processes, their latest counts, and their answers to `regs`. */
export class FleetProcs {
  private readonly procs: ChildProcess[] = [];
  private readonly counts = new Map<number, FleetCounts>();
  private readonly waiting = new Map<number, (answer: FromFleet) => void>();
  private nextId = 0;

  constructor(cluster: TestCluster, opts: FleetProcsOptions) {
    const script = join(dirname(fileURLToPath(import.meta.url)), 'host-fleet.js');
    const procs = opts.procs ?? Math.ceil(opts.hosts / HOSTS_PER_PROC);
    const per = Math.ceil(opts.hosts / procs);
    for (let p = 0; p < procs; p++) {
      const from = p * per;
      const count = Math.min(per, opts.hosts - from);
      if (count <= 0) break;
      const args = ['--controllers', cluster.addresses().join(','), '--secret-file', cluster.secretFile];
      if (cluster.tls !== null) args.push('--ca-file', cluster.tls.caFile);
      args.push('--prefix', opts.prefix, '--from', String(from), '--count', String(count));
      args.push('--slots', String(opts.slots));
      args.push('--runtime-ms-min', String(opts.runtimeMin_ms), '--runtime-ms-max', String(opts.runtimeMax_ms));
      if (opts.connectSpread_ms !== undefined) args.push('--connect-spread-ms', String(opts.connectSpread_ms));
      const child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.on('message', (m: FromFleet) => {
        if (m.type === 'stats') this.counts.set(p, m.counts);
        else this.waiting.get(m.id)?.(m);
      });
      this.procs.push(child);
    }
  }

  /** The processes' pids (for sampling their CPU and memory). */
  pids(): number[] {
    return this.procs.flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
  }

  /** The sum of every process's latest counts. */
  total(): FleetCounts {
    const sum = (k: keyof FleetCounts): number => [...this.counts.values()].reduce((a, c) => a + c[k], 0);
    return {
      hosts: sum('hosts'),
      registered: sum('registered'),
      registrations: sum('registrations'),
      resumedRegistrations: sum('resumedRegistrations'),
      starts: sum('starts'),
      duplicates: sum('duplicates'),
      finished: sum('finished'),
      statusAcks: sum('statusAcks'),
      kills: sum('kills'),
      running: sum('running'),
      unacked: sum('unacked'),
    };
  }

  /** When each host last registered (epoch ms), from every fleet process. */
  async registeredAt(): Promise<number[]> {
    const parts = await this.ask('regs');
    return parts.flatMap((m) => (m.type === 'regs' ? m.registeredAt : []));
  }

  /** Each host's traced steps since it last lost the leader (link-timeline.ts), in the order of registeredAt(). */
  async timelines(): Promise<TimelineStep[][]> {
    const parts = await this.ask('timelines');
    return parts.flatMap((m) => (m.type === 'timelines' ? m.timelines : []));
  }

  /** Each fleet process's event-loop stalls since it started ([end epoch ms, ms]). */
  async stalls(): Promise<[number, number][][]> {
    const parts = await this.ask('timelines');
    return parts.flatMap((m) => (m.type === 'timelines' ? [m.stalls] : []));
  }

  private ask(type: 'regs' | 'timelines'): Promise<FromFleet[]> {
    return Promise.all(
      this.procs.map(
        (c) =>
          new Promise<FromFleet>((resolve) => {
            const id = this.nextId++;
            this.waiting.set(id, (r) => {
              this.waiting.delete(id);
              resolve(r);
            });
            c.send({ type, id } satisfies ToFleet);
          }),
      ),
    );
  }

  stop(): void {
    for (const c of this.procs) {
      if (c.connected) c.send({ type: 'stop' } satisfies ToFleet);
      setTimeout(() => c.kill('SIGKILL'), 2_000).unref();
    }
  }
}
