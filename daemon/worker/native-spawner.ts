// The launcher's side of xce-spawn (native/xce-spawn.c), its native fork server: a tiny C process,
// a child of the launcher, that forks and execs the job layers direct-job.ts has planned, with
// their rlimits set, so that neither the 12 MiB Node launcher forks for them nor a job with a
// memory or cpu limit needs its /bin/sh wrapper for `ulimit`. Requests and events are binary
// frames over its stdin and stdout (spawn-protocol.ts), what one turn of the event loop has as one write.
//
// Started at the first job and again after it died. When it dies, the jobs it had not answered
// fail to start and those it started are killed (SIGKILL to their groups: their exit codes can no
// longer be known) and reported ended, saying so, as launcher.ts does when the launcher dies. After
// NATIVE_DEATHS_MAX deaths it is not started again: the launcher uses Node's spawn (and the
// wrapper for a job with limits). It holds the event loop open only while a job it started runs.
// Imports only node: modules and launcher-side files: the launcher process loads it.

import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import { TurnOutbox } from './launcher-protocol.js';
import { signalGroup } from './proc.js';
import {
  encodeSignal,
  encodeSpawn,
  type NativeSpawnRequest,
  type SpawnEvent,
  SpawnEventDecoder,
} from './spawn-protocol.js';

/** After this many deaths the launcher stops starting xce-spawn again and uses Node's spawn. */
export const NATIVE_DEATHS_MAX = 3;

/** What became of one job: spawned, then ended; or failed, unwritable (an output file) or fallback (the wrapper must run it). */
export interface NativeEvents {
  spawned(pid: number): void;
  failed(message: string): void;
  unwritable(which: 'stdout' | 'stderr'): void;
  fallback(): void;
  ended(exitCode: number | null, signal: string | null, lost: string | null): void;
}

interface Pending {
  readonly file: string;
  readonly events: NativeEvents;
  pid: number | null;
}

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));
// The first name of a number wins: SIGABRT before SIGIOT, as Node names a child's signal.
const SIGNAL_NAMES = new Map<number, string>();
for (const [name, n] of Object.entries(constants.signals)) if (!SIGNAL_NAMES.has(n)) SIGNAL_NAMES.set(n, name);

export class NativeSpawner {
  private proc: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  /** Frames for the running xce-spawn, written at the end of this turn (emptied when it dies). */
  private readonly outbox = new TurnOutbox<Buffer>((frames) => this.flush(frames));
  private nextId = 1;
  /** How many times xce-spawn died (or could not be started). */
  deaths = 0;

  constructor(
    readonly path: string,
    private readonly warn: (message: string) => void = (m) => process.stderr.write(`${m}\n`),
  ) {}

  /** The running xce-spawn's pid, if one runs. */
  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  /** Whether jobs may still be started through it. */
  get usable(): boolean {
    return this.deaths < NATIVE_DEATHS_MAX;
  }

  /** Starts one job; throws (nothing started) on a request that cannot be encoded (a NUL in a string). */
  spawn(req: NativeSpawnRequest, events: NativeEvents): { signal(sig: NodeJS.Signals): void } {
    const frame = encodeSpawn(this.nextId, req);
    const id = this.nextId++;
    const entry: Pending = { file: req.file, events, pid: null };
    this.pending.set(id, entry);
    this.ref(this.running(), true);
    this.outbox.push(frame);
    return {
      signal: (sig) => {
        if (this.pending.get(id) === entry) this.outbox.push(encodeSignal(id, constants.signals[sig]));
      },
    };
  }

  /** Stops xce-spawn (its jobs are killed and reported, as after its death); for tests. */
  close(): void {
    const p = this.proc;
    if (p !== null) this.died(p, 'it was closed');
  }

  private running(): ChildProcess {
    if (this.proc !== null) return this.proc;
    const p = spawn(this.path, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.proc = p;
    const decoder = new SpawnEventDecoder();
    p.stdout?.on('data', (chunk: Buffer) => {
      let events: SpawnEvent[];
      try {
        events = decoder.push(chunk);
      } catch (err) {
        return this.died(p, (err as Error).message);
      }
      for (const e of events) this.onEvent(e);
    });
    p.stdin?.on('error', () => undefined); // a write after its death: its 'close' reports it
    p.once('error', (err) => this.died(p, `it could not be started or reached: ${err.message}`));
    // 'close': after its exit and the end of its output, so every event it wrote is handled first.
    p.once('close', (code, signal) => this.died(p, signal !== null ? `killed by ${signal}` : `exit code ${code}`));
    return p;
  }

  /** Whether xce-spawn (its process and pipes) holds the event loop open: only while a job it started runs. */
  private ref(p: ChildProcess, on: boolean): void {
    // Its pipes are sockets (Node's child stdio), which can be unreferenced like the process.
    for (const h of [p, p.stdin as Socket | null, p.stdout as Socket | null]) {
      if (h === null) continue;
      if (on) h.ref();
      else h.unref();
    }
  }

  private flush(frames: Buffer[]): void {
    this.proc?.stdin?.write(frames.length === 1 ? frames[0] : Buffer.concat(frames));
  }

  private onEvent(e: SpawnEvent): void {
    const p = this.pending.get(e.id);
    if (p === undefined) return;
    if (e.t === 'spawned') {
      p.pid = e.pid;
      return p.events.spawned(e.pid);
    }
    this.settle(e.id);
    switch (e.t) {
      case 'failed':
        // Node's spawn's wording for the same failure (`spawn /bin/x ENOENT`).
        return p.events.failed(`spawn ${p.file} ${ERRNO_NAMES.get(e.errno) ?? `errno ${e.errno}`}`);
      case 'unwritable':
        return p.events.unwritable(e.which);
      case 'fallback':
        return p.events.fallback();
      case 'ended':
        return p.events.ended(e.exitCode, e.signal === null ? null : (SIGNAL_NAMES.get(e.signal) ?? null), null);
    }
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0 && this.proc !== null) this.ref(this.proc, false);
  }

  /** xce-spawn `p` is gone: what it started is killed and reported; the next job starts a new one. */
  private died(p: ChildProcess, why: string): void {
    if (this.proc !== p) return;
    this.proc = null;
    this.outbox.clear();
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    this.deaths++;
    if (!this.usable)
      this.warn(`xce-spawn died ${this.deaths} times (last: ${why}): the launcher uses Node's spawn from now on`);
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const e of all) {
      if (e.pid === null) {
        e.events.failed(`the native spawner xce-spawn died before the process started (${why})`);
        continue;
      }
      signalGroup(e.pid, 'SIGKILL');
      e.events.ended(null, 'SIGKILL', `killed by the launcher: its native spawner xce-spawn died (${why})`);
    }
  }
}
