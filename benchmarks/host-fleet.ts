// Simulated worker hosts for the many-hosts benchmark (hosts.bench.ts). Each host is the real
// worker's connection to the leader (daemon/worker/leader-link.ts: `/worker` WebSocket, the real
// frames of daemon/worker-protocol.ts, register, heartbeats and pings, `not-leader` redirects,
// jittered reconnects) and the real queue of statuses kept until acked (status-queue.ts, no state
// file); only the job is simulated: a start is acked `accepted`, reported `started` at once and
// `finished` (exit 0) after a random runtime, without any process.
//
// Run as a child process by hosts.bench.ts (node:child_process fork, IPC):
//   node dist/benchmarks/host-fleet.js --controllers A,B,C --secret-file F --prefix sim --from 0 --count 1000
// It reports its counts every STATS_EVERY_MS and answers `regs` (when each host last registered).

import type { DialTls } from '../daemon/handshake.js';
import { deriveClusterKeys, hostCredentialKey } from '../daemon/keys.js';
import { readFileSync } from 'node:fs';
import { createLogger, parseLogLevel, type Logger } from '../daemon/log.js';
import { LeaderLink, type Reply } from '../daemon/worker/leader-link.js';
import { StatusQueue, statusFrameOf } from '../daemon/worker/status-queue.js';
import type { KillFrame, Resources, RunningJob, StartInfo } from '../daemon/worker-protocol.js';
import { parseCommandLine, stringOptions } from '../harness/cli-args.js';
import { stepOf, type TimelineStep } from './link-timeline.js';

/** How often a fleet process reports its counts to the bench. */
export const STATS_EVERY_MS = 500;
/** Finished (jobId, run) keys a host remembers, so that a re-sent start is acked `duplicate`. */
const RECENT_RUNS_MAX = 4_096;
/** Traced steps a host keeps since its last loss of the leader (a bound, should it never register). */
const STEPS_MAX = 1_000;
/** The fleet's own event loop is sampled this often; a tick this late or later is a stall (kept, the last STALLS_MAX). */
const LAG_EVERY_MS = 20;
const STALL_MS_MIN = 50;
const STALLS_MAX = 10_000;

export interface FleetOptions {
  readonly controllers: readonly string[];
  /** The cluster's root secret: each simulated host's credential derives from it as the controllers derive it. */
  readonly secret: Uint8Array | null;
  /** Dial over TLS with this CA; null: plain ws. */
  readonly tls: DialTls | null;
  /** Host names are `<prefix><index, 5 digits>`. */
  readonly prefix: string;
  readonly from: number;
  readonly count: number;
  readonly resources: Resources;
  readonly runtimeMin_ms: number;
  readonly runtimeMax_ms: number;
  /** The hosts dial their first connection spread over this long (a site's workers do not all boot at once). */
  readonly connectSpread_ms: number;
  readonly log: Logger;
}

/** What the fleet has done so far (counts since it started). */
export interface FleetCounts {
  readonly hosts: number;
  readonly registered: number;
  readonly registrations: number;
  /** Registrations whose dial resumed a TLS session (daemon/tls-resumption.ts). */
  readonly resumedRegistrations: number;
  readonly starts: number;
  readonly duplicates: number;
  readonly finished: number;
  readonly statusAcks: number;
  readonly kills: number;
  readonly running: number;
  readonly unacked: number;
}

/** The name of simulated host `i`. */
export function simHostName(prefix: string, i: number): string {
  return `${prefix}${String(i).padStart(5, '0')}`;
}

class SimHost {
  readonly link: LeaderLink;
  readonly statuses: StatusQueue;
  private readonly runs = new Map<string, { jobId: number; run: number; startedAt: number; timer: NodeJS.Timeout }>();
  private readonly recent = new Set<string>();
  /** When this host last registered (Date.now()), 0 never. */
  registeredAt = 0;
  /** Its leader link's steps since it last lost the leader (link-timeline.ts). */
  steps: TimelineStep[] = [];

