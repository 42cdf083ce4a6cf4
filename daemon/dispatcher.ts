// The leader's dispatcher: `start` to the head host once a dispatch is APPLIED (so the record is
// durable on a majority before anything runs; the starts applied together go in one frame per
// host), re-sent when a worker registers without a job the state says it should run; `kill` when a
// running job is killed or requeued; `signal` (suspend or resume) when a job turns SUSP or back to
// RUN, and at registration for a run whose worker has it otherwise; starts a worker refused, and
// the jobs no worker runs, ended with a launch error.

import type { HubContext } from './hub-context.js';
import type { Registration } from './worker-endpoint.js';
import {
  WorkerFrameError,
  encodeFrame,
  parseStartInfo,
  type StartInfo,
  type AckFrame,
  type ControllerToWorkerFrame,
} from './worker-protocol.js';
import { encodeStartFrames } from './worker-start-batch.js';
import type { ApplyResult } from '../statemachine/facts.js';
import { isRunning, type ControllerState, type Job } from '../statemachine/state.js';
import { profileLabel } from '../model/profile-hash.js';

/**
 * Results after which no job runs anywhere it did not run before (the head-host index stays valid):
 * a status (statemachine/apply-status.ts) only marks a run started, ends it or notes a signal.
 */
const RUNNING_UNCHANGED: ReadonlySet<ApplyResult['kind']> = new Set<ApplyResult['kind']>([
  'statusApplied',
  'noop',
  'hostRegistered',
  'hostControlled',
  'submitted',
  'rejected',
  'declined',
  'ignored',
  'modified',
]);

/** Starts a worker refused, remembered (the oldest forgotten first) so that a kill can end their jobs. */
export const REFUSED_STARTS_MAX = 65_536;

/** How the dispatcher reaches a host's worker (the worker endpoint); nothing is sent to a host not connected. */
export interface WorkerLink {
  sendTo(host: string, frame: ControllerToWorkerFrame): void;
  /** An already encoded `start` frame. */
  sendText(host: string, text: string): void;
  /** Whether the host's worker takes `start` frames carrying several jobs (worker-protocol.ts). */
  acceptsStartBatches(host: string): boolean;
}

export class Dispatcher {
  /** What this leader told a worker to run: job → run and head host (for kills after a requeue). */
  private readonly started = new Map<number, { run: number; host: string }>();
  /** Starts a worker acked `refused`: job → run, host and the worker's reason. */
  private readonly refusedStarts = new Map<number, { run: number; host: string; reason: string }>();
  /** Jobs this leader is ending itself with a launch error (proposed, not yet applied). */
  private readonly endInFlight = new Set<number>();

  constructor(
    private readonly ctx: HubContext,
    private readonly link: WorkerLink,
  ) {}

  /**
   * The ids of the running jobs by head host, for reconcile: built once for a storm of registrations
   * (every host after a failover) instead of a scan of every job per host. Read through the state
   * (a run ended since is skipped), so that only results that may start a run drop it, not the
   * statuses of the jobs that end meanwhile.
   */
  private runningByHead: { state: ControllerState; byHost: Map<string, number[]> } | null = null;

  onLeadership(leader: boolean): void {
    this.runningByHead = null;
    if (leader) this.started.clear();
  }

  private runningJobsOf(host: string): readonly Job[] {
    const state = this.ctx.node.state;
    if (this.runningByHead?.state !== state) {
      const byHost = new Map<string, number[]>();
      for (const job of state.jobs.values()) {
        const head = isRunning(job) ? job.record?.hosts[0]?.host : undefined;
        if (head === undefined) continue;
        const list = byHost.get(head);
        if (list === undefined) byHost.set(head, [job.id]);
        else list.push(job.id);
      }
      this.runningByHead = { state, byHost };
    }
    const jobs: Job[] = [];
    for (const id of this.runningByHead.byHost.get(host) ?? []) {
      const job = state.jobs.get(id);
      if (job !== undefined && isRunning(job) && job.record?.hosts[0]?.host === host) jobs.push(job);
    }
    return jobs;
  }

