// What the store contracts share (log-store.contract.ts, snapshot-store.contract.ts): one store under
// test over its own storage, and a check that runs a scenario against a fresh one and always cleans up.

import { test } from 'node:test';

/** One store under test, over its own empty storage (a fresh directory, a fresh MemoryDisk). */
export interface StoreSubject<Store> {
  /** The store as first opened. */
  readonly store: Store;
  /** Closes the store opened last and opens a new one over the same storage: a restart. */
  reopen(): Promise<Store>;
  /** Closes what is open and removes the storage. */
  cleanup(): Promise<void>;
}

/** A contract's scenarios, each a test named `<name>: <title>` against a fresh subject from `open`. */
export function contractCheck<Subject extends StoreSubject<unknown>>(
  name: string,
  open: () => Promise<Subject>,
): (title: string, body: (s: Subject) => Promise<void>) => void {
  return (title, body) => {
    test(`${name}: ${title}`, async () => {
      const s = await open();
      try {
        await body(s);
      } finally {
        await s.cleanup();
      }
    });
  };
}
