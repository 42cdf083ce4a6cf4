// The client API's queue view (`queues.list`, `queues.show`, `xcecli queues`, like LSF's bqueues):
// every queue of queues.yaml with its priority, the jobs in it by state, the slots its running jobs
// hold, whether the asking user may submit to it, and its deprecated settings. Queues hold no
// limits in this version: what a job may use is its application profile's and its own.

import type { RequestOf } from '../../api/protocol.js';
import type { QueueList, QueueRow } from '../../api/responses.js';
import type { ClusterConfig, QueueConfig } from '../../model/config-types.js';
import type { ControllerState } from '../../statemachine/state.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { allowed, readConfig } from './steps.js';

function deprecations(q: QueueConfig): string[] {
  const out: string[] = [];
  if (q.deprecatedResReq !== null)
    out.push(
      `res_req "${q.deprecatedResReq}" is deprecated and not applied: move it into the resreq of an application profile`,
    );
  for (const [key, v] of [
    ['pre_exec', q.deprecatedPreExec],
    ['post_exec', q.deprecatedPostExec],
  ] as const)
    if (v !== null) out.push(`${key} is deprecated and not run: move it into the ${key} of an application profile`);
  return out;
}

type Counts = Pick<QueueRow, 'pending' | 'running' | 'done' | 'exited' | 'slotsUsed'>;

/** Jobs of every queue by state, in one walk over the jobs. */
function countsByQueue(state: ControllerState): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const j of state.jobs.values()) {
    let c = out.get(j.queue);
    if (c === undefined) out.set(j.queue, (c = { pending: 0, running: 0, done: 0, exited: 0, slotsUsed: 0 }));
    if (j.state === 'PEND') c.pending++;
    else if (j.state === 'RUN') {
      c.running++;
      c.slotsUsed += j.record?.tasks ?? 0;
    } else if (j.state === 'DONE') c.done++;
    else c.exited++;
  }
  return out;
}

function rowOf(config: ClusterConfig, user: string, q: QueueConfig, counts: Counts | undefined): QueueRow {
  return {
    name: q.name,
    priority: q.priority,
    description: q.description,
    ...(counts ?? { pending: 0, running: 0, done: 0, exited: 0, slotsUsed: 0 }),
    canSubmit: allowed(config, user, 'queue:submit', { type: 'queue', value: q.name }),
    limits: null,
    deprecations: deprecations(q),
  };
}

/** Every queue, highest priority first (the order the scheduler considers them in), then by name. */
export async function listQueues(ctx: ApiContext, user: string, req: RequestOf<'queues.list'>): Promise<QueueList> {
  const config = await readConfig(ctx, req);
  const counts = countsByQueue(ctx.node.state);
  const queues = [...config.queues.values()]
    .sort((a, b) => b.priority - a.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((q) => rowOf(config, user, q, counts.get(q.name)));
  return { queues };
}

export async function showQueue(ctx: ApiContext, user: string, req: RequestOf<'queues.show'>): Promise<QueueRow> {
  const config = await readConfig(ctx, req);
  const q = config.queues.get(req.args.name);
  if (q === undefined)
    throw new ApiFailure(
      'not-found',
      `queue ${req.args.name} is not defined (queues: ${[...config.queues.keys()].sort().join(', ')})`,
    );
  return rowOf(config, user, q, countsByQueue(ctx.node.state).get(q.name));
}
