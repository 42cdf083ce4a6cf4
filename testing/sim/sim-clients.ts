// The simulated clients: each has a session and one request open at a time, sends it to the node it
// thinks leads, and retries the same (client, sequence) after a refusal, a timeout or a leader
// change, and now and then after an answer it acts as if it lost. Every answer is checked against
// the request's first application.

import { isDeepStrictEqual } from 'node:util';
import { encodeFact } from '../../statemachine/facts-codec.js';
import type { ApplyResult, Fact } from '../../statemachine/facts.js';
import type { SimChecks } from './sim-checks.js';
import type { SimConfig } from './sim-config.js';
import { SIM_CLIENT_ATTEMPT_MS_MAX, SIM_CLIENT_ATTEMPT_MS_MIN } from './sim-types.js';
import { canonical, describe } from './sim-util.js';
import type { SimWorld } from './sim-world.js';
import { jobNameFor, nextRequest, type ClientKind, type Request } from './workload.js';

interface Attempt {
  readonly n: number;
  settled: boolean;
}

interface ClientRequest {
  readonly seq: number;
  readonly req: Request;
  attempts: number;
  answered: boolean;
  /** An answer came, but the client acts as if it was lost and sends the sequence again. */
  resendAfterAnswer: boolean;
  current: Attempt | undefined;
}

export interface SimClient {
  readonly id: string;
  readonly kind: ClientKind;
  seq: number;
  leaderHint: number;
  open: ClientRequest | undefined;
  /** seq → first answer received. */
  readonly answers: Map<number, ApplyResult>;
}

export class SimClients {
  readonly clients: SimClient[] = [];

  /** An admin, alice and bob, and (drawn) a second alice. */
  constructor(
    private readonly w: SimWorld,
    private readonly checks: SimChecks,
    private readonly config: SimConfig,
  ) {
    this.clients.push(newClient('c-admin', 'admin'), newClient('c-alice', 'alice'), newClient('c-bob', 'bob'));
    if (w.rng.chance(0.5)) this.clients.push(newClient('c-alice2', 'alice'));
  }

  /** Schedules each client's first request. */
  start(): void {
    for (const c of this.clients)
      this.w.sched.after(this.w.rng.intBetween(1, 40), `client ${c.id}`, () => this.next(c));
  }

  /** The clients with a request not answered yet, as `client#seq`. */
  openRequests(): string[] {
    return this.clients.filter((c) => c.open !== undefined).map((c) => `${c.id}#${c.open!.seq}`);
  }

  private next(c: SimClient): void {
    if (this.w.healed || c.open !== undefined) return;
    c.seq++;
    const view = this.w.up()[0]?.core?.state;
    const req = nextRequest(c.kind, this.w.rng, jobNameFor(c.id, c.seq), this.config, view, c.seq);
    c.open = { seq: c.seq, req, attempts: 0, answered: false, resendAfterAnswer: false, current: undefined };
    this.w.stats.requests++;
    this.w.log(`${c.id} request ${c.seq}: ${req.label}`);
    this.attempt(c);
  }

  /** Sends the open request (same client, same sequence) to the node the client thinks leads. */
  private attempt(c: SimClient): void {
    const r = c.open;
    if (r === undefined) return;
    const up = this.w.up();
    const hinted = this.w.nodes.get(c.leaderHint);
    const target =
      hinted?.phase === 'up' && this.w.rng.chance(0.85) ? hinted : up.length > 0 ? this.w.rng.pick(up) : undefined;
    r.attempts++;
    this.w.stats.attempts++;
    const a: Attempt = { n: r.attempts, settled: false };
    r.current = a;
    if (target === undefined) {
      this.retryLater(c, r, a, 'no controller is up');
      return;
    }
    const fact: Fact = { clientId: c.id, sequence: r.seq, timeMs: target.clock!.now(), body: r.req.body };
    const bytes = encodeFact(fact);
    this.checks.registerFact(bytes, c.id, r.seq);
    this.w.sched.after(
      this.w.rng.intBetween(SIM_CLIENT_ATTEMPT_MS_MIN, SIM_CLIENT_ATTEMPT_MS_MAX),
      `client ${c.id} timeout`,
      () => {
        if (a.settled || r.current !== a || r.answered) return;
        a.settled = true;
        this.w.log(`${c.id} request ${r.seq} attempt ${a.n} timed out`);
        this.attempt(c);
      },
    );
    target.core!.propose(bytes).then(
      (result) => this.answered(c, r, a, target.id, result),
      (err: unknown) => {
        const hint = (err as { leaderId?: number }).leaderId;
        if (typeof hint === 'number' && hint !== 0) c.leaderHint = hint;
        if (a.settled || r.current !== a) return;
        this.retryLater(c, r, a, `n${target.id}: ${describe(err)}`);
      },
    );
  }

