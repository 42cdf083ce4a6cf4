// Bounded waits on the controllers' `/healthz`: a leader two controllers agree on, every controller
// up and caught up (after each fault), and quiet (one applied index everywhere, stable) before the
// end checks read them.

import { until } from '../cluster.js';
import { sleep, type Drill } from './drill-context.js';
import { QUIET_LIMIT_MS } from './drill-types.js';

/** The leader, as it and another controller agree. */
export async function waitForLeader(d: Drill, limit_ms: number): Promise<number> {
  return until(
    'a leader',
    async () => {
      for (const id of d.t.ids) {
        const h = await d.t.health(id);
        if (h === null || h.leader === 0 || !d.t.ids.includes(h.leader)) continue;
        if ((await d.t.health(h.leader))?.leader === h.leader) return h.leader;
      }
      return undefined;
    },
    limit_ms,
    50,
  );
}

/** Every controller up, agreeing on a leader, and within `lag` entries of the leader. */
export async function waitHealthy(d: Drill, limit_ms: number, lag = 20): Promise<void> {
  await until(
    'every controller up, agreeing on one leader and caught up',
    async () => {
      const hs = await Promise.all([...d.t.ids].map((id) => d.t.health(id)));
      if (hs.some((h) => h === null || h.leader === 0 || h.leader !== hs[0]!.leader)) return false;
      const max = Math.max(...hs.map((h) => h!.applied));
      return hs.every((h) => h!.applied >= max - lag);
    },
    limit_ms,
    100,
  );
}

/** Quiet: every node up and at the same applied index, twice in a row. */
export async function waitQuiet(d: Drill): Promise<number> {
  let last = -1;
  return until(
    'the controllers to be quiet (same applied index on all three, stable)',
    async () => {
      const hs = await Promise.all([...d.t.ids].map((id) => d.t.health(id)));
      if (hs.some((h) => h === null || h.leader === 0)) return false;
      const a = hs[0]!.applied;
      if (!hs.every((h) => h!.applied === a && h!.leader === hs[0]!.leader)) return false;
      if (a === last) return a;
      last = a;
      await sleep(300);
      return false;
    },
    QUIET_LIMIT_MS,
    200,
  );
}
