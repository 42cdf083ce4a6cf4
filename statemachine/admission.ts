// Admission of a submit: the one judgement of whether a job may enter the queue. The leader's early
// check (daemon/api-server.ts) and apply (apply.ts, authoritative) both call `admitSubmit`, so the
// two can never disagree: what the leader would refuse, apply refuses with the same words, and the
// other way round. Pure: a function of the configuration, the user and the request.
//
// The checks, in order (the first that fails is the answer):
//   1. the shape of the job's own values (job-limits.ts: what a worker's start frame would refuse);
//   2. the queue is defined, and the user holds queue:submit on it;
//   3. the profile is defined (an alias resolves to its target), and the user holds app:use on the
//      TARGET (RBAC never sees the alias); a profile the user may neither use nor view (app:view)
//      is refused in the not-defined words, naming only what the user asked for;
//   4. no env name takes the reserved XCE_ prefix;
//   5. `-R` parses and names only resources resources.yaml defines (a typo must not pend forever);
//   6. the additive rule (merge.ts): the job may add to its profile, never change or remove.
// Before them: a job array's name (`-J "sweep[1-1000]%50"`, at most `array_size_max` elements) and
// the dependency's syntax (`-w`). The additive rule is judged once for a whole array: its elements
// share the job's own values.
// Not here: what depends on the state (the job table's bound, the session table); apply checks those.

import type { ClusterConfig } from '../model/config-types.js';
import type { JobSpec, RejectCode, SubmitFact } from './facts.js';
import { jobShapeProblem } from '../model/job-limits.js';
import { ownValues } from '../model/job-own-values.js';
import { hashOf, NO_PROFILE } from './jobs.js';
import { isReservedEnvName, merge, RESERVED_ENV_PREFIX } from '../model/merge.js';
import type { EffectiveValues, JobOwnValues, Profile } from '../model/profile-types.js';
import { profileNotDefinedReason, resolveProfile } from '../model/profiles.js';
import { authorize } from '../model/rbac.js';
import { checkResReqResources, ResReqSyntaxError } from '../model/resreq.js';
import { DependencySyntaxError, parseDependency } from '../model/dependency.js';
import { parseArrayName } from '../model/job-array.js';

/** A submit as the leader proposes it (a SubmitFact is one). */
export interface SubmitRequest {
  readonly queue: string;
  /**
   * The profile as recorded: the cluster default when the user named none, an alias's target
   * (jobs.ts `submitFactFor`). null only in records written before profiles existed: no profile.
   */
  readonly profile: string | null;
  /** The name the user gave (`--app`), null when none. */
  readonly profileRequested: string | null;
  readonly spec: JobSpec;
  /** `-w` as written (names are resolved against the state by apply: apply-submit.ts); null or absent: none. */
  readonly dependency?: string | null;
  /** `--dep-never kill`. */
  readonly dependencyKill?: boolean;
}

export type Admission =
  | {
      readonly ok: true;
      /** What the log records: the resolved profile's name, the job's own values. */
      readonly submit: SubmitFact;
      /** The resolved profile; null for a record written before profiles. */
      readonly profile: Profile | null;
      readonly hash: string | null;
      /** The job merged with its profile as of this configuration (the dry run shows it). */
      readonly effective: EffectiveValues;
    }
  | { readonly ok: false; readonly code: RejectCode; readonly message: string };

const refuse = (code: RejectCode, message: string): Admission => ({ ok: false, code, message });

function reservedEnvMessage(name: string): string {
  return `environment variable ${name}: the ${RESERVED_ENV_PREFIX} prefix is reserved for XCE itself; rename the variable`;
}

/** A malformed or too large job array name (`-J`), or a dependency (`-w`) that does not parse. */
function arrayOrDependencyProblem(
  config: ClusterConfig,
  jobName: string | null,
  dependency: string | null,
): Admission | null {
  const array = parseArrayName(jobName, config.cluster.arraySizeMax);
  if (array.kind === 'error') return refuse('invalid_array', array.message);
  if (dependency === null) return null;
  try {
    parseDependency(dependency);
    return null;
  } catch (e) {
    if (!(e instanceof DependencySyntaxError)) throw e;
    return refuse('invalid_dependency', `dependency ${JSON.stringify(dependency)}: ${e.message}`);
  }
}

export function admitSubmit(config: ClusterConfig, user: string, request: SubmitRequest): Admission {
  const shape = jobShapeProblem(request.spec);
  if (shape !== null) return refuse('invalid_job', shape.message);
  const dependency = request.dependency ?? null;
  const arrayOrDependency = arrayOrDependencyProblem(config, request.spec.jobName, dependency);
  if (arrayOrDependency !== null) return arrayOrDependency;

  if (!config.queues.has(request.queue)) return refuse('queue_not_defined', `queue ${request.queue} is not defined`);
  const q = authorize(config, user, 'queue:submit', { type: 'queue', value: request.queue });
  if (!q.allowed) return refuse('not_authorized', q.reason);

  // A profile removed since the leader's check is refused, never replaced by a fallback.
  let profile: Profile | null = null;
  if (request.profile !== null) {
    const resolved = resolveProfile(config, request.profile);
    if (resolved === null) return refuse('profile_not_defined', profileNotDefinedReason(request.profile));
    profile = resolved.profile;
    const a = authorize(config, user, 'app:use', { type: 'app', value: profile.name });
    if (!a.allowed) {
      // A profile the user may neither use nor view is answered as one that does not exist, so a
      // refusal does not tell which profiles exist (nor an alias's target). Pure, like the rest:
      // apply gives the same words on every replica.
      if (!authorize(config, user, 'app:view', { type: 'app', value: profile.name }).allowed) {
        return request.profileRequested === null || request.profileRequested === ''
          ? refuse(
              'not_authorized',
              `user ${user} may not use the cluster's default application profile; name one with --app`,
            )
          : refuse('profile_not_defined', profileNotDefinedReason(request.profileRequested));
      }
      return refuse('not_authorized', a.reason);
    }
  }

  const reserved = request.spec.env.find((e) => isReservedEnvName(e.name));
  if (reserved !== undefined) return refuse('reserved_env', reservedEnvMessage(reserved.name));

  let own: JobOwnValues;
  try {
    own = ownValues(request.spec);
  } catch (e) {
    if (e instanceof ResReqSyntaxError) return refuse('resreq_syntax', `resource requirement: ${e.message}`);
    throw e;
  }
  if (own.resreq !== null) {
    const problems = checkResReqResources(own.resreq, config.resources);
    if (problems.length > 0)
      return refuse('unknown_resource', `resource requirement: ${problems.map((p) => p.message).join('; ')}`);
  }

  const m = merge(profile ?? NO_PROFILE, own);
  if (!m.ok) return refuse('additive_rule', m.error.message);
  return {
    ok: true,
    submit: {
      kind: 'submit',
      user,
      queue: request.queue,
      spec: request.spec,
      profile: profile === null ? null : profile.name,
      profileRequested: request.profileRequested,
      dependency,
      dependencyKill: request.dependencyKill ?? false,
    },
    profile,
    hash: profile === null ? null : hashOf(profile),
    effective: m.effective,
  };
}
