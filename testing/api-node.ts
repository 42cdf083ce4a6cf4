// A controller node for tests of what runs on the leader (the client API, the worker hub), and the
// client API on it. Its Raft is a stand-in (propose = apply at the next index), so a proposal is applied when `propose` returns.
import assert from 'node:assert/strict';
import { ApiServer } from '../daemon/api-server.js';
import type { TokenAuthority } from '../daemon/auth.js';
import type { ControllerNode } from '../daemon/controller-node.js';
import { apply } from '../statemachine/apply.js';
import { loadConfig } from '../model/config.js';
import type { Logger } from '../daemon/log.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import type { ApplyResult, ConfigFile, FactBody } from '../statemachine/facts.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import { dispatchFact } from './state-facts.js';
import { silentLog } from './worker-fixtures.js';

/** The time of the facts a stand-in node applies itself (config, dispatch): T0 + its index by default. */
export const T0 = 1_764_547_200_000;

/** The parts of a ControllerNode the leader's services use; `leader` is the node it believes leads (0: none). */
export class StandInNode {
  readonly id = 1;
  readonly state: ControllerState = emptyState();
  leader = 1;
  /** Facts proposed through `propose` (the service under test), not those applied with `fact`. */
  proposals = 0;
  /** When set, every read barrier fails with it. */
  failReads: Error | null = null;
  private index = 0;

  isLeader(): boolean {
    return this.leader === this.id;
  }
  leaderId(): number {
    return this.leader;
  }
  addressOf(id: number): string | null {
    return id === 0 ? null : `127.0.0.1:${7000 + id}`;
  }
  async propose(bytes: Uint8Array): Promise<ApplyResult> {
    this.proposals++;
    return this.commit(bytes);
  }
  async readBarrier(): Promise<void> {
    if (this.failReads !== null) throw this.failReads;
  }
  /** A fact applied as if someone else (a client, the scheduler) had proposed it. */
  fact(body: FactBody): ApplyResult {
    return this.commit(encodeFact({ clientId: null, sequence: 0, timeMs: this.factTime_ms(), body }));
  }
  /** A node with `files` applied as its configuration. */
  static configured(files: ConfigFile[]): StandInNode {
    const node = new StandInNode();
    node.config(files);
    return node;
  }
  /** A configuration applied through the log, as an upgrade would be. */
  config(files: ConfigFile[]): void {
    const r = this.fact({ kind: 'config', files, user: null });
    assert.equal(r.kind, 'configApplied', JSON.stringify(r));
  }
  /** The scheduler's dispatch of a pending job to n1: its record frozen from the live merge. */
  dispatch(jobId: number): void {
    const r = this.fact(dispatchFact(this.state, jobId, [{ host: 'n1', tasks: 1 }]));
    assert.equal(r.kind, 'dispatched', JSON.stringify(r));
  }
  /** The time of the facts this node applies itself. */
  protected factTime_ms(): number {
    return T0 + this.index;
  }
  /** Called after each fact is applied (a leader's services hear of it). */
  protected applied(_index: number, _result: ApplyResult): void {}
  protected commit(bytes: Uint8Array): ApplyResult {
    const index = ++this.index;
    const result = apply(this.state, bytes, index);
    this.applied(index, result);
    return result;
  }
  /** This node where a ControllerNode is expected. */
  get asControllerNode(): ControllerNode {
    return this as unknown as ControllerNode;
  }
}

/** The client API on `node`, its bootstrap configuration loaded from `files` (it must load). */
export function standInApi(
  node: StandInNode,
  files: ConfigFile[],
  tokens: TokenAuthority,
  now_ms: () => number,
  log: Logger = silentLog('api'),
): ApiServer {
  const loaded = loadConfig(files);
  assert.ok(loaded.ok, 'the test configuration loads');
  return new ApiServer(node.asControllerNode, tokens, log, null, loaded.config, now_ms);
}
