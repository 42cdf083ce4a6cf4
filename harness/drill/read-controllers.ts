// The reading of every controller for the end checks: first (bounded) waits for the workers' last
// statuses and the drill's jobs to land, then every controller's job list, every job's details and
// its state digest, all at one applied index (read again, a bounded number of times, if it moved).

import type { XceClient } from '../../cli/client.js';
import { until } from '../cluster.js';
import { waitQuiet } from './cluster-waits.js';
import type { Drill } from './drill-context.js';
import {
  CLIENT_DEADLINE_MS,
  LIST_LIMIT,
  QUIET_LIMIT_MS,
  READ_ATTEMPTS_MAX,
  type Details,
  type JobRow,
} from './drill-types.js';
import { outcomeOf } from './history.js';
import type { Health } from './target.js';
import { elementId } from '../../model/job-id.js';

/** One controller's view of the drill's jobs. */
export interface ControllerView {
  readonly list: JobRow[];
  readonly details: Map<number, Details>;
}

/** Every controller read at one applied index (or the last attempt's reading). */
export interface Reading {
  readonly ids: number[];
  readonly applied: number;
  readonly views: Map<number, ControllerView>;
  /** Each controller's `/healthz?digest=1` after its reading, in `ids` order. */
  readonly digests: Array<Health | null>;
}

/** Waits (bounded) for the workers' last statuses and the drill's jobs to end, then reads. */
export async function settleAndRead(d: Drill): Promise<Reading> {
  // Workers' last statuses land on the leader (bounded wait), then everything is quiet.
  d.phase = 'waiting for quiet';
  await until(
    'every status the workers reported to be applied',
    async () => {
      const l = (await d.admin.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
      const state = new Map(l.jobs.map((j) => [j.id, j.state]));
      return [...d.h.finished.values()].every((f) => state.get(f.jobId) !== 'RUN' || d.h.controlled.has(f.jobId));
    },
    QUIET_LIMIT_MS,
    500,
  ).catch(() => undefined);
  // The last jobs still run (`sleep 3`) or wait for a slot: a status landing between reading one
  // controller and the next would look like a difference. Bounded: a job may pend for good.
  d.phase = "waiting for the drill's jobs to finish";
  await until(
    'every job of the drill to finish',
    async () => {
      const l = (await d.admin.listJobs({ limit: LIST_LIMIT })) as { jobs: JobRow[] };
      return l.jobs.every((j) => !d.ours(j.name) || j.state === 'DONE' || j.state === 'EXIT');
    },
    QUIET_LIMIT_MS,
    500,
  ).catch(() => d.log("some of the drill's jobs still run or pend; comparing the controllers anyway"));
  d.phase = 'reading every controller';
  return readControllers(d);
}

/**
 * Every controller is read at one applied index, the same before and after the reading; if
 * anything was applied meanwhile, read again (bounded).
 */
async function readControllers(d: Drill): Promise<Reading> {
  const ids = [...d.t.ids];
  let applied = 0;
  let views = new Map<number, ControllerView>();
  let digests: Array<Health | null> = [];
  for (let attempt = 1; ; attempt++) {
    applied = await waitQuiet(d);
    views = new Map();
    for (const id of ids) views.set(id, await readOne(d, id));
    const after = await Promise.all(ids.map((id) => d.t.health(id, true)));
    digests = after;
    if (after.every((h) => h?.applied === applied)) break;
    if (attempt >= READ_ATTEMPTS_MAX) {
      d.log(
        `the controllers kept applying while being read (${READ_ATTEMPTS_MAX} attempts); comparing the last reading`,
      );
      break;
    }
    d.log(`applied index moved from ${applied} while reading the controllers; reading again`);
  }
  return { ids, applied, views, digests };
}

/** One controller's list of the drill's jobs and their details, read from it alone (stale reads). */
async function readOne(d: Drill, id: number): Promise<ControllerView> {
  const c = await d.t.client('reader', CLIENT_DEADLINE_MS, [d.t.address(id)]);
  const list = ((await c.call('jobs.list', { limit: LIST_LIMIT }, { stale: true })) as { jobs: JobRow[] }).jobs.filter(
    (j) => d.ours(j.name),
  );
  // A job array of the drill's (`NAME[1-N]`) is one row; its elements are read one by one too.
  const ids = list.flatMap((j) => [
    j.id,
    ...Array.from({ length: j.array?.size ?? 0 }, (_, k) => elementId(j.id, k + 1)),
  ]);
  const details = await everything(c, ids);
  c.close();
  return { list, details };
}

/** The details of every job in `ids` (16 at a time); a job gone meanwhile is left out. */
async function everything(c: XceClient, ids: readonly number[]): Promise<Map<number, Details>> {
  const out = new Map<number, Details>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        try {
          out.set(id, (await c.call('jobs.show', { id }, { stale: true })) as Details);
        } catch (err) {
          if (outcomeOf(err).result !== 'not-found') throw err;
        }
      }
    }),
  );
  return out;
}