  /** After a (re)registration: re-send starts the worker never got, kills for what should not run. */
  reconcile(r: Registration): void {
    const state = this.ctx.node.state;
    for (const key of r.running) {
      const [id, run] = key.split('.').map(Number) as [number, number];
      const job = state.jobs.get(id);
      if (job === undefined || !isRunning(job) || job.runNumber !== run || job.killRequestedBy !== null) {
        r.send({
          type: 'kill',
          jobId: id,
          run,
          reason: job?.killRequestedBy
            ? `killed by ${job.killRequestedBy}`
            : "the job is no longer running in the controller's state",
        });
      }
    }
    const starts = new StartsByHost();
    for (const job of this.runningJobsOf(r.host)) {
      this.started.set(job.id, { run: job.runNumber, host: r.host });
      const key = `${job.id}.${job.runNumber}`;
      if (!job.started && !r.running.has(key)) this.addStart(starts, job);
      // The worker stops or continues the run the state says is suspended or running (a suspend
      // or resume applied while it was away, or sent to a leader that has lost its place since).
      else if (r.running.has(key) && job.killRequestedBy === null && (job.state === 'SUSP') !== r.suspended.has(key))
        r.send({
          type: 'signal',
          jobId: job.id,
          run: job.runNumber,
          action: job.state === 'SUSP' ? 'suspend' : 'resume',
        });
    }
    this.sendStarts(starts);
  }

  /**
   * An ack from the head host of the job's current run. A start a worker refused is remembered: its
   * launch-error status normally follows, but should none come (an older worker, or one whose queue
   * of statuses is full), a kill must still end the job. A kill for a run the head host does not
   * know, of a job that never started, ends it too: nothing runs it, and nothing else would.
   */
  onAck(host: string, f: AckFrame): void {
    if (f.ref === 'start' && f.outcome === 'refused') {
      this.ctx.log.warn('a worker refused a start', { host, job: f.jobId, run: f.run, reason: f.reason });
      this.refusedStarts.delete(f.jobId);
      this.refusedStarts.set(f.jobId, { run: f.run, host, reason: f.reason ?? 'no reason given' });
      while (this.refusedStarts.size > REFUSED_STARTS_MAX)
        this.refusedStarts.delete(this.refusedStarts.keys().next().value as number);
      return;
    }
    if (f.ref === 'kill' && f.outcome === 'unknown') {
      const job = this.ctx.node.state.jobs.get(f.jobId);
      if (
        job === undefined ||
        !isRunning(job) ||
        job.runNumber !== f.run ||
        job.started ||
        job.killRequestedBy === null
      )
        return;
      if (job.record?.hosts[0]?.host !== host) return;
      this.endUnstarted(
        job,
        `killed by ${job.killRequestedBy} before it started: host ${host} does not run job ${job.id} run ${job.runNumber}`,
      );
    }
  }

