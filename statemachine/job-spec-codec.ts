// The codec of a job's own values (JobSpec, inside a SubmitFact and a snapshot's Job): the writer,
// the reader, and JOB_SPEC_FIELDS (each field read alone, for a finished job's spec kept encoded).

import type { Reader, Writer } from '../wire/capnp-wire.js';
import { EMPTY, type FieldReaders } from './codec-shared.js';
import type { JobSpec } from './facts.js';
import {
  readEnvList,
  readLimits,
  readTextListOrEmpty,
  writeEnvList,
  writeLimits,
  writeTextList,
} from './shared-values-codec.js';

/** JobSpec: 1 data word, 11 pointers. */
export function writeJobSpec(w: Writer, ptr: number, s: JobSpec): void {
  const d = w.struct(ptr, 1, 11);
  const p = d + 8;
  w.text(p, s.resreq);
  if (s.tasks !== null) w.u32(d, s.tasks);
  writeEnvList(w, p + 8, s.env);
  writeLimits(w, p + 16, s.limits);
  w.text(p + 24, s.preExec);
  w.text(p + 32, s.postExec);
  writeTextList(w, p + 40, s.command);
  w.text(p + 48, s.cwd);
  w.text(p + 56, s.stdoutPath);
  w.text(p + 64, s.stderrPath);
  w.text(p + 72, s.jobName);
  w.text(p + 80, s.script);
}

/** The spec a null pointer stands for (a job with no values of its own). */
export const EMPTY_SPEC: JobSpec = Object.freeze({
  resreq: null,
  tasks: null,
  env: EMPTY,
  limits: Object.freeze({}),
  preExec: null,
  postExec: null,
  command: EMPTY,
  cwd: null,
  stdoutPath: null,
  stderrPath: null,
  jobName: null,
  script: null,
});

/**
 * Each JobSpec field read on its own from a JobSpec struct: readJobSpec reads them all; lazy-parts.ts
 * reads one when a finished job's spec, kept encoded, is asked for it.
 */
/** The pointer index of JobSpec.jobName (schema/facts.capnp): the name index hashes it in place (lazy-parts.ts). */
export const JOB_NAME_PTR = 9;

export const JOB_SPEC_FIELDS: FieldReaders<JobSpec> = {
  resreq: (r, s) => r.text(s, 0),
  tasks: (r, s) => {
    const tasks = r.u32(s, 0);
    return tasks === 0 ? null : tasks;
  },
  env: (r, s) => readEnvList(r, r.ptr(s, 1)),
  limits: (r, s) => readLimits(r, r.ptr(s, 2)),
  preExec: (r, s) => r.text(s, 3),
  postExec: (r, s) => r.text(s, 4),
  command: (r, s) => readTextListOrEmpty(r, r.ptr(s, 5)),
  cwd: (r, s) => r.text(s, 6),
  stdoutPath: (r, s) => r.text(s, 7),
  stderrPath: (r, s) => r.text(s, 8),
  jobName: (r, s) => r.text(s, JOB_NAME_PTR),
  script: (r, s) => r.text(s, 10),
};

export function readJobSpec(r: Reader, ptr: number): JobSpec {
  const s = ptr < 0 ? null : r.struct(ptr);
  if (s === null) return EMPTY_SPEC;
  const F = JOB_SPEC_FIELDS;
  return {
    resreq: F.resreq(r, s),
    tasks: F.tasks(r, s),
    env: F.env(r, s),
    limits: F.limits(r, s),
    preExec: F.preExec(r, s),
    postExec: F.postExec(r, s),
    command: F.command(r, s),
    cwd: F.cwd(r, s),
    stdoutPath: F.stdoutPath(r, s),
    stderrPath: F.stderrPath(r, s),
    jobName: F.jobName(r, s),
    script: F.script(r, s),
  };
}
