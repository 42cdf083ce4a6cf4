// The launcher process: a small Node process, started by the worker (launcher.ts), that starts
// every layer's process for it (layer-child.ts's spawnDirect), so that the worker, whose memory
// grows with its jobs, never forks: a fork costs in proportion to the forking process's memory and
// blocks its event loop. It reads spawn and signal requests from its IPC channel and reports what
// became of each process. When the worker goes (the channel closes), it exits and leaves the jobs
// running, as they would be if it were the worker that had started them (a restarted worker adopts them).
// `--native=<path>`: the job layers it would exec are started by that native spawner (native-spawner.ts).

import { type FromLauncher, type ToLauncher, TurnOutbox } from './launcher-protocol.js';
import { type LayerChild, spawnDirect } from './layer-child.js';
import { spawnLayerWith } from './native-child.js';
import { NativeSpawner } from './native-spawner.js';

const children = new Map<number, LayerChild>();
const nativePath = process.argv.find((a) => a.startsWith('--native='))?.slice('--native='.length);
const spawnLayer = nativePath === undefined ? spawnDirect : spawnLayerWith(new NativeSpawner(nativePath));

/** What is to be sent at the end of this turn of the event loop, in order (one IPC message). */
const outbox = new TurnOutbox<FromLauncher>((batch) => {
  if (process.connected) process.send?.(batch);
});

function send(m: FromLauncher): void {
  outbox.push(m);
}

function start(id: number, m: Extract<ToLauncher, { t: 'spawn' }>): void {
  const child = spawnLayer(m.req, {
    spawned: (pid, procStart) => send({ t: 'spawned', id, pid, procStart }),
    failed: (message) => {
      children.delete(id);
      send({ t: 'failed', id, message });
    },
    output: (chunk) => send({ t: 'output', id, base64: chunk.toString('base64') }),
    setUp: () => send({ t: 'setUp', id }),
    ended: (exitCode, signal, lost) => {
      children.delete(id);
      send({ t: 'ended', id, exitCode, signal, ...(lost === null ? {} : { lost }) });
    },
  });
  children.set(id, child);
}

function handle(m: ToLauncher): void {
  if (m.t === 'spawn') {
    try {
      start(m.id, m);
    } catch (err) {
      // A request Node's spawn rejects outright (a bad argument): that layer fails to start.
      send({ t: 'failed', id: m.id, message: (err as Error).message });
    }
  } else if (m.t === 'signal') children.get(m.id)?.signal(m.signal);
}

process.on('message', (raw) => {
  for (const m of raw as ToLauncher[]) handle(m);
});
process.on('disconnect', () => process.exit(0));
