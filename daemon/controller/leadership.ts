// Leadership as the core sees it: whether this node leads (from Raft's soft state, handed over by
// the Ready loop), the listeners told when that changes, and what a leader that steps down still
// holds (answered at once). The core's fail-stop tells the listeners through `stepDown`.

import { StateType } from '../../raft/raft.js';
import type { SoftState } from '../../raft/rawnode.js';
import type { CoreLogger } from './core-options.js';
import { Listeners } from './listeners.js';
import type { Waiters } from './waiters.js';

export class Leadership {
  private leading = false;
  /** Told `(true, term)` when this node becomes leader, `(false, term)` when it stops being one. */
  readonly listeners = new Listeners<[leader: boolean, term: number]>();

  constructor(private readonly d: { readonly id: number; readonly log: CoreLogger; readonly waiters: Waiters }) {}

  /** Whether this node leads, as last told by the Ready loop. */
  get leader(): boolean {
    return this.leading;
  }

  /** Raft's soft state changed (the Ready loop's leadership step). */
  onSoftState(s: SoftState, term: number): void {
    const leader = s.state === StateType.Leader;
    this.d.log.info(leader ? 'became leader' : 'following', { term, leader: s.lead });
    if (leader === this.leading) return;
    this.leading = leader;
    // A leader that steps down (check-quorum in a minority, a higher term seen) answers what it
    // still holds at once, so that clients move to the new leader instead of waiting out
    // PROPOSAL_TIMEOUT_MS: the reads were never confirmed, the writes may or may not commit.
    if (!leader) this.d.waiters.failAll(`node ${this.d.id} stopped being the leader (term ${term})`);
    this.listeners.emit(leader, term);
  }

  /** The core stopped leading without Raft saying so (a fail-stop): tells the listeners. */
  stepDown(term: number): void {
    this.leading = false;
    this.listeners.emit(false, term);
  }
}