  constructor(
    readonly host: string,
    private readonly fleet: HostFleet,
    opts: FleetOptions,
  ) {
    this.link = new LeaderLink(
      {
        controllers: opts.controllers,
        host,
        resources: opts.resources,
        version: 'sim',
        credential:
          opts.secret === null
            ? null
            : { host, epoch: 0, key: hostCredentialKey(deriveClusterKeys(opts.secret).workerRoot, host, 0) },
        tls: opts.tls,
        random: Math.random,
        now: Date.now,
        trace: (e) => {
          if (e.kind === 'lost') this.steps = [];
          if (this.steps.length < STEPS_MAX) this.steps.push(stepOf(Date.now(), e));
        },
      },
      opts.log,
      {
        running: () => this.running(),
        onRegistered: (_url, _leader, resumed) => this.onRegistered(resumed),
        onStart: (reply, info) => this.onStart(reply, info),
        onUnreadableStart: (reply, _url, start) =>
          reply({ type: 'ack', ref: 'start', jobId: start.jobId, run: start.run, outcome: 'refused', reason: 'sim' }),
        onKill: (reply, f) => this.onKill(reply, f),
        onSignal: (reply, f) => reply({ type: 'ack', ref: 'signal', jobId: f.jobId, run: f.run, outcome: 'unknown' }),
        onPeek: (reply, f) =>
          reply({ type: 'peek-data', host, requestId: f.requestId, jobId: f.jobId, run: f.run, outcome: 'unknown' }),
        onStatusAck: (id) => {
          fleet.statusAcks++;
          this.statuses.ack(id);
        },
      },
    );
    this.statuses = new StatusQueue(
      { now: Date.now },
      { save: () => Promise.resolve(), sender: () => this.link.registeredSender() },
    );
  }

  get size(): number {
    return this.runs.size;
  }

  private running(): RunningJob[] {
    return [...this.runs.values()].map((r) => ({ jobId: r.jobId, run: r.run, pid: 1, startedAt: r.startedAt }));
  }

  private onRegistered(resumed: boolean): void {
    this.registeredAt = Date.now();
    this.fleet.registrations++;
    if (resumed) this.fleet.resumedRegistrations++;
    this.statuses.onRegistered();
  }

  private onStart(reply: Reply, info: StartInfo): void {
    const key = `${info.jobId}.${info.run}`;
    if (this.runs.has(key) || this.recent.has(key)) {
      this.fleet.duplicates++;
      reply({ type: 'ack', ref: 'start', jobId: info.jobId, run: info.run, outcome: 'duplicate' });
      return;
    }
    this.fleet.starts++;
    const startedAt = Date.now();
    const { runtimeMin_ms: lo, runtimeMax_ms: hi } = this.fleet.opts;
    const timer = setTimeout(() => this.finish(key, 0, null, undefined), lo + Math.random() * (hi - lo));
    this.runs.set(key, { jobId: info.jobId, run: info.run, startedAt, timer });
    reply({ type: 'ack', ref: 'start', jobId: info.jobId, run: info.run, outcome: 'accepted' });
    this.statuses.queue(
      statusFrameOf(this.host, { kind: 'started', jobId: info.jobId, run: info.run, pid: 1, time_ms: startedAt }),
    );
  }

  private onKill(reply: Reply, f: KillFrame): void {
    const key = `${f.jobId}.${f.run}`;
    const found = this.runs.has(key);
    if (found) {
      this.fleet.kills++;
      clearTimeout(this.runs.get(key)!.timer);
      this.finish(key, null, 'SIGTERM', f.reason);
    }
    reply({ type: 'ack', ref: 'kill', jobId: f.jobId, run: f.run, outcome: found ? 'accepted' : 'unknown' });
  }

  private finish(key: string, exitCode: number | null, signal: string | null, reason: string | undefined): void {
    const r = this.runs.get(key);
    if (r === undefined) return;
    this.runs.delete(key);
    this.recent.add(key);
    if (this.recent.size > RECENT_RUNS_MAX) this.recent.delete(this.recent.values().next().value as string);
    this.fleet.finished++;
    this.statuses.queue(
      statusFrameOf(this.host, {
        kind: 'finished',
        jobId: r.jobId,
        run: r.run,
        exitCode,
        signal,
        ...(reason !== undefined ? { reason } : {}),
        time_ms: Date.now(),
      }),
    );
  }

  start(): void {
    this.link.connect();
    this.statuses.start();
  }

  close(): void {
    for (const r of this.runs.values()) clearTimeout(r.timer);
    this.runs.clear();
    this.link.close();
    this.statuses.close();
  }
}

