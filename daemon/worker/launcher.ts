// The worker's side of its launcher process (launcher-main.ts): every layer's process is started by
// that small process, asked over Node's IPC channel, so that the worker never forks itself (a fork
// blocks the worker's event loop for a time that grows with the worker's memory).
//
// One launcher per worker process, started at the first layer and again after it died. When it
// dies, every process it started and that has not ended is killed (SIGKILL to its group, from the
// worker: its exit code can no longer be known) and reported ended, saying so; a request it had not
// answered fails to start. Nothing waits for a launcher that is gone. The launcher holds the
// worker's event loop open only while a process it started runs.

import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildEvents, LayerChild, SpawnLayer, SpawnRequest } from './layer-child.js';
import { type FromLauncher, type ToLauncher, TurnOutbox } from './launcher-protocol.js';
import { signalGroup } from './proc.js';

/** The launcher's program, next to this file once compiled. */
const LAUNCHER_MAIN = fileURLToPath(new URL('./launcher-main.js', import.meta.url));
/** Node flags of the launcher: a small heap (it holds only the processes it started), no worker threads. */
const LAUNCHER_NODE_FLAGS: readonly string[] = ['--max-old-space-size=32', '--max-semi-space-size=1'];

interface Pending {
  readonly events: ChildEvents;
  pid: number | null;
}

export class Launcher {
  private proc: ChildProcess | null = null;
  /** Requests to send to `proc` at the end of this turn of the event loop, in order (one IPC message). */
  private readonly outbox = new TurnOutbox<ToLauncher>((batch) => this.flush(batch));
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Launcher processes started so far (1 + restarts). */
  starts = 0;
  /**
   * The native spawner the launcher starts jobs with (native/xce-spawn, spawner.ts), or null: Node's
   * spawn. Set before the first layer (xcecd's --spawner); a job with limits may then skip its wrapper.
   */
  native: string | null = null;

  /** The running launcher's pid, if one runs. */
  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  /** Starts a layer's process through the launcher (SpawnLayer). */
  readonly spawn: SpawnLayer = (req: SpawnRequest, events: ChildEvents): LayerChild => {
    const id = this.nextId++;
    const entry: Pending = { events, pid: null };
    this.pending.set(id, entry);
    const proc = this.running();
    // While a process it started runs, the launcher (its handle: its 'exit' must come) and its channel keep the loop open.
    proc.ref();
    proc.channel?.ref();
    this.send({ t: 'spawn', id, req });
    return {
      signal: (signal) => {
        const p = this.proc;
        if (this.pending.get(id) === entry && p !== null) this.send({ t: 'signal', id, signal });
      },
    };
  };

  /** Stops the launcher (the processes it started are killed and reported, as after its death). */
  close(): void {
    const p = this.proc;
    if (p === null) return;
    p.kill('SIGKILL');
    this.died(p, 'the launcher was closed');
  }

  private running(): ChildProcess {
    if (this.proc !== null) return this.proc;
    const native = this.native === null ? [] : [`--native=${this.native}`];
    const p = spawn(process.execPath, [...LAUNCHER_NODE_FLAGS, LAUNCHER_MAIN, ...native], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
      // Its own process group: a terminal's Ctrl-C reaches xcecd (which stops its jobs in order), not the launcher.
      detached: true,
    });
    this.starts++;
    this.proc = p;
    p.unref();
    p.on('message', (batch) => {
      for (const m of batch as FromLauncher[]) this.onMessage(m);
    });
    p.once('error', (err) => this.died(p, `it could not be started or reached: ${err.message}`));
    p.once('exit', (code, signal) => this.died(p, signal !== null ? `killed by ${signal}` : `exit code ${code}`));
    // A launcher whose channel closed can do nothing more: it is made to exit, and its 'exit' reports it.
    p.once('disconnect', () => {
      if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    });
    return p;
  }

  /** Queues `m` for the running launcher: the outbox holds only requests for it (emptied when it dies). */
  private send(m: ToLauncher): void {
    this.outbox.push(m);
  }

  /** Sends the requests of this turn to the launcher (none when it died meanwhile: they were failed with it). */
  private flush(batch: ToLauncher[]): void {
    const p = this.proc;
    if (p === null) return;
    try {
      p.send(batch, (err) => {
        if (err !== null && err !== undefined) this.died(p, `cannot write to it: ${err.message}`);
      });
    } catch (err) {
      // The channel is already closed: the 'disconnect' handler reports, or reports again (harmless).
      queueMicrotask(() => this.died(p, `cannot write to it: ${(err as Error).message}`));
    }
  }

  private onMessage(m: FromLauncher): void {
    const e = this.pending.get(m.id);
    if (e === undefined) return;
    switch (m.t) {
      case 'spawned':
        e.pid = m.pid;
        return e.events.spawned(m.pid, m.procStart);
      case 'output':
        return e.events.output(Buffer.from(m.base64, 'base64'));
      case 'setUp':
        return e.events.setUp();
      case 'failed':
        this.settle(m.id);
        return e.events.failed(m.message);
      case 'ended':
        this.settle(m.id);
        return e.events.ended(m.exitCode, m.signal, m.lost ?? null);
    }
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (this.pending.size > 0) return;
    this.proc?.unref();
    this.proc?.channel?.unref();
  }

  /** The launcher `p` is gone: what it started is killed and reported; the next layer starts a new one. */
  private died(p: ChildProcess, why: string): void {
    if (this.proc !== p) return;
    this.proc = null;
    this.outbox.clear(); // requests for `p`: their layers are failed or ended below
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    const lost = `killed by the worker: its process launcher died (${why})`;
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const e of all) {
      if (e.pid === null) {
        e.events.failed(`the process launcher died before the process started (${why})`);
        continue;
      }
      signalGroup(e.pid, 'SIGKILL');
      e.events.ended(null, 'SIGKILL', lost);
    }
  }
}

let shared: Launcher | null = null;

/** This worker process's launcher (one for every run). */
export function sharedLauncher(): Launcher {
  shared ??= new Launcher();
  return shared;
}
