// The accounting store as the controller core sees it (controller/ports.ts AccountingPort): the
// applier's records, the snapshotter's wait, and the gap a snapshot from the leader leaves.

import type { Logger } from '../log.js';
import type { AccountingPort } from '../controller/ports.js';
import type { AccountingStore } from './store.js';

export function accountingPort(store: AccountingStore, log: Pick<Logger, 'warn'>): AccountingPort {
  return {
    record: (index, timeMs, jobs) => store.record(index, timeMs, jobs),
    flushedThrough: (index) => store.flushedThrough(index),
    snapshotInstalled: (afterIndex, throughIndex) => {
      store.addGap(afterIndex, throughIndex).catch((err: unknown) =>
        log.warn('could not record the accounting gap of an installed snapshot', {
          path: store.path,
          afterIndex,
          throughIndex,
          error: (err as Error).message,
        }),
      );
    },
  };
}
