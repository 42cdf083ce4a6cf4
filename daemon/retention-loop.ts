// Finished jobs leaving the state, driven from the leader: every CLEAN_INTERVAL_MS the leader asks
// statemachine/retention.ts which finished jobs are due at its clock and proposes one CleanFact
// naming them (never more than one in flight). Every controller applies it, so no controller ever
// removes a job on a timer of its own. Followers only compact their own accounting store
// (`accounting_retention`), in the background, which is local upkeep of derived data.

import { encodeFact } from '../statemachine/facts-codec.js';
import { cleanCandidates, oldestFinishedJob } from '../statemachine/retention.js';
import { ACCOUNTING_RETENTION_MS_DEFAULT } from '../model/config-types.js';
import type { ControllerNode } from './controller-node.js';
import type { Logger } from './log.js';
import type { RetentionFigures } from './metrics.js';

/** How often the leader looks for finished jobs due to leave the state. */
export const CLEAN_INTERVAL_MS = 500;
/** How often each controller drops accounting records older than accounting_retention. */
export const COMPACT_INTERVAL_MS = 60 * 60 * 1000;

export class RetentionLoop {
  private cleanTimer: NodeJS.Timeout | null = null;
  private compactTimer: NodeJS.Timeout | null = null;
  private proposing = false;
  private compacting = false;

  constructor(
    private readonly node: ControllerNode,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.cleanTimer = setInterval(() => void this.cleanOnce(), CLEAN_INTERVAL_MS);
    this.compactTimer = setInterval(() => void this.compactOnce(), COMPACT_INTERVAL_MS);
    this.cleanTimer.unref();
    this.compactTimer.unref();
    void this.compactOnce();
  }

  stop(): void {
    if (this.cleanTimer !== null) clearInterval(this.cleanTimer);
    if (this.compactTimer !== null) clearInterval(this.compactTimer);
    this.cleanTimer = this.compactTimer = null;
  }

  /** On the leader: proposes one CleanFact for the jobs due now, if any (none while one is in flight). */
  async cleanOnce(): Promise<void> {
    if (this.proposing || !this.node.isLeader() || this.node.state.config === null) return;
    const timeMs = this.now();
    const ids = cleanCandidates(this.node.state, timeMs);
    if (ids.length === 0) return;
    this.proposing = true;
    try {
      const r = await this.node.propose(
        encodeFact({ clientId: null, sequence: 0, timeMs, body: { kind: 'clean', jobIds: ids } }),
      );
      this.log.debug('cleaned finished jobs', { named: ids.length, removed: r.kind === 'cleaned' ? r.count : 0 });
    } catch (err) {
      // Lost leadership or timed out: the next leader proposes again what is still due.
      this.log.debug('clean not applied; retried at the next round', { error: (err as Error).message });
    } finally {
      this.proposing = false;
    }
  }

  /** Drops accounting records older than accounting_retention on this controller. */
  async compactOnce(): Promise<void> {
    const store = this.node.accounting;
    if (store === null || this.compacting) return;
    this.compacting = true;
    try {
      const keepMs = this.node.state.config?.cluster.cluster.accountingRetentionMs ?? ACCOUNTING_RETENTION_MS_DEFAULT;
      const removed = await store.compact(this.now() - keepMs);
      if (removed > 0) this.log.info('compacted the accounting store', { path: store.path, removed });
    } catch (err) {
      this.log.warn('accounting store compaction failed', { path: store.path, error: (err as Error).message });
    } finally {
      this.compacting = false;
    }
  }

  /** The figures the metrics export. */
  async figures(): Promise<RetentionFigures> {
    const state = this.node.state;
    const nowMs = this.now();
    const oldest = oldestFinishedJob(state);
    const store = this.node.accounting;
    const s = store === null ? null : await store.stats();
    return {
      jobsCleaned: state.jobsCleaned,
      oldestFinishedAge_s: oldest === null ? null : Math.max(0, (nowMs - oldest.endTimeMs) / 1000),
      store:
        s === null
          ? null
          : {
              records: s.records,
              bytes: s.approximateBytes,
              oldestAge_s: s.oldestEndMs === null ? null : Math.max(0, (nowMs - s.oldestEndMs) / 1000),
            },
    };
  }
}