  /** Called after every applied batch: dispatch what was dispatched, kill what must stop. */
  onApplied(results: ReadonlyArray<{ index: number; result: ApplyResult }>): void {
    // A storm of registrations interleaves with their own HostRegisteredFacts and the statuses of the
    // jobs ending meanwhile: those start no run, and the index stays (rebuilt per registration it is
    // O(jobs) each).
    if (results.some((r) => !RUNNING_UNCHANGED.has(r.result.kind))) this.runningByHead = null;
    if (!this.ctx.node.isLeader()) return;
    const state = this.ctx.node.state;
    // The starts of what was applied together (a scheduler pass's BatchFact): one frame per host.
    const starts = new StartsByHost();
    for (const { result } of results) {
      switch (result.kind) {
        case 'dispatched': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined && isRunning(job)) this.addStart(starts, job);
          break;
        }
        case 'controlled': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined) this.onControlled(job);
          break;
        }
        case 'statusApplied': {
          const job = state.jobs.get(result.jobId);
          if (job !== undefined && !isRunning(job)) {
            this.started.delete(job.id);
            this.refusedStarts.delete(job.id);
          }
          break;
        }
        default:
          break;
      }
    }
    this.sendStarts(starts);
  }

  /**
   * A control applied: end a job whose start was refused, kill a running one, or the requeued run;
   * suspend or resume a running one (the worker answers a signal that changes nothing with a no-op).
   */
  private onControlled(job: Job): void {
    const was = this.started.get(job.id);
    const refused = this.refusedStarts.get(job.id);
    if (isRunning(job) && job.killRequestedBy === null) {
      const host = job.record?.hosts[0]?.host;
      const action = job.state === 'SUSP' ? 'suspend' : 'resume';
      if (host !== undefined) this.link.sendTo(host, { type: 'signal', jobId: job.id, run: job.runNumber, action });
      return;
    }
    if (
      isRunning(job) &&
      job.killRequestedBy !== null &&
      !job.started &&
      refused !== undefined &&
      refused.run === job.runNumber
    ) {
      this.endUnstarted(
        job,
        `killed by ${job.killRequestedBy} before it started: host ${refused.host} refused its start: ${refused.reason}`,
      );
    } else if (isRunning(job) && job.killRequestedBy !== null)
      this.sendKill(job.id, job.runNumber, job.record?.hosts[0]?.host ?? null, `killed by ${job.killRequestedBy}`);
    else if (was !== undefined && (!isRunning(job) || job.runNumber !== was.run)) {
      this.sendKill(job.id, was.run, was.host, 'requeued');
      this.started.delete(job.id);
    }
  }

  /** Proposes the launch error that ends a job no worker runs (once at a time per job). */
  private endUnstarted(job: Job, reason: string): void {
    if (this.endInFlight.has(job.id) || !this.ctx.node.isLeader()) return;
    this.endInFlight.add(job.id);
    this.ctx.log.warn('ending a job that no worker runs', { job: job.id, run: job.runNumber, reason });
    const done = (): void => {
      this.endInFlight.delete(job.id);
    };
    this.ctx
      .propose({
        kind: 'status',
        jobId: job.id,
        runNumber: job.runNumber,
        status: { type: 'launchError', reason },
      })
      .then(done, done);
  }

  /** Adds a job's start to `starts`, or ends the job when its start cannot be sent. */
  private addStart(starts: StartsByHost, job: Job): void {
    const info = startInfoOf(job);
    if (info === null) return;
    const host = info.hosts[0]!.host;
    // What the worker would refuse is never sent: the job ends here with the reason (admission
    // keeps such jobs out; a record from an older version, or a bug, could still hold one).
    let checked: StartInfo;
    let frame: string;
    try {
      checked = parseStartInfo(info);
      frame = encodeFrame({ type: 'start', startInfo: checked }); // the size check too
    } catch (err) {
      if (!(err instanceof WorkerFrameError)) throw err;
      const problem = err.message.replace(/^bad start info: /, '');
      this.endUnstarted(
        job,
        `the controller cannot send the start of job ${job.id} run ${job.runNumber} to host ${host}: ${problem}`,
      );
      return;
    }
    this.started.set(job.id, { run: job.runNumber, host });
    starts.add(host, checked, frame);
  }

  /**
   * Sends the starts, one frame per host when its worker takes several-job frames, one per job
   * otherwise. A worker not connected now gets its starts when it registers (reconcile).
   */
  private sendStarts(starts: StartsByHost): void {
    for (const [host, list] of starts.byHost) {
      if (list.infos.length > 1 && this.link.acceptsStartBatches(host))
        for (const frame of encodeStartFrames(list.infos)) this.link.sendText(host, frame);
      else for (const frame of list.frames) this.link.sendText(host, frame);
    }
  }

  private sendKill(jobId: number, run: number, host: string | null, reason: string): void {
    if (host === null) return;
    this.link.sendTo(host, { type: 'kill', jobId, run, reason });
  }
}

/** Starts to send, by head host, in the order they were added. */
class StartsByHost {
  /** Each host's start infos and their single-job frames. */
  readonly byHost = new Map<string, { infos: StartInfo[]; frames: string[] }>();

  add(host: string, info: StartInfo, frame: string): void {
    const list = this.byHost.get(host);
    if (list === undefined) this.byHost.set(host, { infos: [info], frames: [frame] });
    else {
      list.infos.push(info);
      list.frames.push(frame);
    }
  }
}

/** The start a job's frozen dispatch record and its own facts make (null without a placement). */
export function startInfoOf(job: Job): StartInfo | null {
  const rec = job.record;
  if (rec === null || rec.hosts.length === 0) return null;
  const limits: StartInfo['limits'] = {};
  for (const [k, v] of Object.entries(rec.limits) as Array<[keyof StartInfo['limits'], { value: number } | undefined]>)
    if (v !== undefined) limits[k] = v.value;
  return {
    jobId: job.id,
    run: job.runNumber,
    user: job.user,
    queue: job.queue,
    profile: rec.profile,
    profileLabel: rec.profile !== null && rec.profileHash !== null ? profileLabel(rec.profile, rec.profileHash) : null,
    mode: rec.mode,
    launchType: rec.launchType,
    command: [...job.spec.command],
    cwd: job.spec.cwd ?? '',
    stdout: job.spec.stdoutPath,
    stderr: job.spec.stderrPath,
    ...(job.spec.script !== null ? { script: job.spec.script } : {}),
    tasks: rec.tasks,
    hosts: rec.hosts.map((h) => ({ host: h.host, tasks: h.tasks })),
    profileEnv: rec.env
      .filter((e) => e.origin === 'profile')
      .map((e) => ({ name: e.value.name, value: e.value.value })),
    jobEnv: rec.env.filter((e) => e.origin === 'job').map((e) => ({ name: e.value.name, value: e.value.value })),
    profilePreExec: rec.profilePreExec,
    profilePostExec: rec.profilePostExec,
    jobPreExec: rec.jobPreExec,
    jobPostExec: rec.jobPostExec,
    limits,
  };
}
