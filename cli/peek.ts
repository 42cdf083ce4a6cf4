// `xcecli jobs peek ID [--follow]` (like LSF's `bpeek -f`): the end of a running job's stdout, then,
// with --follow, what the job writes next, by asking the leader (which asks the job's head host's
// worker) for the bytes after those already shown, once a second, until the job ends or the
// follow time is over. Bounded: the first answer is at most the tail asked for, each later one at
// most PEEK_BYTES_MAX, and a follow ends after --for seconds.

import { PEEK_BYTES_MAX } from '../api/protocol.js';
import { ApiError } from './api-error.js';
import type { XceClient } from './client.js';

/** The end of the output shown first. */
export const PEEK_TAIL_BYTES_DEFAULT = 16 * 1024;
/** How long --follow follows unless --for says otherwise, and at most. */
export const PEEK_FOLLOW_S_DEFAULT = 3600;
export const PEEK_FOLLOW_S_MAX = 24 * 3600;
/** Between two asks while following (sooner when the last answer was full: more is waiting). */
export const PEEK_POLL_MS = 1000;

interface Piece {
  offset: number;
  size: number;
  data: string;
  host: string;
  path: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Prints the job's output as `peek` (and `--follow`) do; `follow_s` 0: one look. */
export async function peek(
  c: XceClient,
  id: number,
  o: { tail: number; follow_s: number; json: boolean },
  write: (chunk: Buffer | string) => void = (chunk) => void process.stdout.write(chunk),
  now: () => number = Date.now,
): Promise<void> {
  const emit = (p: Piece, bytes: Buffer): void => {
    if (o.json)
      write(
        `${JSON.stringify({ jobId: id, host: p.host, path: p.path, offset: p.offset, size: p.size, text: bytes.toString('utf8') })}\n`,
      );
    else write(bytes);
  };
  const first = (await c.call('jobs.peek', { id, maxBytes: o.tail })) as Piece;
  let bytes = Buffer.from(first.data, 'base64');
  emit(first, bytes);
  if (o.follow_s === 0) return;
  let offset = first.offset + bytes.length;
  const until = now() + o.follow_s * 1000;
  let full = false;
  while (now() < until) {
    if (!full) await sleep(PEEK_POLL_MS);
    let p: Piece;
    try {
      p = (await c.call('jobs.peek', { id, offset, maxBytes: PEEK_BYTES_MAX })) as Piece;
    } catch (e) {
      // The job ended (or left its host): what it wrote last is in its output file.
      if (e instanceof ApiError && e.code === 'rejected') {
        const d = (await c.showJob(id)) as { state?: string };
        if (d.state !== 'RUN') return;
        full = false;
        continue;
      }
      throw e;
    }
    bytes = Buffer.from(p.data, 'base64');
    if (bytes.length > 0) emit(p, bytes);
    offset = p.offset + bytes.length;
    full = bytes.length >= PEEK_BYTES_MAX;
  }
}