/** Many simulated hosts in this process. */
export class HostFleet {
  private readonly hosts: SimHost[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  registrations = 0;
  resumedRegistrations = 0;
  /** [when it ended (epoch ms), how long] of each stall of this process's event loop. */
  readonly stalls: [number, number][] = [];
  starts = 0;
  duplicates = 0;
  finished = 0;
  statusAcks = 0;
  kills = 0;

  constructor(readonly opts: FleetOptions) {
    for (let i = 0; i < opts.count; i++)
      this.hosts.push(new SimHost(simHostName(opts.prefix, opts.from + i), this, opts));
  }

  /** Dials every host, spread over connectSpread_ms; samples the event loop's stalls. */
  start(): void {
    let last = Date.now();
    const lag = setInterval(() => {
      const now = Date.now();
      const late = now - last - LAG_EVERY_MS;
      last = now;
      if (late >= STALL_MS_MIN && this.stalls.length < STALLS_MAX) this.stalls.push([now, late]);
    }, LAG_EVERY_MS);
    lag.unref();
    this.timers.push(lag);
    for (const h of this.hosts)
      this.timers.push(setTimeout(() => h.start(), Math.random() * this.opts.connectSpread_ms));
  }

  counts(): FleetCounts {
    let registered = 0;
    let running = 0;
    let unacked = 0;
    for (const h of this.hosts) {
      if (h.link.isRegistered()) registered++;
      running += h.size;
      unacked += h.statuses.size;
    }
    return {
      hosts: this.hosts.length,
      registered,
      registrations: this.registrations,
      resumedRegistrations: this.resumedRegistrations,
      starts: this.starts,
      duplicates: this.duplicates,
      finished: this.finished,
      statusAcks: this.statusAcks,
      kills: this.kills,
      running,
      unacked,
    };
  }

  /** Each host's traced steps since it last lost the leader. */
  timelines(): TimelineStep[][] {
    return this.hosts.map((h) => h.steps);
  }

  /** When each host last registered (Date.now()), 0 for one that never did. */
  registeredAt(): number[] {
    return this.hosts.map((h) => h.registeredAt);
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    for (const h of this.hosts) h.close();
  }
}

/** Messages between hosts.bench.ts and a fleet process. */
export type ToFleet = { type: 'regs'; id: number } | { type: 'timelines'; id: number } | { type: 'stop' };
/** A fleet's timelines: each host's steps, and the stalls of the fleet's own event loop ([end, ms]). */
export type FromFleet =
  | { type: 'stats'; counts: FleetCounts }
  | { type: 'regs'; id: number; registeredAt: number[] }
  | { type: 'timelines'; id: number; timelines: TimelineStep[][]; stalls: [number, number][] };

// Run as a child of hosts.bench.ts.
if (process.argv[1]?.endsWith('host-fleet.js')) {
  const cl = parseCommandLine(
    'host-fleet',
    'node dist/benchmarks/host-fleet.js --controllers A,B,C --secret-file F [--ca-file CA] [--prefix sim] [--from 0] [--count 500] ' +
      '[--slots 8] [--runtime-ms-min 500] [--runtime-ms-max 3000] [--connect-spread-ms 3000]',
    stringOptions(
      'controllers',
      'secret-file',
      'ca-file',
      'prefix',
      'from',
      'count',
      'slots',
      'runtime-ms-min',
      'runtime-ms-max',
      'connect-spread-ms',
    ),
  );
  const controllers = (cl.values.controllers ?? '').split(',').filter((s) => s !== '');
  if (controllers.length === 0) cl.fail('--controllers is required');
  const secretFile = cl.values['secret-file'];
  const runtimeMin_ms = cl.whole('runtime-ms-min', 500, 0);
  const fleet = new HostFleet({
    controllers,
    secret: secretFile !== undefined ? new Uint8Array(readFileSync(secretFile)) : null,
    tls: cl.values['ca-file'] !== undefined ? { ca: readFileSync(cl.values['ca-file']) } : null,
    prefix: cl.values.prefix ?? 'sim',
    from: cl.whole('from', 0, 0),
    count: cl.whole('count', 500, 1, 100_000),
    resources: {
      slots: cl.whole('slots', 8),
      mem_bytes: 64 * 1024 ** 3,
      booleans: ['ib', 'x86_64'],
      numerics: { mem: 65536 },
    },
    runtimeMin_ms,
    runtimeMax_ms: cl.whole('runtime-ms-max', 3_000, runtimeMin_ms),
    connectSpread_ms: cl.whole('connect-spread-ms', 3_000, 0),
    log: createLogger(
      { component: 'host-fleet' },
      { level: parseLogLevel(process.env['XCE_FLEET_LOG'], 'error'), format: 'json' },
    ),
  });
  const send = (m: FromFleet): void => {
    process.send?.(m);
  };
  fleet.start();
  const stats = setInterval(() => send({ type: 'stats', counts: fleet.counts() }), STATS_EVERY_MS);
  process.on('message', (m: ToFleet) => {
    if (m.type === 'regs') send({ type: 'regs', id: m.id, registeredAt: fleet.registeredAt() });
    else if (m.type === 'timelines')
      send({ type: 'timelines', id: m.id, timelines: fleet.timelines(), stalls: fleet.stalls });
    else {
      clearInterval(stats);
      fleet.close();
      process.disconnect?.();
    }
  });
  // The bench going away ends the fleet too.
  process.on('disconnect', () => {
    clearInterval(stats);
    fleet.close();
  });
}
