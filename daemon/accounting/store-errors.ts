// What the accounting store (store.ts) refuses with: a store it cannot use, named by its path with
// the way to rebuild it, and the checks of its own metadata keys.

import { KEY_GAPS } from './keys.js';

/** The store could not be opened or read: corrupt, or written by something else. */
export class AccountingStoreError extends Error {
  override readonly name = 'AccountingStoreError';
  constructor(
    readonly path: string,
    cause: string,
  ) {
    super(
      `the accounting store ${path} cannot be used: ${cause}. This controller serves the active jobs but keeps ` +
        `no job history until the store is rebuilt: stop the controller, move ${path} away, copy ${path} from ` +
        `another controller (stopped, or from its latest backup), and start it again`,
    );
  }
}

/** A LevelDB error's code and message, and its cause's. */
export function causeOf(e: unknown): string {
  const err = e as { code?: string; message?: string; cause?: { message?: string } };
  return [err.code, err.message, err.cause?.message].filter((x) => x !== undefined && x !== '').join(': ');
}

export function wholeNumber(s: string, key: string): number {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${key} holds ${JSON.stringify(s)}, not a whole number`);
  return n;
}

/** A log range (exclusive, inclusive] a controller never applied: it installed a snapshot over it. */
export type Gap = readonly [afterIndex: number, throughIndex: number];

export function parseGaps(s: string): Gap[] {
  const v = JSON.parse(s) as unknown;
  if (!Array.isArray(v) || !v.every((g) => Array.isArray(g) && g.length === 2 && g.every(Number.isSafeInteger)))
    throw new Error(`${KEY_GAPS} is not a list of [after, through] index pairs`);
  return v as Gap[];
}
