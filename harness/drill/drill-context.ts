// The state of one drill run, shared by the load (load.ts), the faults (faults.ts) and the end
// checks (end-checks.ts): the history, the seeded PRNGs, the faults so far, what is paused or cut,
// the target and its admin client, the run's job-name prefix, its clock and its log.

import type { XceClient } from '../../cli/client.js';
import { DrillHistory } from './history.js';
import { Prng } from './schedule.js';
import type { DrillOptions, FaultRecord } from './drill-types.js';
import type { DrillTarget } from './target.js';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Drill {
  readonly h = new DrillHistory();
  readonly rng: Prng;
  readonly loadRng: Prng;
  readonly faults: FaultRecord[] = [];
  readonly paused = new Set<number>();
  readonly t0 = performance.now();
  stopLoad = false;
  phase = 'starting';
  snapshotInstalls = 0;
  upgrades = 0;
  partitioned = false;
  t!: DrillTarget;
  admin!: XceClient;
  /** Every job name the drill gives starts with this: its jobs among anyone else's. */
  readonly prefix: string;

  constructor(readonly opts: DrillOptions) {
    this.rng = new Prng(opts.seed);
    this.loadRng = this.rng.fork();
    // The run's start time keeps two runs with one seed apart on a cluster that outlives them.
    this.prefix = `d${opts.seed}-${Date.now().toString(36)}-`;
  }

  /** Whether a job name is one of this run's markers. */
  ours(name: string | null | undefined): name is string {
    return typeof name === 'string' && name.startsWith(this.prefix);
  }

  now(): number {
    return performance.now() - this.t0;
  }

  log(s: string): void {
    this.opts.log?.(`[${(this.now() / 1000).toFixed(1).padStart(6)} s] ${s}`);
  }

  get aborted(): boolean {
    return this.opts.signal?.aborted === true;
  }
}
