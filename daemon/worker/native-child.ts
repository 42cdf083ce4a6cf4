// The launcher's way to start a layer when it has the native spawner (native-spawner.ts): a job
// layer that direct-job.ts plans to exec is started by xce-spawn, limits included; everything
// else, and a job xce-spawn hands back (`fallback`), goes through Node's spawn as in layer-child.ts.
// The events are the ones spawnDirect gives for the same job, in the same order.
// Imports only node: modules and launcher-side files: the launcher process loads it.

import { type DirectJob, type DirectPlan, outputFailed, planDirectJob } from './direct-job.js';
import {
  type ChildEvents,
  type LayerChild,
  setUpFailed,
  spawnDirect,
  type SpawnLayer,
  type SpawnRequest,
  spawnWrapped,
  watchChild,
} from './layer-child.js';
import type { NativeSpawner } from './native-spawner.js';
import { procStartTicks } from './proc.js';

/** spawnDirect, with the job layers it would exec started by `native` (while it is usable). */
export function spawnLayerWith(native: NativeSpawner): SpawnLayer {
  return (req, events) => {
    if (req.direct === undefined || !native.usable) return spawnDirect(req, events);
    const plan = planDirectJob(req.direct, req.env, true);
    if (plan.kind === 'set-up-failed') return setUpFailed(plan.line, events);
    if (plan.kind === 'fallback') return watchChild(spawnWrapped(req), req, false, events);
    return spawnNative(native, plan, req.direct, req, events);
  };
}

function spawnNative(
  native: NativeSpawner,
  plan: Extract<DirectPlan, { kind: 'exec' }>,
  direct: DirectJob,
  req: SpawnRequest,
  events: ChildEvents,
): LayerChild {
  /** The wrapper started after a `fallback`; before it, signals are also kept to be sent to it. */
  let wrapped: LayerChild | null = null;
  let answered = false;
  const early: NodeJS.Signals[] = [];
  // The plan is the request (its kind and null descriptors are not sent: encodeSpawn reads the request's fields).
  const job = native.spawn(plan, {
    spawned: (pid) => {
      answered = true;
      events.spawned(pid, procStartTicks(pid));
      // Its set-up checks passed before it was started: there is no set-up pipe.
      if (req.setUpFd) events.setUp();
    },
    failed: (message) => events.failed(message),
    unwritable: (which) => void setUpFailed(outputFailed(direct, req.env, which).line, events),
    fallback: () => {
      answered = true;
      try {
        wrapped = watchChild(spawnWrapped(req), req, false, events);
      } catch (e) {
        return events.failed((e as Error).message);
      }
      for (const sig of early) wrapped.signal(sig);
    },
    ended: (exitCode, signal, lost) => events.ended(exitCode, signal, lost),
  });
  return {
    signal(sig) {
      if (wrapped !== null) return wrapped.signal(sig);
      if (!answered) early.push(sig);
      job.signal(sig);
    },
  };
}
