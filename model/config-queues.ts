// loadConfig's rules for queues.yaml: names unique; a queue's res_req, pre_exec and post_exec still
// accepted (res_req checked like a profile's) but warned about: they belong in a profile.

import type { Path } from './config-file.js';
import type { QueueConfig } from './config-types.js';
import { type Parsed, uniqueNames } from './config-parsed.js';
import { resReqAt } from './config-values.js';
import type { ResourceRef } from './resreq.js';

export function checkQueues(
  parsed: Parsed,
  resources: ReadonlyMap<string, ResourceRef> | null,
): Map<string, QueueConfig> | null {
  const p = parsed['queues.yaml'];
  if (p === undefined || p.data === null) return null;
  const { f, data } = p;
  uniqueNames(f, 'queues', data.queues, 'queue');
  const out = new Map<string, QueueConfig>();
  data.queues.forEach((q, i) => {
    if (q === null) return;
    const path: Path = ['queues', i];
    if (q.res_req !== undefined) {
      resReqAt(f, [...path, 'res_req'], q.res_req, resources);
      f.warning(
        [...path, 'res_req'],
        `queue ${q.name} sets res_req, which is deprecated: a queue holds scheduling policy only; move "${q.res_req}" into the resreq of an application profile (applications.yaml)`,
      );
    }
    for (const key of ['pre_exec', 'post_exec'] as const) {
      if (q[key] !== undefined) {
        f.warning(
          [...path, key],
          `queue ${q.name} sets ${key}, which is deprecated: move it into the ${key} of an application profile (applications.yaml), where it runs as the outer layer in a clean environment`,
        );
      }
    }
    if (!out.has(q.name)) {
      out.set(q.name, {
        name: q.name,
        priority: q.priority,
        description: q.description ?? null,
        deprecatedResReq: q.res_req ?? null,
        deprecatedPreExec: q.pre_exec ?? null,
        deprecatedPostExec: q.post_exec ?? null,
      });
    }
  });
  return out;
}
