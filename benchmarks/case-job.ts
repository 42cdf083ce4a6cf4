// The job the state machine benchmarks submit: case I of a parameter study, `./run.sh --case=N`
// in the user's cases folder with CASE set, an hour's runtime and stdout per job.

import type { JobSpec } from '../statemachine/facts.js';

/** Case `i`'s job; `extraEnv` follows CASE. */
export function caseJobSpec(
  i: number,
  own: { resreq: string | null; tasks: number; jobName: string; extraEnv?: JobSpec['env'] },
): JobSpec {
  return {
    resreq: own.resreq,
    tasks: own.tasks,
    env: [{ name: 'CASE', value: `case-${i % 100}` }, ...(own.extraEnv ?? [])],
    limits: { runtime_s: 3600 },
    preExec: null,
    postExec: null,
    command: ['./run.sh', `--case=${i % 100}`],
    cwd: '/home/alice/cases',
    stdoutPath: '/home/alice/out/%J.out',
    stderrPath: null,
    script: null,
    jobName: own.jobName,
  };
}
