// What the three parts of the worker hub (worker-endpoint.ts, scheduler-loop.ts, dispatcher.ts)
// share: the controller node, the logger, the clock, and how a leader proposes a fact of its own
// (no client session: clientId null, sequence 0).

import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, FactBody } from '../statemachine/facts.js';

export interface HubContext {
  readonly node: ControllerNode;
  readonly log: Logger;
  readonly now: () => number;
  /** Proposes a fact of the leader's own; resolves once it is applied. */
  propose(body: FactBody): Promise<ApplyResult>;
}

export function hubContext(node: ControllerNode, log: Logger, now: () => number): HubContext {
  return {
    node,
    log,
    now,
    propose: (body) => node.propose(encodeFact({ clientId: null, sequence: 0, timeMs: now(), body })),
  };
}
