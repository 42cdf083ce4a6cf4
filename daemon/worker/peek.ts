// `peek` on the worker (`xcecli jobs peek`): a piece of a running job's stdout file, read by the
// worker and sent to the leader. The file is the run's own (its path as the job layer opened it);
// when the worker runs as root it reads only a regular file owned by the job's execution user, and
// never through a symbolic link, so that `-o /etc/shadow` cannot be peeked at.

import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

export class PeekError extends Error {
  override readonly name = 'PeekError';
}

export interface PeekPiece {
  /** Where `data` starts in the file. */
  readonly offset: number;
  /** The file's size when it was read. */
  readonly size: number;
  readonly data: Buffer;
}

/**
 * Reads at most `maxBytes` of `file` from `offset` (null: the last `maxBytes`; an offset past the
 * end, the file having been truncated, reads from its start). `uid`: the owner the file must have
 * (null: no check, the worker runs jobs as itself). Throws PeekError saying why it cannot.
 */
export async function readPiece(
  file: string,
  uid: number | null,
  offset: number | null,
  maxBytes: number,
): Promise<PeekPiece> {
  let fh;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw new PeekError(
      `cannot open the stdout file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new PeekError(`the stdout file ${file} is not a regular file`);
    if (uid !== null && st.uid !== uid)
      throw new PeekError(`the stdout file ${file} is not owned by the job's user (uid ${uid})`);
    const size = st.size;
    const start = offset === null ? Math.max(0, size - maxBytes) : offset > size ? 0 : offset;
    const length = Math.min(maxBytes, size - start);
    const data = Buffer.alloc(length);
    const { bytesRead } = length === 0 ? { bytesRead: 0 } : await fh.read(data, 0, length, start);
    return { offset: start, size, data: data.subarray(0, bytesRead) };
  } finally {
    await fh.close();
  }
}
