// One client API connection's queue of received requests (api-connection.ts): the frames in arrival
// order with their bytes counted, each parsed once when its turn comes, the started ones dropped
// from the front.

import { RequestError, parseRequest, requestIdOf, type Request } from '../api/protocol.js';

export interface QueuedRequest {
  readonly frame: string | Uint8Array;
  readonly bytes: number;
  parsed?: Request | RequestError;
  /** When it arrived (only while a submit trace is on: submit-trace.ts). */
  recv_us?: number;
}

/** Started slots at the front are spliced away once there are more than this and they are most of the array. */
const HEAD_COMPACT_MIN = 1024;

function parse(frame: string | Uint8Array): Request | RequestError {
  try {
    return parseRequest(frame);
  } catch (err) {
    // Anything else is a bug of ours, not of the frame: no exception text goes back to the client.
    return err instanceof RequestError
      ? err
      : new RequestError(requestIdOf(frame), 'bad-frame', 'the frame could not be read as a request');
  }
}

export class RequestQueue {
  private readonly entries: QueuedRequest[] = [];
  private head = 0;
  private queuedBytes = 0;

  /** Requests waiting. */
  get length(): number {
    return this.entries.length - this.head;
  }

  /** Bytes of the requests waiting. */
  get bytes(): number {
    return this.queuedBytes;
  }

  push(r: QueuedRequest): void {
    this.entries.push(r);
    this.queuedBytes += r.bytes;
  }

  /** The next request, parsed (once); the queue must not be empty. */
  next(): QueuedRequest & { parsed: Request | RequestError } {
    const r = this.entries[this.head]!;
    r.parsed ??= parse(r.frame);
    return r as QueuedRequest & { parsed: Request | RequestError };
  }

  /** Drops the next request (it starts). */
  take(): void {
    const r = this.entries[this.head]!;
    this.entries[this.head++] = undefined as unknown as QueuedRequest;
    if (this.head > HEAD_COMPACT_MIN && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
    this.queuedBytes -= r.bytes;
  }

  clear(): void {
    this.entries.length = 0;
    this.head = 0;
    this.queuedBytes = 0;
  }
}
