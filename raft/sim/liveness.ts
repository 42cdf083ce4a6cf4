// After the chaos phase: heal every fault, then check liveness in stages (a leader elected and its
// probe accepted, the probe committed, then applied on every member, each within its bound plus the
// backlog allowance), and at the end that every proposal the final leader accepted was committed.
import { describeConf } from '../confchange.js';
import { StateType } from '../raft.js';
import type { NodeId } from '../types.js';
import { NONE } from '../types.js';
import { SimViolation } from './checker.js';
import type { NodeDriver } from './driver.js';
import type { SimNetwork } from './network.js';
import { SIM_BACKLOG_MS_PER_ENTRY, SIM_CATCH_UP_BOUND_MS, SIM_LIVENESS_BOUND_MS, SIM_TICK_MS } from './params.js';
import type { SimNode } from './sim-node.js';
import type { SimWorld } from './world.js';

export class Liveness {
  private liveStage: 'elect' | 'commit' | 'apply' | 'done' = 'elect';
  private liveLeader: NodeId = NONE;
  private liveTerm = 0;
  private liveIndex = 0;
  private liveRetries = 0;
  private healAt = 0;
  /** Extra time allowed for the commit and apply stages, from the backlog at the probe. */
  private commitBacklogMs = 0;
  private applyBacklogMs = 0;

  constructor(
    private readonly w: SimWorld,
    private readonly net: SimNetwork,
    private readonly driver: NodeDriver,
  ) {}

  /** Whether the probe was applied everywhere: the run is over. */
  get done(): boolean {
    return this.liveStage === 'done';
  }

  heal(): void {
    this.w.healed = true;
    this.healAt = this.w.now;
    this.net.heal();
    this.w.log('HEAL: network repaired, every crashed node restarts');
    for (const n of this.w.nodes.values()) if (!n.alive) this.driver.restart(n);
    this.w.q.push(this.w.now + SIM_TICK_MS, { kind: 'liveness' });
  }

  /** Drives the liveness check after healing: a leader, a committed proposal, applied everywhere. */
  liveness(): void {
    this.checkBound();
    const leader = this.w.nodes.get(this.liveLeader);
    const stillLeads =
      leader !== undefined &&
      leader.alive &&
      leader.raw!.raft.state === StateType.Leader &&
      leader.raw!.raft.term === this.liveTerm;
    if (this.liveStage !== 'elect' && !stillLeads) {
      // The leader lost power before finishing: no promise was made; elect again.
      this.liveRetries++;
      this.liveStage = 'elect';
    }
    if (this.liveStage === 'elect') {
      this.elect();
    } else if (this.liveStage === 'commit') {
      this.checkCommitted(leader!);
    } else if (this.liveStage === 'apply') {
      const r = leader!.raw!.raft;
      const members = [...r.conf.voters, ...r.conf.learners];
      if (members.every((id) => (this.w.nodes.get(id)?.smApplied ?? 0) >= this.liveIndex)) {
        this.liveStage = 'done';
        this.w.log(`LIVENESS: probe applied on every member ${describeConf(r.conf)}`);
        return;
      }
    }
    this.w.q.push(this.w.now + SIM_TICK_MS, { kind: 'liveness' });
  }

  /** Throws when the current stage is not done within its bound since healing. */
  private checkBound(): void {
    const bound =
      this.liveStage === 'apply'
        ? SIM_CATCH_UP_BOUND_MS + this.applyBacklogMs
        : this.liveStage === 'commit'
          ? SIM_LIVENESS_BOUND_MS + this.commitBacklogMs
          : SIM_LIVENESS_BOUND_MS;
    if (this.w.now - this.healAt > bound) {
      const st = [...this.w.nodes.values()]
        .map(
          (n) =>
            `n${n.id}:${n.alive ? StateType[n.raw!.raft.state] : 'down'} t${n.raw?.raft.term} c${n.raw?.raft.log.committed} a${n.smApplied}`,
        )
        .join(' ');
      const l = this.w.nodes.get(this.liveLeader)?.raw?.raft;
      const prs = l === undefined ? '' : [...l.prs].map(([id, pr]) => `${id}:${pr.describe()}`).join('; ');
      throw new SimViolation(
        'liveness',
        `stage '${this.liveStage}' not done ${bound}ms after healing: ${st} | leader progress ${prs}`,
      );
    }
  }

  /** Stage 'elect': the voter leading in the highest term is asked to accept a probe proposal. */
  private elect(): void {
    const ls = this.w.leaders().filter((n) => n.raw!.raft.isVoter(n.id));
    if (ls.length > 0) {
      const l = ls.reduce((a, b) => (a.raw!.raft.term >= b.raw!.raft.term ? a : b));
      const res = l.raw!.propose(new Uint8Array([0xfe, this.liveRetries & 0xff]));
      if (res.ok) {
        this.liveLeader = l.id;
        this.liveTerm = res.term;
        this.liveIndex = res.index;
        this.liveStage = 'commit';
        const lr = l.raw!.raft;
        const members = [...lr.conf.voters, ...lr.conf.learners];
        const minApplied = Math.min(...members.map((id) => this.w.nodes.get(id)?.smApplied ?? 0));
        this.commitBacklogMs = (res.index - lr.log.committed) * SIM_BACKLOG_MS_PER_ENTRY;
        this.applyBacklogMs = (res.index - minApplied) * SIM_BACKLOG_MS_PER_ENTRY;
        this.w.accepted.push({ index: res.index, term: res.term, leader: l.id });
        this.w.log(`LIVENESS: leader n${l.id} term ${res.term} accepted the probe at ${res.index}`);
      }
      this.driver.afterActivity(l);
    }
  }

  /** Stage 'commit': once the leader committed the probe's index, it must be the probe. */
  private checkCommitted(leader: SimNode): void {
    const r = leader.raw!.raft;
    if (r.log.committed >= this.liveIndex) {
      if (r.log.term(this.liveIndex) !== this.liveTerm && r.log.firstIndex() <= this.liveIndex) {
        throw new SimViolation(
          'liveness',
          `probe at ${this.liveIndex}/t${this.liveTerm} replaced while its leader stayed in power`,
        );
      }
      this.liveStage = 'apply';
    }
  }

  /** At the end: every proposal accepted by the final leader in its term is committed. */
  finalChecks(): void {
    const leader = this.w.nodes.get(this.liveLeader);
    if (leader === undefined) return;
    const r = leader.raw!.raft;
    for (const a of this.w.accepted) {
      // Proposals after the probe may still be in flight when the run ends: not yet a promise.
      if (a.leader !== leader.id || a.term !== r.term || a.index > this.liveIndex) continue;
      if (a.index > r.log.committed) {
        throw new SimViolation(
          'liveness',
          `proposal at ${a.index}/t${a.term} accepted by leader n${a.leader}, which stayed in power, never committed`,
        );
      }
      const t = r.log.term(a.index);
      if (t !== undefined && t !== a.term) {
        throw new SimViolation(
          'committed-entry-lost',
          `proposal at ${a.index}/t${a.term} accepted by the still-leader n${a.leader} was replaced`,
        );
      }
    }
  }
}
