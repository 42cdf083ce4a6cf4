// The job's own values: what a user asked for, before any merge with a profile. Submit facts
// carry them (statemachine/facts.ts) and the live merge reads them; they belong to the model
// because admission, the merge and the worker's checks all judge them.

import type { EnvVar, Limits } from './profile-types.js';

/** The job's OWN values as submitted: never merged with its profile (the merge is live). */
export interface JobSpec {
  /** As the user wrote it (`-R`); null: none given. */
  readonly resreq: string | null;
  /** `-n`; null: none given (the profile's min, else 1). */
  readonly tasks: number | null;
  /** Sorted by name. */
  readonly env: readonly EnvVar[];
  readonly limits: Limits;
  readonly preExec: string | null;
  readonly postExec: string | null;
  /** argv. */
  readonly command: readonly string[];
  readonly cwd: string | null;
  readonly stdoutPath: string | null;
  readonly stderrPath: string | null;
  readonly jobName: string | null;
  /** The job script as submitted (`xcecli jobs submit job.sh`), run by the worker as the job layer; null: a command. */
  readonly script: string | null;
}
