// The client API's `jobs.peek` (`xcecli jobs peek ID [--follow]`, like LSF's bpeek): a piece of a
// running job's stdout, read by the worker of its head host and passed through the leader (the
// only controller the workers are connected to: a follower answers `not-leader` with the leader's
// address, and the client library follows it). The job's owner may peek, others need job:view.

import { PEEK_BYTES_MAX, type Request } from '../../api/protocol.js';
import type { PeekResult } from '../../api/responses.js';
import { PeekUnavailable } from '../worker-endpoint.js';
import type { ApiContext } from './context.js';
import { ApiFailure } from './errors.js';
import { canSeeJob } from './jobs.js';
import { read, requireConfig, requireLeader } from './steps.js';

export async function peekJob(
  ctx: ApiContext,
  user: string,
  req: Extract<Request, { op: 'jobs.peek' }>,
): Promise<PeekResult> {
  requireLeader(ctx);
  await read(ctx, { ...req, stale: false });
  const config = requireConfig(ctx);
  const id = req.args.id;
  const job = ctx.node.state.jobs.get(id);
  // Another user's job is answered as one that does not exist unless the user may see it (as jobs.show does).
  if (job === undefined || !canSeeJob(config, user, job))
    throw new ApiFailure(
      'not-found',
      `job ${id} does not exist, or is another user's (peeking at another user's job needs job:view)`,
    );
  if (job.state !== 'RUN') {
    const where = job.spec.stdoutPath ?? `xce-${id}.out`;
    throw new ApiFailure(
      'rejected',
      job.state === 'PEND'
        ? `job ${id} is pending: it has no output yet`
        : `job ${id} has finished (${job.state}): its output is in ${where}, not streamed any more`,
    );
  }
  const head = job.record?.hosts[0]?.host;
  if (head === undefined) throw new ApiFailure('rejected', `job ${id} has no host yet`);
  try {
    const f = await ctx.peekWorker(head, {
      jobId: id,
      run: job.runNumber,
      ...(req.args.offset !== undefined ? { offset: req.args.offset } : {}),
      maxBytes: Math.min(req.args.maxBytes ?? PEEK_BYTES_MAX, PEEK_BYTES_MAX),
    });
    if (f.outcome !== 'ok')
      throw new ApiFailure('rejected', f.reason ?? `host ${head} cannot show the output of job ${id}`);
    return { jobId: id, host: head, path: f.path ?? '', offset: f.offset ?? 0, size: f.size ?? 0, data: f.data ?? '' };
  } catch (e) {
    if (e instanceof PeekUnavailable) throw new ApiFailure('unavailable', e.message);
    throw e;
  }
}
