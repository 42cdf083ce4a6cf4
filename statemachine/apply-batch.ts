// Applying a BatchFact (issue 14): each dispatch decision of a scheduler pass, then each status of
// a flush of workers' reports, exactly as its single DispatchFact or JobStatusFact would be applied
// (the batch's time, the same checks, in order), so one entry for a pass gives the state the single
// facts one by one give (state.property.test.ts checks it).

import { applyDispatch } from './apply-dispatch.js';
import { applyStatus } from './apply-status.js';
import type { ApplyResult, BatchFact } from './facts.js';
import type { ControllerState } from './state.js';

export function applyBatch(state: ControllerState, b: BatchFact, timeMs: number): ApplyResult {
  const results = new Array<ApplyResult>(b.dispatches.length + b.statuses.length);
  let i = 0;
  for (const d of b.dispatches) results[i++] = applyDispatch(state, d, timeMs);
  for (const s of b.statuses) results[i++] = applyStatus(state, s, timeMs);
  return { kind: 'batch', results };
}
