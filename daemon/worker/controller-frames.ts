// What the worker makes of one frame from the controller (leader-link.ts): a single frame parsed,
// a several-job `start` (../worker-start-batch.ts) read as its single-job starts one by one, and a
// start it cannot read, whose job and run can still be read, handed on to be answered with a
// launch error instead of being dropped (a start never answered holds its slots for ever).

import {
  type ControllerToWorkerFrame,
  parseControllerFrame,
  unreadableStart,
  unreadableStartValue,
} from '../worker-protocol.js';
import { parseStartValue, startsOf } from '../worker-start-batch.js';
import type { UnreadableStart } from './link-contract.js';

export interface ControllerFrameSink {
  frame(frame: ControllerToWorkerFrame): void;
  /** A start that does not parse whose job and run can be read; false: not taken (then it is `bad`). */
  unreadableStart(start: UnreadableStart, error: Error): boolean;
  /** A frame (or one start of a several-job frame) that cannot be used: dropped. */
  bad(what: 'frame' | 'start', error: Error): void;
}

/** Reads one frame from the controller into `sink`, a several-job start as its starts in order. */
export function readControllerFrame(text: string | Buffer, sink: ControllerFrameSink): void {
  let frame: ControllerToWorkerFrame;
  try {
    // Several starts in one frame: each read, acked and refused as its own single-job frame.
    const starts = startsOf(text);
    if (starts !== null) {
      for (const raw of starts) readStartValue(raw, sink);
      return;
    }
    frame = parseControllerFrame(text);
  } catch (err) {
    // A start this worker cannot take still gets an answer: a launch error for its job.
    const start = unreadableStart(text);
    if (start === null || !sink.unreadableStart(start, err as Error)) sink.bad('frame', err as Error);
    return;
  }
  sink.frame(frame);
}

function readStartValue(raw: unknown, sink: ControllerFrameSink): void {
  let frame: ControllerToWorkerFrame;
  try {
    frame = parseStartValue(raw);
  } catch (err) {
    const start = unreadableStartValue(raw);
    if (start === null || !sink.unreadableStart(start, err as Error)) sink.bad('start', err as Error);
    return;
  }
  sink.frame(frame);
}