  private retryLater(c: SimClient, r: ClientRequest, a: Attempt, why: string): void {
    a.settled = true;
    if (this.w.traceOn) this.w.log(`${c.id} request ${r.seq} attempt ${a.n} refused (${why}); retrying`);
    this.w.sched.after(this.w.rng.intBetween(5, 40), `client ${c.id} retry`, () => {
      if (r.current === a && !r.answered) this.attempt(c);
    });
  }

  /** An answer, possibly to an attempt the client already gave up on: still checked. */
  private answered(c: SimClient, r: ClientRequest, a: Attempt, from: number, result: ApplyResult): void {
    const canon = canonical(result);
    if (!this.answerMatches(c, r, a, from, result, canon)) return;
    c.leaderHint = from;
    this.w.log(
      `${c.id} request ${r.seq} answered by n${from}: ${canon.length > 160 ? `${canon.slice(0, 160)}...` : canon}`,
    );
    if (r.answered) return;
    // Now and then the answer is "lost" on its way and the client sends the same sequence again.
    if (!r.resendAfterAnswer && !this.w.healed && this.w.rng.chance(0.15)) {
      r.resendAfterAnswer = true;
      a.settled = true;
      this.w.log(`${c.id} request ${r.seq}: the answer is lost, the client sends it again`);
      this.w.sched.after(this.w.rng.intBetween(1, 30), `client ${c.id} resend`, () => this.attempt(c));
      return;
    }
    r.answered = true;
    a.settled = true;
    this.w.stats.acked++;
    this.countResult(r.req, result);
    c.open = undefined;
    if (!this.w.healed) this.w.sched.after(this.w.rng.intBetween(5, 80), `client ${c.id}`, () => this.next(c));
  }

  /** The answer is the request's first application's, and the same as any earlier answer to it. */
  private answerMatches(
    c: SimClient,
    r: ClientRequest,
    a: Attempt,
    from: number,
    result: ApplyResult,
    canon: string,
  ): boolean {
    const key = `${c.id}#${r.seq}`;
    const first = this.checks.firstApplication(key);
    if (first === undefined) {
      this.w.fail('retry-result', `${key} was answered ${canon} by node ${from} but never applied anywhere`);
      return false;
    }
    if (first.canon !== canon) {
      this.w.fail(
        'retry-result',
        `${key} attempt ${a.n} was answered ${canon} by node ${from}; its first application (index ${first.index}) answered ${first.canon}`,
      );
      return false;
    }
    const prev = c.answers.get(r.seq);
    if (prev !== undefined) {
      this.w.stats.duplicateAnswers++;
      if (!isDeepStrictEqual(JSON.parse(canonical(prev)), JSON.parse(canon)))
        this.w.fail('retry-result', `${key} answered ${canon}, earlier ${canonical(prev)}`);
    } else c.answers.set(r.seq, result);
    return true;
  }

  private countResult(req: Request, r: ApplyResult): void {
    const s = this.w.stats;
    const b = req.body;
    if (r.kind === 'configApplied') s.configs++;
    else if (r.kind === 'submitted') {
      s.submitted++;
      if (b.kind === 'submit' && b.spec.jobName?.includes('[') === true) s.arrays++;
      if (b.kind === 'submit' && b.dependency !== null) s.dependencies++;
    } else if (r.kind === 'controlled') {
      s.controls++;
      if (b.kind === 'control' && (b.action === 'hold' || b.action === 'release')) s.holds++;
      if (b.kind === 'control' && (b.action === 'suspend' || b.action === 'resume')) s.suspends++;
    } else if (r.kind === 'modified') s.modified++;
    else if (r.kind === 'hostControlled') s.hostControls++;
    else if (r.kind === 'rejected') s.refused++;
  }
}

function newClient(id: string, kind: ClientKind): SimClient {
  return { id, kind, seq: 0, leaderHint: 0, open: undefined, answers: new Map() };
}
