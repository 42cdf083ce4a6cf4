// The hand codec against capnp-es (the generated schema/facts.ts and schema/profile.ts), over random
// values (testing/facts-arbitrary.ts): (a) capnp-es reads the bytes the hand encoder writes for any
// fact with the same values, field by field (null Texts as null pointers); (b) the hand decoder reads
// the bytes capnp-es writes for the same fact back to that fact; (c) the profile hash's canonical
// bytes are what a schema-free canonicalization (below) makes of the profile written by capnp-es,
// and are canonical themselves; (d) a snapshot of any state, and of states built by applying random
// facts (and restored, so that finished jobs' parts are copied as bytes), reads in capnp-es as the
// state's values, and a snapshot written by capnp-es restores to the state. Every fact kind (a
// worker's host registration and a CleanFact included), every result kind (hostRegistered, cleaned
// with its count) and every snapshot field (the hosts' registrations, jobsCleaned) is covered.
// Fixed seeds and bounded runs: a failure names its seed and its shrunk counterexample.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';

import * as capnp from 'capnp-es';
import fc from 'fast-check';
import * as S from '../schema/facts.js';
import * as P from '../schema/profile.js';
import type { ServiceSpec } from '../model/config-types.js';
import { profileCanonicalBytes, profileHash } from '../model/profile-hash.js';
import type {
  CmpOp,
  EffectiveResReq,
  LaunchType,
  Limits,
  Origin,
  Profile,
  ResReq,
  SelectExpr,
  WithOrigin,
} from '../model/profile-types.js';
import { apply } from './apply.js';
import { buildDispatchRecord, type DispatchRecord, type HostTasks } from './dispatch-record.js';
import { decodeFact, DISPATCH_RECORD_FIELDS, encodeFact, JOB_SPEC_FIELDS } from './facts-codec.js';
import type { ApplyResult, ConfigFile, ControlAction, DispatchFact, Fact, JobSpec, JobStatusFact } from './facts.js';
import type { RegisteredHost } from './host-capacity.js';
import { liveMerge } from './jobs.js';
import { cleanCandidates } from './retention.js';
import type { Session } from './sessions.js';
import { restore, snapshot, SNAPSHOT_FORMAT_VERSION } from './snapshot.js';
import {
  emptyState,
  type ClosedHost,
  type ControllerState,
  type HostCredentialState,
  type Job,
  type JobArray,
  type JobEvent,
} from './state.js';
import { isElementId } from '../model/job-id.js';
import { arbFact } from '../testing/fact-arbitrary.js';
import { arbJobSpec, arbJobStatus } from '../testing/facts-arbitrary.js';
import { arbControllerState } from '../testing/state-arbitrary.js';
import { arbEnvVars, arbFullProfile } from '../testing/profile-arbitrary.js';
import { testClusterFiles } from '../testing/test-cluster.js';

const FACT_RUNS = 200;
const SNAPSHOT_RUNS = 30;
const PROFILE_RUNS = 100;

// ---- the schema's enums, as schema/facts.ts numbers them ----

const LAUNCH: Record<LaunchType, S.LaunchType> = {
  serial: S.LaunchType.SERIAL,
  openmpi: S.LaunchType.OPENMPI,
  mpich: S.LaunchType.MPICH,
};
const ORIGIN: Record<Origin, S.Origin> = { job: S.Origin.JOB, profile: S.Origin.PROFILE };
const CMP: Record<CmpOp, S.CmpOp> = {
  '>': S.CmpOp.GT,
  '>=': S.CmpOp.GE,
  '<': S.CmpOp.LT,
  '<=': S.CmpOp.LE,
  '==': S.CmpOp.EQ,
  '!=': S.CmpOp.NE,
};
const LIMIT_KIND: Record<keyof Limits, S.LimitKind> = {
  runtime_s: S.LimitKind.RUNTIME_S,
  memory_bytes: S.LimitKind.MEMORY_BYTES,
  cpu_s: S.LimitKind.CPU_S,
  tasks: S.LimitKind.TASKS,
};
const LIMIT_KEYS = Object.keys(LIMIT_KIND) as (keyof Limits)[];
const CONTROL: Record<ControlAction, S.ControlAction> = {
  kill: S.ControlAction.KILL,
  requeue: S.ControlAction.REQUEUE,
  restart: S.ControlAction.RESTART,
  hold: S.ControlAction.HOLD,
  release: S.ControlAction.RELEASE,
  suspend: S.ControlAction.SUSPEND,
  resume: S.ControlAction.RESUME,
  dependencyNever: S.ControlAction.DEPENDENCY_NEVER,
};
const CREDENTIAL = {
  revokeHost: S.CredentialAction.REVOKE_HOST,
  enrollHost: S.CredentialAction.ENROLL_HOST,
  revokeToken: S.CredentialAction.REVOKE_TOKEN,
};
const JOB_STATE: Record<Job['state'], S.JobState> = {
  PEND: S.JobState.PEND,
  RUN: S.JobState.RUN,
  DONE: S.JobState.DONE,
  EXIT: S.JobState.EXIT,
  SUSP: S.JobState.SUSP,
};
const RESULT_KIND: Record<Exclude<ApplyResult['kind'], 'batch'>, S.ResultKind> = {
  noop: S.ResultKind.NOOP,
  submitted: S.ResultKind.SUBMITTED,
  rejected: S.ResultKind.REJECTED,
  configApplied: S.ResultKind.CONFIG_APPLIED,
  dispatched: S.ResultKind.DISPATCHED,
  declined: S.ResultKind.DECLINED,
  statusApplied: S.ResultKind.STATUS_APPLIED,
  ignored: S.ResultKind.IGNORED,
  controlled: S.ResultKind.CONTROLLED,
  hostRegistered: S.ResultKind.HOST_REGISTERED,
  cleaned: S.ResultKind.CLEANED,
  modified: S.ResultKind.MODIFIED,
  hostControlled: S.ResultKind.HOST_CONTROLLED,
  credentialApplied: S.ResultKind.CREDENTIAL_APPLIED,
};

// ---- comparing a capnp-es reader with a value, field by field ----

function show(v: unknown): string {
  if (typeof v === 'string')
    return v.length > 60 ? `${JSON.stringify(v.slice(0, 40))}… (${v.length} chars)` : JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  return String(v);
}

/** SameValue (NaN equals NaN, -0 is not 0), with the path and both values on failure. */
function same(read: unknown, expected: unknown, path: string): void {
  assert.ok(Object.is(read, expected), `${path}: capnp-es reads ${show(read)}, the value is ${show(expected)}`);
}

/** The pointer index of a Text field as the generated getter reads it (the check does not trust the hand layout). */
const textPtrCache = new Map<object, Map<string, number>>();
function textPtr(s: capnp.Struct, field: string): number {
  const proto = Object.getPrototypeOf(s) as object;
  let byField = textPtrCache.get(proto);
  if (byField === undefined) textPtrCache.set(proto, (byField = new Map()));
  let i = byField.get(field);
  if (i === undefined) {
    const getter = Object.getOwnPropertyDescriptor(proto, field)?.get;
    const m = getter === undefined ? null : /getText\((\d+),/.exec(getter.toString());
    if (m === null) throw new Error(`${s.constructor.name}.${field} is not a Text field`);
    byField.set(field, (i = Number(m[1])));
  }
  return i;
}

/** A Text field that must equal `expected` (null pointer read as the empty text). */
function text(s: capnp.Struct, field: string, expected: string, path: string): void {
  same(Reflect.get(s, field), expected, `${path}.${field}`);
}

/** A nullable Text: null exactly when the pointer is null, else the text (the empty one included). */
function optText(s: capnp.Struct, field: string, expected: string | null, path: string): void {
  const isNull = capnp.utils.isNull(capnp.utils.getPointer(textPtr(s, field), s));
  assert.equal(
    isNull,
    expected === null,
    `${path}.${field}: the pointer is ${isNull ? 'null' : 'set'}, the value is ${show(expected)}`,
  );
  if (expected !== null) text(s, field, expected, path);
}

function list<T, E>(
  l: capnp.List<T>,
  expected: readonly E[],
  path: string,
  each: (r: T, e: E, p: string) => void,
): void {
  same(l.length, expected.length, `${path}.length`);
  for (let i = 0; i < expected.length; i++) each(l.get(i), expected[i]!, `${path}[${i}]`);
}

function texts(l: capnp.List<string>, expected: readonly string[], path: string): void {
  list(l, expected, path, (r, e, p) => same(r, e, p));
}

function checkConfigFiles(l: capnp.List<S.ConfigFile>, files: readonly ConfigFile[], path: string): void {
  list(l, files, path, (r, e, p) => {
    text(r, 'path', e.path, p);
    text(r, 'text', e.text, p);
  });
}

function checkHosts(l: capnp.List<S.HostTasks>, hosts: readonly HostTasks[], path: string): void {
  list(l, hosts, path, (r, e, p) => {
    text(r, 'host', e.host, p);
    same(r.tasks, e.tasks, `${p}.tasks`);
  });
}

function checkRegisteredHost(s: S.RegisteredHost, h: RegisteredHost, path: string): void {
  text(s, 'host', h.host, path);
  same(s.slots, h.slots, `${path}.slots`);
  same(s.memBytes, BigInt(h.memBytes), `${path}.memBytes`);
  same(s._hasBooleans(), h.booleans !== null, `${path}.booleans is set`);
  if (h.booleans !== null) texts(s.booleans, h.booleans, `${path}.booleans`);
  list(s.numerics, h.numerics, `${path}.numerics`, (x, e, p) => {
    text(x, 'name', e.name, p);
    same(x.value, e.value, `${p}.value`);
  });
  same(s._hasStrings(), h.strings !== null, `${path}.strings is set`);
  if (h.strings !== null)
    list(s.strings, h.strings, `${path}.strings`, (x, e, p) => {
      text(x, 'name', e.name, p);
      text(x, 'value', e.value, p);
    });
  same(s.timeMs, BigInt(h.timeMs), `${path}.timeMs`);
}

function checkSpec(s: S.JobSpec, spec: JobSpec, path: string): void {
  optText(s, 'resreq', spec.resreq, path);
  same(s.tasks, spec.tasks ?? 0, `${path}.tasks`);
  list(s.env, spec.env, `${path}.env`, (r, e, p) => {
    text(r, 'name', e.name, p);
    text(r, 'value', e.value, p);
  });
  const l = spec.limits;
  same(s.limits.runtimeS, BigInt(l.runtime_s ?? 0), `${path}.limits.runtimeS`);
  same(s.limits.memoryBytes, BigInt(l.memory_bytes ?? 0), `${path}.limits.memoryBytes`);
  same(s.limits.cpuS, BigInt(l.cpu_s ?? 0), `${path}.limits.cpuS`);
  same(s.limits.tasks, l.tasks ?? 0, `${path}.limits.tasks`);
  optText(s, 'preExec', spec.preExec, path);
  optText(s, 'postExec', spec.postExec, path);
  texts(s.command, spec.command, `${path}.command`);
  optText(s, 'cwd', spec.cwd, path);
  optText(s, 'stdoutPath', spec.stdoutPath, path);
  optText(s, 'stderrPath', spec.stderrPath, path);
  optText(s, 'jobName', spec.jobName, path);
  optText(s, 'script', spec.script, path);
}

function checkSelect(s: S.SelectExpr, e: SelectExpr, path: string): void {
  const which = { bool: S.SelectExpr.BOOL, cmp: S.SelectExpr.CMP, not: S.SelectExpr.NOT, and: S.SelectExpr.AND };
  same(s.which(), e.kind === 'or' ? S.SelectExpr.OR : which[e.kind], `${path}.which`);
  switch (e.kind) {
    case 'bool':
      same(s.bool, e.name, `${path}.bool`);
      return;
    case 'cmp': {
      const c = s.cmp;
      text(c, 'name', e.name, `${path}.cmp`);
      same(c.op, CMP[e.op], `${path}.cmp.op`);
      same(c.isString, typeof e.value === 'string', `${path}.cmp.isString`);
      if (typeof e.value === 'string') optText(c, 'string', e.value, `${path}.cmp`);
      else same(c.number, e.value, `${path}.cmp.number`);
      return;
    }
    case 'not':
      checkSelect(s.not, e.expr, `${path}.not`);
      return;
    case 'and':
      list(s.and, e.args, `${path}.and`, checkSelect);
      return;
    case 'or':
      list(s.or, e.args, `${path}.or`, checkSelect);
      return;
  }
}

function checkResReq(s: S.EffectiveResReq, r: EffectiveResReq, path: string): void {
  list(s.select, r.select, `${path}.select`, (t, e, p) => {
    same(t.origin, ORIGIN[e.origin], `${p}.origin`);
    checkSelect(t.expr, e.value, `${p}.expr`);
  });
  list(s.rusage, r.rusage, `${path}.rusage`, (t, e, p) => {
    text(t, 'name', e.value.name, p);
    same(t.value, e.value.value, `${p}.value`);
    same(t.hasDuration, e.value.duration_s !== undefined, `${p}.hasDuration`);
    same(t.durationS, e.value.duration_s ?? 0, `${p}.durationS`);
    same(t.origin, ORIGIN[e.origin], `${p}.origin`);
  });
  same(s._hasSpan(), r.span !== null, `${path}.span is set`);
  if (r.span !== null) {
    same(s.span.ptile, r.span.value.ptile ?? 0, `${path}.span.ptile`);
    same(s.span.hosts, r.span.value.hosts ?? 0, `${path}.span.hosts`);
    same(s.span.origin, ORIGIN[r.span.origin], `${path}.span.origin`);
  }
  same(s._hasSame(), r.same !== null, `${path}.same is set`);
  if (r.same !== null) {
    texts(s.same.names, r.same.value, `${path}.same.names`);
    same(s.same.origin, ORIGIN[r.same.origin], `${path}.same.origin`);
  }
  same(s._hasOrder(), r.order !== null, `${path}.order is set`);
  if (r.order !== null) {
    list(s.order.keys, r.order.value, `${path}.order.keys`, (k, e, p) => {
      text(k, 'name', e.name, p);
      same(k.descending, e.descending, `${p}.descending`);
    });
    same(s.order.origin, ORIGIN[r.order.origin], `${path}.order.origin`);
  }
  same(s._hasCompound(), r.compound !== undefined, `${path}.compound is set`);
  if (r.compound !== undefined) {
    list(s.compound.parts, r.compound.parts, `${path}.compound.parts`, (part, e, p) =>
      checkResReq(part, asJobTerms(e), p),
    );
    text(s.compound, 'operator', r.compound.operator, `${path}.compound`);
  }
}

/** A compound requirement's part as the schema holds it: an EffectiveResReq whose every origin is `job`. */
function asJobTerms(r: ResReq): EffectiveResReq {
  const job = <T>(value: T): WithOrigin<T> => ({ value, origin: 'job' });
  return {
    select: r.select.map(job),
    rusage: r.rusage.map(job),
    span: r.span === null ? null : job(r.span),
    same: r.same === null ? null : job(r.same),
    order: r.order === null ? null : job(r.order),
  };
}

function checkRecord(s: S.DispatchRecord, r: DispatchRecord, path: string): void {
  optText(s, 'profile', r.profile, path);
  optText(s, 'profileHash', r.profileHash, path);
  same(s.mode, S.ExecMode.DIRECT, `${path}.mode`);
  same(s.launchType, LAUNCH[r.launchType], `${path}.launchType`);
  checkResReq(s.resreq, r.resreq, `${path}.resreq`);
  same(s.tasks, r.tasks, `${path}.tasks`);
  checkHosts(s.hosts, r.hosts, `${path}.hosts`);
  list(s.env, r.env, `${path}.env`, (t, e, p) => {
    text(t, 'name', e.value.name, p);
    text(t, 'value', e.value.value, p);
    same(t.origin, ORIGIN[e.origin], `${p}.origin`);
  });
  const set = LIMIT_KEYS.filter((k) => r.limits[k] !== undefined);
  same(s.limits.length, set.length, `${path}.limits.length`);
  for (let i = 0; i < s.limits.length; i++) {
    const t = s.limits.get(i);
    const key = LIMIT_KEYS.find((k) => LIMIT_KIND[k] === t.kind);
    assert.ok(key !== undefined && r.limits[key] !== undefined, `${path}.limits[${i}]: kind ${t.kind} is not set`);
    assert.ok(
      s.limits.map((x) => x.kind).filter((k) => k === t.kind).length === 1,
      `${path}.limits: kind ${t.kind} twice`,
    );
    same(t.value, r.limits[key]!.value, `${path}.limits.${key}.value`);
    same(t.origin, ORIGIN[r.limits[key]!.origin], `${path}.limits.${key}.origin`);
  }
  optText(s, 'profilePreExec', r.profilePreExec, path);
  optText(s, 'profilePostExec', r.profilePostExec, path);
  optText(s, 'jobPreExec', r.jobPreExec, path);
  optText(s, 'jobPostExec', r.jobPostExec, path);
}

function checkDispatch(x: S.DispatchFact, b: DispatchFact, path: string): void {
  same(x.jobId, BigInt(b.jobId), `${path}.jobId`);
  same(x.runNumber, b.runNumber, `${path}.runNumber`);
  checkHosts(x.placement, b.placement, `${path}.placement`);
  same(x._hasRecord(), b.record !== null, `${path}.record is set`);
  if (b.record !== null) checkRecord(x.record, b.record, `${path}.record`);
  optText(x, 'schedulerHash', b.schedulerHash, path);
}

function checkStatus(x: S.JobStatusFact, b: JobStatusFact, path: string): void {
  same(x.jobId, BigInt(b.jobId), `${path}.jobId`);
  same(x.runNumber, b.runNumber, `${path}.runNumber`);
  const st = b.status;
  if (st.type === 'started') {
    same(x.which(), S.JobStatusFact.STARTED, `${path}.which`);
    same(x.started.pid, st.pid, `${path}.started.pid`);
    same(x.started.timeMs, BigInt(st.timeMs), `${path}.started.timeMs`);
  } else if (st.type === 'finished') {
    same(x.which(), S.JobStatusFact.FINISHED, `${path}.which`);
    same(x.finished.exitCode, st.exitCode, `${path}.finished.exitCode`);
    optText(x.finished, 'signal', st.signal, `${path}.finished`);
    optText(x.finished, 'reason', st.reason, `${path}.finished`);
    same(x.finished.timeMs, BigInt(st.timeMs), `${path}.finished.timeMs`);
  } else if (st.type === 'launchError') {
    same(x.which(), S.JobStatusFact.LAUNCH_ERROR, `${path}.which`);
    text(x.launchError, 'reason', st.reason, `${path}.launchError`);
  } else if (st.type === 'suspended') {
    same(x.which(), S.JobStatusFact.SUSPENDED, `${path}.which`);
    same(x.suspended.timeMs, BigInt(st.timeMs), `${path}.suspended.timeMs`);
  } else {
    same(x.which(), S.JobStatusFact.RESUMED, `${path}.which`);
    same(x.resumed.timeMs, BigInt(st.timeMs), `${path}.resumed.timeMs`);
  }
}

function checkFact(s: S.Fact, f: Fact): void {
  optText(s, 'clientId', f.clientId, 'fact');
  same(s.sequence, BigInt(f.sequence), 'fact.sequence');
  same(s.timeMs, BigInt(f.timeMs), 'fact.timeMs');
  const b = f.body;
  switch (b.kind) {
    case 'noop':
      same(s.which(), S.Fact.NOOP, 'fact.which');
      return;
    case 'config':
      same(s.which(), S.Fact.CONFIG, 'fact.which');
      checkConfigFiles(s.config.files, b.files, 'config.files');
      optText(s.config, 'user', b.user, 'config');
      return;
    case 'submit': {
      same(s.which(), S.Fact.SUBMIT, 'fact.which');
      const x = s.submit;
      text(x, 'user', b.user, 'submit');
      text(x, 'queue', b.queue, 'submit');
      checkSpec(x.spec, b.spec, 'submit.spec');
      optText(x, 'profile', b.profile, 'submit');
      optText(x, 'profileRequested', b.profileRequested, 'submit');
      optText(x, 'dependency', b.dependency, 'submit');
      same(x.dependencyKill, b.dependencyKill, 'submit.dependencyKill');
      return;
    }
    case 'dispatch':
      same(s.which(), S.Fact.DISPATCH, 'fact.which');
      checkDispatch(s.dispatch, b, 'dispatch');
      return;
    case 'status':
      same(s.which(), S.Fact.JOB_STATUS, 'fact.which');
      checkStatus(s.jobStatus, b, 'jobStatus');
      return;
    case 'batch':
      same(s.which(), S.Fact.BATCH, 'fact.which');
      same(s.batch.dispatches.length, b.dispatches.length, 'batch.dispatches.length');
      b.dispatches.forEach((d, i) => checkDispatch(s.batch.dispatches.get(i), d, `batch.dispatches[${i}]`));
      same(s.batch.statuses.length, b.statuses.length, 'batch.statuses.length');
      b.statuses.forEach((st, i) => checkStatus(s.batch.statuses.get(i), st, `batch.statuses[${i}]`));
      return;
    case 'control': {
      same(s.which(), S.Fact.JOB_CONTROL, 'fact.which');
      const x = s.jobControl;
      same(x.jobId, BigInt(b.jobId), 'jobControl.jobId');
      same(x.action, CONTROL[b.action], 'jobControl.action');
      text(x, 'user', b.user, 'jobControl');
      return;
    }
    case 'host':
      same(s.which(), S.Fact.HOST_REGISTERED, 'fact.which');
      checkRegisteredHost(s.hostRegistered, b.registration, 'hostRegistered');
      return;
    case 'clean':
      same(s.which(), S.Fact.CLEAN, 'fact.which');
      list(s.clean.jobIds, b.jobIds, 'clean.jobIds', (r, e, p) => same(r, BigInt(e), p));
      return;
    case 'modify': {
      same(s.which(), S.Fact.MODIFY, 'fact.which');
      const x = s.modify;
      same(x.jobId, BigInt(b.jobId), 'modify.jobId');
      text(x, 'user', b.user, 'modify');
      text(x, 'queue', b.queue, 'modify');
      optText(x, 'profile', b.profile, 'modify');
      optText(x, 'profileRequested', b.profileRequested, 'modify');
      checkSpec(x.spec, b.spec, 'modify.spec');
      return;
    }
    case 'hostControl': {
      same(s.which(), S.Fact.HOST_CONTROL, 'fact.which');
      const x = s.hostControl;
      text(x, 'host', b.host, 'hostControl');
      same(x.close, b.close, 'hostControl.close');
      optText(x, 'reason', b.reason, 'hostControl');
      text(x, 'user', b.user, 'hostControl');
      return;
    }
    case 'credential': {
      same(s.which(), S.Fact.CREDENTIAL, 'fact.which');
      const x = s.credential;
      same(x.action, CREDENTIAL[b.action], 'credential.action');
      same(x.untilMs, BigInt(b.untilMs), 'credential.untilMs');
      text(x, 'name', b.name, 'credential');
      text(x, 'user', b.user, 'credential');
      return;
    }
  }
}

// ---- writing a value with capnp-es ----

/** How the capnp-es writer lays out an empty list: a null pointer, or a list of no elements. */
interface EsOptions {
  readonly emptyListsSet: boolean;
}

function initList<T>(items: readonly unknown[], o: EsOptions, init: (n: number) => T): T | null {
  return items.length > 0 || o.emptyListsSet ? init(items.length) : null;
}

function writeSpecEs(s: S.JobSpec, spec: JobSpec, o: EsOptions): void {
  if (spec.resreq !== null) s.resreq = spec.resreq;
  if (spec.tasks !== null) s.tasks = spec.tasks;
  const env = initList(spec.env, o, (n) => s._initEnv(n));
  spec.env.forEach((e, i) => {
    env!.get(i).name = e.name;
    env!.get(i).value = e.value;
  });
  const l = spec.limits;
  if (LIMIT_KEYS.some((k) => l[k] !== undefined)) {
    const x = s._initLimits();
    if (l.runtime_s !== undefined) x.runtimeS = BigInt(l.runtime_s);
    if (l.memory_bytes !== undefined) x.memoryBytes = BigInt(l.memory_bytes);
    if (l.cpu_s !== undefined) x.cpuS = BigInt(l.cpu_s);
    if (l.tasks !== undefined) x.tasks = l.tasks;
  }
  if (spec.preExec !== null) s.preExec = spec.preExec;
  if (spec.postExec !== null) s.postExec = spec.postExec;
  const cmd = initList(spec.command, o, (n) => s._initCommand(n));
  spec.command.forEach((c, i) => cmd!.set(i, c));
  if (spec.cwd !== null) s.cwd = spec.cwd;
  if (spec.stdoutPath !== null) s.stdoutPath = spec.stdoutPath;
  if (spec.stderrPath !== null) s.stderrPath = spec.stderrPath;
  if (spec.jobName !== null) s.jobName = spec.jobName;
  if (spec.script !== null) s.script = spec.script;
}

function writeHostsEs(hosts: readonly HostTasks[], o: EsOptions, init: (n: number) => capnp.List<S.HostTasks>): void {
  const l = initList(hosts, o, init);
  hosts.forEach((h, i) => {
    l!.get(i).host = h.host;
    l!.get(i).tasks = h.tasks;
  });
}

function writeSelectEs(s: S.SelectExpr, e: SelectExpr, o: EsOptions): void {
  switch (e.kind) {
    case 'bool':
      s.bool = e.name;
      return;
    case 'cmp': {
      const c = s._initCmp();
      c.name = e.name;
      c.op = CMP[e.op];
      if (typeof e.value === 'string') {
        c.isString = true;
        c.string = e.value;
      } else c.number = e.value;
      return;
    }
    case 'not':
      writeSelectEs(s._initNot(), e.expr, o);
      return;
    case 'and':
    case 'or': {
      const l = e.kind === 'and' ? s._initAnd(e.args.length) : s._initOr(e.args.length);
      e.args.forEach((a, i) => writeSelectEs(l.get(i), a, o));
      return;
    }
  }
}

function writeResReqEs(s: S.EffectiveResReq, r: EffectiveResReq, o: EsOptions): void {
  const sel = initList(r.select, o, (n) => s._initSelect(n));
  r.select.forEach((t, i) => {
    sel!.get(i).origin = ORIGIN[t.origin];
    writeSelectEs(sel!.get(i)._initExpr(), t.value, o);
  });
  const rus = initList(r.rusage, o, (n) => s._initRusage(n));
  r.rusage.forEach((t, i) => {
    const x = rus!.get(i);
    x.name = t.value.name;
    x.value = t.value.value;
    if (t.value.duration_s !== undefined) {
      x.hasDuration = true;
      x.durationS = t.value.duration_s;
    }
    x.origin = ORIGIN[t.origin];
  });
  if (r.span !== null) {
    const x = s._initSpan();
    if (r.span.value.ptile !== undefined) x.ptile = r.span.value.ptile;
    if (r.span.value.hosts !== undefined) x.hosts = r.span.value.hosts;
    x.origin = ORIGIN[r.span.origin];
  }
  if (r.same !== null) {
    const x = s._initSame();
    x.origin = ORIGIN[r.same.origin];
    const names = initList(r.same.value, o, (n) => x._initNames(n));
    r.same.value.forEach((t, i) => names!.set(i, t));
  }
  if (r.order !== null) {
    const x = s._initOrder();
    x.origin = ORIGIN[r.order.origin];
    const keys = initList(r.order.value, o, (n) => x._initKeys(n));
    r.order.value.forEach((k, i) => {
      keys!.get(i).name = k.name;
      keys!.get(i).descending = k.descending;
    });
  }
  if (r.compound !== undefined) {
    const x = s._initCompound();
    const parts = initList(r.compound.parts, o, (n) => x._initParts(n));
    r.compound.parts.forEach((p, i) => writeResReqEs(parts!.get(i), asJobTerms(p), o));
    x.operator = r.compound.operator;
  }
}

function writeRecordEs(s: S.DispatchRecord, r: DispatchRecord, o: EsOptions): void {
  if (r.profile !== null) s.profile = r.profile;
  if (r.profileHash !== null) s.profileHash = r.profileHash;
  s.mode = S.ExecMode.DIRECT;
  s.launchType = LAUNCH[r.launchType];
  writeResReqEs(s._initResreq(), r.resreq, o);
  s.tasks = r.tasks;
  writeHostsEs(r.hosts, o, (n) => s._initHosts(n));
  const env = initList(r.env, o, (n) => s._initEnv(n));
  r.env.forEach((e, i) => {
    env!.get(i).name = e.value.name;
    env!.get(i).value = e.value.value;
    env!.get(i).origin = ORIGIN[e.origin];
  });
  const set = LIMIT_KEYS.filter((k) => r.limits[k] !== undefined).reverse(); // any order: the kind says which
  const limits = initList(set, o, (n) => s._initLimits(n));
  set.forEach((k, i) => {
    limits!.get(i).kind = LIMIT_KIND[k];
    limits!.get(i).value = r.limits[k]!.value;
    limits!.get(i).origin = ORIGIN[r.limits[k]!.origin];
  });
  if (r.profilePreExec !== null) s.profilePreExec = r.profilePreExec;
  if (r.profilePostExec !== null) s.profilePostExec = r.profilePostExec;
  if (r.jobPreExec !== null) s.jobPreExec = r.jobPreExec;
  if (r.jobPostExec !== null) s.jobPostExec = r.jobPostExec;
}

function writeRegisteredHostEs(s: S.RegisteredHost, h: RegisteredHost, o: EsOptions): void {
  s.host = h.host;
  s.slots = h.slots;
  s.memBytes = BigInt(h.memBytes);
  if (h.booleans !== null) {
    const l = s._initBooleans(h.booleans.length); // null means "states none": set even when empty
    h.booleans.forEach((b, i) => l.set(i, b));
  }
  const nl = initList(h.numerics, o, (n) => s._initNumerics(n));
  h.numerics.forEach((v, i) => {
    nl!.get(i).name = v.name;
    nl!.get(i).value = v.value;
  });
  if (h.strings !== null) {
    const l = s._initStrings(h.strings.length);
    h.strings.forEach((v, i) => {
      l.get(i).name = v.name;
      l.get(i).value = v.value;
    });
  }
  s.timeMs = BigInt(h.timeMs);
}

function writeConfigFilesEs(files: readonly ConfigFile[], l: capnp.List<S.ConfigFile>): void {
  files.forEach((f, i) => {
    l.get(i).path = f.path;
    l.get(i).text = f.text;
  });
}

function writeDispatchEs(x: S.DispatchFact, b: DispatchFact, o: EsOptions): void {
  x.jobId = BigInt(b.jobId);
  x.runNumber = b.runNumber;
  writeHostsEs(b.placement, o, (n) => x._initPlacement(n));
  if (b.record !== null) writeRecordEs(x._initRecord(), b.record, o);
  if (b.schedulerHash !== null) x.schedulerHash = b.schedulerHash;
}

function writeStatusEs(x: S.JobStatusFact, b: JobStatusFact): void {
  x.jobId = BigInt(b.jobId);
  x.runNumber = b.runNumber;
  const st = b.status;
  if (st.type === 'started') {
    const y = x._initStarted();
    y.pid = st.pid;
    y.timeMs = BigInt(st.timeMs);
  } else if (st.type === 'finished') {
    const y = x._initFinished();
    y.exitCode = st.exitCode;
    if (st.signal !== null) y.signal = st.signal;
    if (st.reason !== null) y.reason = st.reason;
    y.timeMs = BigInt(st.timeMs);
  } else if (st.type === 'launchError') x._initLaunchError().reason = st.reason;
  else if (st.type === 'suspended') x._initSuspended().timeMs = BigInt(st.timeMs);
  else x._initResumed().timeMs = BigInt(st.timeMs);
}

function writeFactEs(f: Fact, o: EsOptions): Uint8Array {
  const msg = new capnp.Message();
  const s = msg.initRoot(S.Fact);
  if (f.clientId !== null) s.clientId = f.clientId;
  s.sequence = BigInt(f.sequence);
  s.timeMs = BigInt(f.timeMs);
  const b = f.body;
  switch (b.kind) {
    case 'noop':
      s.noop = true;
      break;
    case 'config': {
      const x = s._initConfig();
      writeConfigFilesEs(b.files, x._initFiles(b.files.length));
      if (b.user !== null) x.user = b.user;
      break;
    }
    case 'submit': {
      const x = s._initSubmit();
      x.user = b.user;
      x.queue = b.queue;
      writeSpecEs(x._initSpec(), b.spec, o);
      if (b.profile !== null) x.profile = b.profile;
      if (b.profileRequested !== null) x.profileRequested = b.profileRequested;
      if (b.dependency !== null) x.dependency = b.dependency;
      x.dependencyKill = b.dependencyKill;
      break;
    }
    case 'dispatch':
      writeDispatchEs(s._initDispatch(), b, o);
      break;
    case 'status':
      writeStatusEs(s._initJobStatus(), b);
      break;
    case 'batch': {
      const x = s._initBatch();
      const dl = initList(b.dispatches, o, (n) => x._initDispatches(n));
      b.dispatches.forEach((d, i) => writeDispatchEs(dl!.get(i), d, o));
      const sl = initList(b.statuses, o, (n) => x._initStatuses(n));
      b.statuses.forEach((st, i) => writeStatusEs(sl!.get(i), st));
      break;
    }
    case 'control': {
      const x = s._initJobControl();
      x.jobId = BigInt(b.jobId);
      x.action = CONTROL[b.action];
      x.user = b.user;
      break;
    }
    case 'host':
      writeRegisteredHostEs(s._initHostRegistered(), b.registration, o);
      break;
    case 'clean': {
      const x = s._initClean();
      const l = initList(b.jobIds, o, (n) => x._initJobIds(n));
      b.jobIds.forEach((id, i) => l!.set(i, BigInt(id)));
      break;
    }
    case 'modify': {
      const x = s._initModify();
      x.jobId = BigInt(b.jobId);
      x.user = b.user;
      x.queue = b.queue;
      if (b.profile !== null) x.profile = b.profile;
      if (b.profileRequested !== null) x.profileRequested = b.profileRequested;
      writeSpecEs(x._initSpec(), b.spec, o);
      break;
    }
    case 'hostControl': {
      const x = s._initHostControl();
      x.host = b.host;
      x.close = b.close;
      if (b.reason !== null) x.reason = b.reason;
      x.user = b.user;
      break;
    }
    case 'credential': {
      const x = s._initCredential();
      x.action = CREDENTIAL[b.action];
      x.untilMs = BigInt(b.untilMs);
      x.name = b.name;
      x.user = b.user;
      break;
    }
  }
  return new Uint8Array(msg.toArrayBuffer());
}

// ---- (a), (b): facts ----

/** Which fact kinds (and status kinds) a run drew, so that a property is not vacuous. */
function kindOf(f: Fact): string {
  return f.body.kind === 'status' ? `status.${f.body.status.type}` : f.body.kind;
}
const ALL_KINDS = [
  'noop',
  'config',
  'submit',
  'dispatch',
  'status.started',
  'status.finished',
  'status.launchError',
  'status.suspended',
  'status.resumed',
  'control',
  'host',
  'clean',
  'modify',
  'hostControl',
  'credential',
  'batch',
];

test('(a) capnp-es reads the bytes the hand encoder writes for any fact as the same values, field by field', () => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(arbFact, (f) => {
      seen.add(kindOf(f));
      checkFact(new capnp.Message(encodeFact(f), false).getRoot(S.Fact), f);
    }),
    { seed: 1804, numRuns: FACT_RUNS },
  );
  assert.deepEqual([...seen].sort(), [...ALL_KINDS].sort(), 'every fact kind was drawn');
});

test('(b) the hand decoder reads the bytes capnp-es writes for any fact back to that fact', () => {
  fc.assert(
    fc.property(arbFact, fc.boolean(), (f, emptyListsSet) => {
      const bytes = writeFactEs(f, { emptyListsSet });
      assert.deepStrictEqual(decodeFact(bytes), f);
      // and the hand encoder's bytes for the decoded fact read in capnp-es the same again
      checkFact(new capnp.Message(encodeFact(decodeFact(bytes)), false).getRoot(S.Fact), f);
    }),
    { seed: 1805, numRuns: FACT_RUNS },
  );
});

// ---- (c): the profile hash's canonical bytes ----

/**
 * The canonical form (encoding spec, "Canonicalization") of a single-segment message given as its
 * segment, schema-free: objects in pre-order, each struct's data and pointer sections cut after their
 * last non-zero word, a struct list's elements at the largest cut size, zero-sized structs as offset -1.
 */
function canonicalize(segment: Uint8Array): Uint8Array {
  const src = new DataView(segment.buffer, segment.byteOffset, segment.byteLength);
  let out = new Uint8Array(1024);
  let words = 0;
  const alloc = (n: number): number => {
    const at = words;
    words += n;
    if (words * 8 > out.length) {
      const next = new Uint8Array(Math.max(out.length * 2, words * 8));
      next.set(out);
      out = next;
    }
    return at;
  };
  const dv = (): DataView => new DataView(out.buffer);
  const pointer = (at: number, lo: number, hi: number): void => {
    dv().setUint32(at * 8, lo >>> 0, true);
    dv().setUint32(at * 8 + 4, hi >>> 0, true);
  };
  const word = (at: number): bigint => src.getBigUint64(at * 8, true);
  const cutStruct = (start: number, dw: number, pc: number): [number, number] => {
    let d = dw;
    while (d > 0 && word(start + d - 1) === 0n) d--;
    let p = pc;
    while (p > 0 && word(start + dw + p - 1) === 0n) p--;
    return [d, p];
  };
  const copyPointer = (at: number, to: number): void => {
    const lo = src.getUint32(at * 8, true);
    const hi = src.getUint32(at * 8 + 4, true);
    if (lo === 0 && hi === 0) return;
    const target = at + 1 + ((lo | 0) >> 2);
    if ((lo & 3) === 0) {
      const dw = hi & 0xffff;
      const pc = hi >>> 16;
      const [d, p] = cutStruct(target, dw, pc);
      if (d === 0 && p === 0) return pointer(to, 0xfffffffc, 0);
      const dst = alloc(d + p);
      pointer(to, (dst - to - 1) << 2, d | (p << 16));
      out.set(segment.subarray(target * 8, (target + d) * 8), dst * 8);
      for (let i = 0; i < p; i++) copyPointer(target + dw + i, dst + d + i);
      return;
    }
    if ((lo & 3) !== 1) throw new Error(`pointer kind ${lo & 3} at word ${at}: only single-segment messages here`);
    const size = hi & 7;
    const count = hi >>> 3;
    if (size >= 1 && size <= 5) {
      const bits = [0, 1, 8, 16, 32, 64][size]!;
      const bytes = Math.ceil((count * bits) / 8);
      const dst = alloc(Math.ceil(bytes / 8));
      pointer(to, ((dst - to - 1) << 2) | 1, hi);
      out.set(segment.subarray(target * 8, target * 8 + bytes), dst * 8);
      if (bits === 1 && count % 8 !== 0) out[dst * 8 + bytes - 1]! &= (1 << (count % 8)) - 1;
      return;
    }
    if (size === 6) {
      const dst = alloc(count);
      pointer(to, ((dst - to - 1) << 2) | 1, hi);
      for (let i = 0; i < count; i++) copyPointer(target + i, dst + i);
      return;
    }
    if (size !== 7) throw new Error(`a List(Void) at word ${at}: not in these schemas`);
    const n = src.getUint32(target * 8, true) >>> 2;
    const dw = src.getUint16(target * 8 + 4, true);
    const pc = src.getUint16(target * 8 + 6, true);
    let d = 0;
    let p = 0;
    for (let i = 0; i < n; i++) {
      const [di, pi] = cutStruct(target + 1 + i * (dw + pc), dw, pc);
      d = Math.max(d, di);
      p = Math.max(p, pi);
    }
    const dst = alloc(1 + n * (d + p));
    pointer(to, ((dst - to - 1) << 2) | 1, 7 | ((n * (d + p)) << 3));
    pointer(dst, n << 2, d | (p << 16));
    for (let i = 0; i < n; i++) {
      const from = target + 1 + i * (dw + pc);
      out.set(segment.subarray(from * 8, (from + d) * 8), (dst + 1 + i * (d + p)) * 8);
    }
    for (let i = 0; i < n; i++) {
      const from = target + 1 + i * (dw + pc);
      for (let j = 0; j < p; j++) copyPointer(from + dw + j, dst + 1 + i * (d + p) + d + j);
    }
  };
  alloc(1);
  copyPointer(0, 0);
  return out.slice(0, words * 8);
}

/** The one segment of a framed single-segment message. */
function onlySegment(message: Uint8Array): Uint8Array {
  const v = new DataView(message.buffer, message.byteOffset, message.byteLength);
  assert.equal(v.getUint32(0, true), 0, 'a single-segment message');
  return message.subarray(8, 8 + v.getUint32(4, true) * 8);
}

/** capnp-es Text setter with the hash's normalisation: empty and absent are both unset. */
function setText(s: capnp.Struct, field: string, v: string | null): void {
  if (v !== null && v !== '') Reflect.set(s, field, v);
}

function writeProfileSelectEs(s: P.SelectExpr, e: SelectExpr): void {
  switch (e.kind) {
    case 'bool':
      setText(s, 'bool', e.name); // the union tag `bool` is 0: nothing more to set
      return;
    case 'cmp': {
      const c = s._initCmp();
      setText(c, 'name', e.name);
      c.op = CMP[e.op];
      if (typeof e.value === 'string')
        c.value.string = e.value; // an empty string value stays set
      else c.value.number = Object.is(e.value, -0) ? 0 : e.value;
      return;
    }
    case 'not':
      writeProfileSelectEs(s._initNot(), e.expr);
      return;
    case 'and':
    case 'or': {
      if (e.args.length === 0) {
        // An empty list is unset: only the union tag (capnp-es sets it only with the list).
        capnp.utils.setUint16(0, e.kind === 'and' ? P.SelectExpr.AND : P.SelectExpr.OR, s);
        return;
      }
      const l = e.kind === 'and' ? s._initAnd(e.args.length) : s._initOr(e.args.length);
      e.args.forEach((a, i) => writeProfileSelectEs(l.get(i), a));
      return;
    }
  }
}

function writeProfileResReqEs(s: P.ResReq, r: ResReq): void {
  if (r.select.length > 0) {
    const l = s._initSelect(r.select.length);
    r.select.forEach((e, i) => writeProfileSelectEs(l.get(i), e));
  }
  if (r.rusage.length > 0) {
    const l = s._initRusage(r.rusage.length);
    r.rusage.forEach((u, i) => {
      const x = l.get(i);
      setText(x, 'name', u.name);
      x.value = Object.is(u.value, -0) ? 0 : u.value;
      if (u.duration_s !== undefined) {
        x.hasDuration = true;
        x.durationS = BigInt(u.duration_s);
      }
    });
  }
  if (r.span !== null) {
    const x = s._initSpan();
    x.ptile = r.span.ptile ?? 0;
    x.hosts = r.span.hosts ?? 0;
  }
  if (r.same !== null && r.same.length > 0) {
    const l = s._initSame(r.same.length);
    r.same.forEach((t, i) => {
      if (t !== '') l.set(i, t);
    });
  }
  if (r.order !== null && r.order.length > 0) {
    const l = s._initOrder(r.order.length);
    r.order.forEach((k, i) => {
      setText(l.get(i), 'name', k.name);
      l.get(i).descending = k.descending;
    });
  }
}

function writeProbeEs(x: P.Service_Probe, p: NonNullable<ServiceSpec['liveness']>): void {
  const a = p.action;
  if (a.kind === 'command') setText(x.action, 'command', a.command);
  else if (a.kind === 'tcp') {
    if (a.port === '') capnp.utils.setUint16(0, 1, x);
    else x.action.tcpPort = a.port;
  } else {
    const h = x.action._initHttp();
    setText(h, 'port', a.port);
    setText(h, 'path', a.path);
  }
  x.periodS = BigInt(p.period_s);
  x.timeoutS = BigInt(p.timeout_s);
  x.initialDelayS = BigInt(p.initialDelay_s);
  x.failureThreshold = p.failureThreshold;
}

function writeServiceEs(s: P.Service, v: ServiceSpec): void {
  const r = s._initRestart();
  r.policy = {
    'on-failure': P.Service_Restart_Policy.ON_FAILURE,
    always: P.Service_Restart_Policy.ALWAYS,
    never: P.Service_Restart_Policy.NEVER,
  }[v.restart.policy];
  r.backoffInitialS = BigInt(v.restart.backoffInitial_s);
  r.backoffMaxS = BigInt(v.restart.backoffMax_s);
  r.giveUpAttempts = v.restart.giveUp?.attempts ?? 0;
  r.giveUpWindowS = BigInt(v.restart.giveUp?.window_s ?? 0);
  if (v.liveness !== null) writeProbeEs(s._initLiveness(), v.liveness);
  if (v.readiness !== null) writeProbeEs(s._initReadiness(), v.readiness);
  if (v.ports.length > 0) {
    const l = s._initPorts(v.ports.length);
    v.ports.forEach((p, i) => {
      setText(l.get(i), 'name', p.name);
      l.get(i).port = p.port;
      l.get(i).protocol = p.protocol === 'udp' ? P.Service_Port_Protocol.UDP : P.Service_Port_Protocol.TCP;
    });
  }
  if (v.replicas !== null) {
    const x = s._initReplicas();
    x.min = v.replicas.min;
    x.max = v.replicas.max;
  }
  if (v.spread !== null) {
    const x = s._initSpread();
    setText(x, 'across', v.spread.across);
    x.maxSkew = v.spread.maxSkew;
  }
  if (v.rollout !== null) {
    const x = s._initRollout();
    x.maxUnavailable = v.rollout.maxUnavailable;
    x.maxSurge = v.rollout.maxSurge;
  }
}

/** A profile written by capnp-es as an AppProfile, with the hash's normalisations (profile.capnp's header). */
function writeProfileEs(p: Profile): Uint8Array {
  const msg = new capnp.Message();
  const s = msg.initRoot(P.AppProfile);
  setText(s, 'name', p.name);
  // description: never part of the hash
  const aliases = [...p.aliases].sort();
  if (aliases.length > 0) {
    const l = s._initAliases(aliases.length);
    aliases.forEach((a, i) => {
      if (a !== '') l.set(i, a);
    });
  }
  s.mode = P.AppProfile_ExecMode.DIRECT;
  s.launchType =
    p.launchType === null
      ? P.AppProfile_LaunchType.UNSET
      : {
          serial: P.AppProfile_LaunchType.SERIAL,
          openmpi: P.AppProfile_LaunchType.OPENMPI,
          mpich: P.AppProfile_LaunchType.MPICH,
        }[p.launchType];
  if (p.resreq !== null) writeProfileResReqEs(s._initResreq(), p.resreq);
  if (p.tasks !== null) {
    const t = s._initTasks();
    t.min = p.tasks.min;
    t.max = p.tasks.max;
  }
  const l = p.limits;
  if (LIMIT_KEYS.some((k) => l[k] !== undefined)) {
    const x = s._initLimits();
    x.runtimeS = BigInt(l.runtime_s ?? 0);
    x.memoryBytes = BigInt(l.memory_bytes ?? 0);
    x.cpuS = BigInt(l.cpu_s ?? 0);
    x.tasks = BigInt(l.tasks ?? 0);
  }
  if (p.env.length > 0) {
    const e = s._initEnv(p.env.length);
    p.env.forEach((v, i) => {
      setText(e.get(i), 'name', v.name);
      setText(e.get(i), 'value', v.value);
    });
  }
  setText(s, 'preExec', p.preExec);
  setText(s, 'postExec', p.postExec);
  s.jobPrePostExec =
    p.jobPrePostExec === 'forbid' ? P.AppProfile_JobPrePostExec.FORBID : P.AppProfile_JobPrePostExec.ALLOW;
  if (p.service !== null) writeServiceEs(s._initService(), p.service as ServiceSpec);
  return new Uint8Array(msg.toArrayBuffer());
}

test('(c) the profile hash encodes the canonical form of the profile capnp-es writes, itself canonical', () => {
  fc.assert(
    fc.property(arbFullProfile, (p) => {
      const mine = profileCanonicalBytes(p);
      const es = canonicalize(onlySegment(writeProfileEs(p)));
      assert.deepStrictEqual(Buffer.from(mine).toString('hex'), Buffer.from(es).toString('hex'));
      assert.deepStrictEqual(canonicalize(mine), mine, 'canonical bytes canonicalize to themselves');
      assert.equal(profileHash(p), createHash('sha256').update(es).digest('hex'));
    }),
    { seed: 1806, numRuns: PROFILE_RUNS },
  );
});

// ---- (d): snapshots ----

function checkResult(s: S.ApplyResult, r: ApplyResult, path: string): void {
  if (r.kind === 'batch') throw new Error(`${path}: a batch result is never kept in a session`);
  same(s.kind, RESULT_KIND[r.kind], `${path}.kind`);
  const jobId = 'jobId' in r ? r.jobId : r.kind === 'cleaned' ? r.count : 0; // the count travels in jobId
  same(s.jobId, BigInt(jobId), `${path}.jobId`);
  if (r.kind === 'rejected' || r.kind === 'declined') text(s, 'code', r.code, path);
  if (r.kind === 'rejected' || r.kind === 'declined' || r.kind === 'ignored') text(s, 'message', r.message, path);
  if (r.kind === 'dispatched') same(s.runNumber, r.runNumber, `${path}.runNumber`);
  if (r.kind === 'configApplied') {
    list(s.inUse, r.inUse, `${path}.inUse`, (x, e, p) => {
      text(x, 'name', e.name, p);
      same(x.isAlias, e.isAlias, `${p}.isAlias`);
      same(x.pendingJobs, e.pendingJobs, `${p}.pendingJobs`);
    });
    texts(s.warnings, r.warnings, `${path}.warnings`);
  }
}

/** A job, or an array's shared values (`template`); an array element leaves those out (its array has them). */
function checkJob(s: S.Job, j: Job, path: string): void {
  same(s.id, BigInt(j.id), `${path}.id`);
  same(s.state, JOB_STATE[j.state], `${path}.state`);
  if (isElementId(j.id)) {
    optText(s, 'user', null, path);
    same(s._hasSpec(), false, `${path}.spec is left out`);
    optText(s, 'dependency', null, path);
  } else checkShared(s, j, path);
  same(s.runNumber, j.runNumber, `${path}.runNumber`);
  same(s.requeueCount, j.requeueCount, `${path}.requeueCount`);
  same(s._hasRecord(), j.record !== null, `${path}.record is set`);
  if (j.record !== null) checkRecord(s.record, j.record, `${path}.record`);
  same(s.dispatchTimeMs, BigInt(j.dispatchTimeMs), `${path}.dispatchTimeMs`);
  same(s.pid, j.pid, `${path}.pid`);
  same(s.startTimeMs, BigInt(j.startTimeMs), `${path}.startTimeMs`);
  same(s.endTimeMs, BigInt(j.endTimeMs), `${path}.endTimeMs`);
  same(s.exitCode, j.exitCode, `${path}.exitCode`);
  optText(s, 'signal', j.signal, path);
  optText(s, 'reason', j.reason, path);
  optText(s, 'killRequestedBy', j.killRequestedBy, path);
  optText(s, 'lastDecline', j.lastDecline, path);
  same(s.started, j.started, `${path}.started`);
  optText(s, 'heldBy', j.heldBy, path);
  list(s.events, j.events, `${path}.events`, (x, e: JobEvent, p) => {
    text(x, 'action', e.action, p);
    optText(x, 'user', e.user, p);
    same(x.timeMs, BigInt(e.timeMs), `${p}.timeMs`);
    optText(x, 'detail', e.detail, p);
  });
}

function checkShared(s: S.Job, j: Omit<JobArray, 'name' | 'limit' | 'indices'>, path: string): void {
  text(s, 'user', j.user, path);
  text(s, 'queue', j.queue, path);
  optText(s, 'profile', j.profile, path);
  optText(s, 'profileRequested', j.profileRequested, path);
  checkSpec(s.spec, j.spec, `${path}.spec`);
  same(s.submitTimeMs, BigInt(j.submitTimeMs), `${path}.submitTimeMs`);
  optText(s, 'dependency', j.dependency?.text ?? null, path);
  optText(s, 'dependencyResolved', j.dependency?.resolved ?? null, path);
  same(s.dependencyKill, j.dependency?.killWhenNever ?? false, `${path}.dependencyKill`);
}

function checkSnapshot(bytes: Uint8Array, state: ControllerState): void {
  const s = new capnp.Message(bytes, false).getRoot(S.Snapshot);
  same(s.formatVersion, SNAPSHOT_FORMAT_VERSION, 'snapshot.formatVersion');
  same(s.appliedIndex, BigInt(state.appliedIndex), 'snapshot.appliedIndex');
  same(s.nextJobId, BigInt(state.nextJobId), 'snapshot.nextJobId');
  same(s.logTimeMs, BigInt(state.logTimeMs), 'snapshot.logTimeMs');
  same(s._hasConfig(), state.config !== null, 'snapshot.config is set');
  if (state.config !== null) checkConfigFiles(s.config, state.config.files, 'snapshot.config');
  list(s.jobs, [...state.jobs.values()], 'snapshot.jobs', checkJob);
  list(s.arrays, [...state.arrays.values()], 'snapshot.arrays', (x, a: JobArray, p) => {
    same(x.id, BigInt(a.id), `${p}.id`);
    checkShared(x, a, p);
  });
  list(s.sessions, [...state.sessions.values()], 'snapshot.sessions', (x, e: Session, p) => {
    text(x, 'clientId', e.clientId, p);
    same(x.lastSequence, BigInt(e.lastSequence), `${p}.lastSequence`);
    same(x.lastTimeMs, BigInt(e.lastTimeMs), `${p}.lastTimeMs`);
    checkResult(x.result, e.result, `${p}.result`);
    optText(x, 'user', e.user, p);
  });
  list(s.hosts, [...state.hosts.values()], 'snapshot.hosts', checkRegisteredHost);
  same(s.jobsCleaned, BigInt(state.jobsCleaned), 'snapshot.jobsCleaned');
  list(s.closedHosts, [...state.closedHosts.values()], 'snapshot.closedHosts', (x, e: ClosedHost, p) => {
    text(x, 'host', e.host, p);
    optText(x, 'reason', e.reason, p);
    text(x, 'user', e.user, p);
    same(x.timeMs, BigInt(e.timeMs), `${p}.timeMs`);
  });
  list(
    s.hostCredentials,
    [...state.hostCredentials.entries()],
    'snapshot.hostCredentials',
    (x, [host, h]: [string, HostCredentialState], p) => {
      text(x, 'host', host, p);
      same(x.epoch, h.epoch, `${p}.epoch`);
      same(x.revoked, h.revoked, `${p}.revoked`);
    },
  );
  list(
    s.revokedTokens,
    [...state.revokedTokens.entries()],
    'snapshot.revokedTokens',
    (x, [jti, until]: [string, number], p) => {
      text(x, 'jti', jti, p);
      same(x.untilMs, BigInt(until), `${p}.untilMs`);
    },
  );
}

function writeResultEs(s: S.ApplyResult, r: ApplyResult, o: EsOptions): void {
  if (r.kind === 'batch') throw new Error('a batch result is never kept in a session');
  s.kind = RESULT_KIND[r.kind];
  if ('jobId' in r) s.jobId = BigInt(r.jobId);
  if (r.kind === 'cleaned') s.jobId = BigInt(r.count);
  if (r.kind === 'rejected' || r.kind === 'declined') s.code = r.code;
  if (r.kind === 'rejected' || r.kind === 'declined' || r.kind === 'ignored') s.message = r.message;
  if (r.kind === 'dispatched') s.runNumber = r.runNumber;
  if (r.kind === 'configApplied') {
    const l = initList(r.inUse, o, (n) => s._initInUse(n));
    r.inUse.forEach((n, i) => {
      l!.get(i).name = n.name;
      l!.get(i).isAlias = n.isAlias;
      l!.get(i).pendingJobs = n.pendingJobs;
    });
    const w = initList(r.warnings, o, (n) => s._initWarnings(n));
    r.warnings.forEach((t, i) => w!.set(i, t));
  }
}

function writeSnapshotEs(state: ControllerState, o: EsOptions): Uint8Array {
  const msg = new capnp.Message();
  const s = msg.initRoot(S.Snapshot);
  s.formatVersion = SNAPSHOT_FORMAT_VERSION;
  s.appliedIndex = BigInt(state.appliedIndex);
  s.nextJobId = BigInt(state.nextJobId);
  s.logTimeMs = BigInt(state.logTimeMs);
  if (state.config !== null) writeConfigFilesEs(state.config.files, s._initConfig(state.config.files.length));
  const jobs = [...state.jobs.values()];
  const jl = s._initJobs(jobs.length);
  const writeShared = (x: S.Job, j: Omit<JobArray, 'name' | 'limit' | 'indices'>): void => {
    x.user = j.user;
    x.queue = j.queue;
    if (j.profile !== null) x.profile = j.profile;
    if (j.profileRequested !== null) x.profileRequested = j.profileRequested;
    writeSpecEs(x._initSpec(), j.spec, o);
    x.submitTimeMs = BigInt(j.submitTimeMs);
    if (j.dependency !== null) {
      x.dependency = j.dependency.text;
      x.dependencyResolved = j.dependency.resolved;
      x.dependencyKill = j.dependency.killWhenNever;
    }
  };
  const arrays = [...state.arrays.values()];
  const al = s._initArrays(arrays.length);
  arrays.forEach((a, i) => {
    const x = al.get(i);
    x.id = BigInt(a.id);
    writeShared(x, a);
  });
  jobs.forEach((j, i) => {
    const x = jl.get(i);
    x.id = BigInt(j.id);
    x.state = JOB_STATE[j.state];
    if (!isElementId(j.id)) writeShared(x, j);
    x.runNumber = j.runNumber;
    x.requeueCount = j.requeueCount;
    if (j.record !== null) writeRecordEs(x._initRecord(), j.record, o);
    x.dispatchTimeMs = BigInt(j.dispatchTimeMs);
    x.pid = j.pid;
    x.startTimeMs = BigInt(j.startTimeMs);
    x.endTimeMs = BigInt(j.endTimeMs);
    x.exitCode = j.exitCode;
    if (j.signal !== null) x.signal = j.signal;
    if (j.reason !== null) x.reason = j.reason;
    if (j.killRequestedBy !== null) x.killRequestedBy = j.killRequestedBy;
    if (j.lastDecline !== null) x.lastDecline = j.lastDecline;
    x.started = j.started;
    if (j.heldBy !== null) x.heldBy = j.heldBy;
    const el = initList(j.events, o, (n) => x._initEvents(n));
    j.events.forEach((e, k) => {
      const y = el!.get(k);
      y.action = e.action;
      if (e.user !== null) y.user = e.user;
      y.timeMs = BigInt(e.timeMs);
      if (e.detail !== null) y.detail = e.detail;
    });
  });
  const sessions = [...state.sessions.values()];
  const sl = s._initSessions(sessions.length);
  sessions.forEach((e, i) => {
    const x = sl.get(i);
    x.clientId = e.clientId;
    x.lastSequence = BigInt(e.lastSequence);
    x.lastTimeMs = BigInt(e.lastTimeMs);
    writeResultEs(x._initResult(), e.result, o);
    if (e.user !== null) x.user = e.user;
  });
  const hosts = [...state.hosts.values()];
  const hl = initList(hosts, o, (n) => s._initHosts(n));
  hosts.forEach((h, i) => writeRegisteredHostEs(hl!.get(i), h, o));
  s.jobsCleaned = BigInt(state.jobsCleaned);
  const closed = [...state.closedHosts.values()];
  const cl = initList(closed, o, (n) => s._initClosedHosts(n));
  closed.forEach((c, i) => {
    const x = cl!.get(i);
    x.host = c.host;
    if (c.reason !== null) x.reason = c.reason;
    x.user = c.user;
    x.timeMs = BigInt(c.timeMs);
  });
  const creds = [...state.hostCredentials.entries()];
  const hc = initList(creds, o, (n) => s._initHostCredentials(n));
  creds.forEach(([host, h], i) => {
    hc!.get(i).host = host;
    hc!.get(i).epoch = h.epoch;
    hc!.get(i).revoked = h.revoked;
  });
  const tokens = [...state.revokedTokens.entries()];
  const tl = initList(tokens, o, (n) => s._initRevokedTokens(n));
  tokens.forEach(([jti, until], i) => {
    tl!.get(i).jti = jti;
    tl!.get(i).untilMs = BigInt(until);
  });
  return new Uint8Array(msg.toArrayBuffer());
}

/** A job with its spec and record read field by field (a restored finished job holds them encoded). */
function plainJob(j: Job): Job {
  const via = <T extends object>(v: T, keys: readonly string[]): T =>
    Object.fromEntries(keys.map((k) => [k, (v as Record<string, unknown>)[k]])) as T;
  return {
    ...j,
    spec: via(j.spec, Object.keys(JOB_SPEC_FIELDS)),
    record: j.record === null ? null : via(j.record, Object.keys(DISPATCH_RECORD_FIELDS)),
  };
}

function assertRestoredAs(restored: ControllerState, state: ControllerState): void {
  assert.equal(restored.appliedIndex, state.appliedIndex, 'appliedIndex');
  assert.equal(restored.nextJobId, state.nextJobId, 'nextJobId');
  assert.equal(restored.logTimeMs, state.logTimeMs, 'logTimeMs');
  assert.deepStrictEqual(restored.config?.files ?? null, state.config?.files ?? null, 'config');
  assert.deepStrictEqual([...restored.jobs.values()].map(plainJob), [...state.jobs.values()].map(plainJob), 'jobs');
  assert.deepStrictEqual([...restored.sessions.entries()], [...state.sessions.entries()], 'sessions');
  assert.deepStrictEqual(
    [...restored.hostCredentials.entries()],
    [...state.hostCredentials.entries()],
    'hostCredentials',
  );
  assert.deepStrictEqual([...restored.revokedTokens.entries()], [...state.revokedTokens.entries()], 'revokedTokens');
  assert.deepStrictEqual([...restored.closedHosts.entries()], [...state.closedHosts.entries()], 'closedHosts');
  assert.deepStrictEqual(restored.usage, state.usage, 'usage');
  assert.deepStrictEqual([...restored.hosts.entries()], [...state.hosts.entries()], 'hosts');
  assert.equal(restored.jobsCleaned, state.jobsCleaned, 'jobsCleaned');
}

test('(d) capnp-es reads a snapshot of any state as the state, and a snapshot capnp-es writes restores to it', () => {
  fc.assert(
    fc.property(arbControllerState, fc.boolean(), (state, emptyListsSet) => {
      const bytes = snapshot(state);
      checkSnapshot(bytes, state);
      const restored = restore(bytes);
      checkSnapshot(snapshot(restored), state); // finished jobs' parts now copied as bytes
      assertRestoredAs(restore(writeSnapshotEs(state, { emptyListsSet })), state);
    }),
    { seed: 1807, numRuns: SNAPSHOT_RUNS },
  );
});

// A state built the way the controller builds it: by applying facts, random in their free texts
// and valid enough to be accepted (some are rejected, which fills the session results).

const USERS = ['alice', 'bob', 'carol', 'olga'];
const APPS = [null, 'serial', 'openfoam', 'openfoam-old', 'python'];
const RESREQS = [null, 'select[mem>100]', 'rusage[license_foam=1]', 'span[ptile=1]', 'rusage[mem=0.5]'];

type Step =
  | { op: 'submit'; user: number; app: number; client: number; resreq: number; spec: JobSpec }
  | { op: 'dispatch'; pick: number; host: number }
  | { op: 'status'; pick: number; status: Extract<Fact['body'], { kind: 'status' }>['status'] }
  | { op: 'control'; pick: number; action: number; user: number }
  | { op: 'noop'; advanceMs: number }
  | { op: 'host'; host: number; slots: number; booleans: number; strings: boolean; mem: number }
  | { op: 'clean'; due: boolean; pick: number };

const PLAIN = { noNullPrototype: true } as const;
/** A run that exited 0 (random exit codes are almost never 0: DONE would not be reached). */
const arbExitedOk = fc.record(
  {
    type: fc.constant('finished' as const),
    exitCode: fc.constant(0),
    signal: fc.constant(null),
    reason: fc.option(fc.string(), { nil: null }),
    timeMs: fc.nat(),
  },
  PLAIN,
);
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  fc.record(
    {
      op: fc.constant('submit' as const),
      user: fc.nat(3),
      app: fc.nat(4),
      client: fc.nat(3),
      resreq: fc.nat(RESREQS.length - 1),
      spec: fc
        .tuple(arbJobSpec, arbEnvVars, fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }))
        .map(([s, env, tasks]): JobSpec => ({
          ...s,
          env,
          tasks,
          limits: {},
          command: s.command.length === 0 ? ['./run.sh'] : s.command,
        })),
    },
    PLAIN,
  ),
  fc.record({ op: fc.constant('dispatch' as const), pick: fc.nat(), host: fc.nat(2) }, PLAIN),
  fc.record(
    { op: fc.constant('status' as const), pick: fc.nat(), status: fc.oneof(arbJobStatus, arbExitedOk, arbExitedOk) },
    PLAIN,
  ),
  fc.record({ op: fc.constant('control' as const), pick: fc.nat(), action: fc.nat(2), user: fc.nat(3) }, PLAIN),
  fc.record({ op: fc.constant('noop' as const), advanceMs: fc.nat(2 * 60 * 60 * 1000) }, PLAIN),
  fc.record(
    {
      op: fc.constant('host' as const),
      host: fc.nat(2),
      slots: fc.integer({ min: 1, max: 64 }),
      booleans: fc.nat(2),
      strings: fc.boolean(),
      mem: fc.nat(1_000_000),
    },
    PLAIN,
  ),
  fc.record({ op: fc.constant('clean' as const), due: fc.boolean(), pick: fc.nat() }, PLAIN),
);

function stateFromFacts(steps: readonly Step[]): ControllerState {
  const state = emptyState();
  let index = 0;
  let timeMs = 1_700_000_000_000;
  const seqs = new Map<string, number>();
  const fact = (body: Fact['body'], client: string | null = null): void => {
    timeMs += 1000;
    const sequence = client === null ? 0 : (seqs.get(client) ?? 0) + 1;
    if (client !== null) seqs.set(client, sequence);
    apply(state, encodeFact({ clientId: client, sequence, timeMs, body }), ++index);
  };
  const pick = (n: number, want?: Job['state']): Job | undefined => {
    const jobs = [...state.jobs.values()].filter((j) => want === undefined || j.state === want);
    return jobs.length === 0 ? undefined : jobs[n % jobs.length];
  };
  fact({ kind: 'config', files: testClusterFiles(), user: null });
  for (const s of steps) {
    if (s.op === 'submit') {
      const app = APPS[s.app]!;
      const spec: JobSpec = { ...s.spec, resreq: RESREQS[s.resreq]! };
      fact(
        {
          kind: 'submit',
          user: USERS[s.user]!,
          queue: 'normal',
          spec,
          profile: app ?? 'serial',
          profileRequested: app,
          dependency: null,
          dependencyKill: false,
        },
        `c${s.client}`,
      );
    } else if (s.op === 'dispatch') {
      const job = pick(s.pick, 'PEND');
      if (job === undefined) continue;
      const m = liveMerge(state.config?.cluster ?? null, job.profile, job.spec);
      if (!m.ok) continue;
      const hosts: HostTasks[] = [{ host: `n${s.host + 1}`, tasks: m.effective.tasks }];
      fact({
        kind: 'dispatch',
        jobId: job.id,
        runNumber: job.runNumber + 1,
        placement: hosts,
        record: buildDispatchRecord(m.effective, m.hash, hosts),
        schedulerHash: m.hash,
      });
    } else if (s.op === 'status') {
      const job = pick(s.pick, 'RUN') ?? pick(s.pick);
      if (job !== undefined) fact({ kind: 'status', jobId: job.id, runNumber: job.runNumber, status: s.status });
    } else if (s.op === 'control') {
      const job = pick(s.pick);
      const action = (['kill', 'requeue', 'restart'] as const)[s.action]!;
      if (job !== undefined) fact({ kind: 'control', jobId: job.id, action, user: USERS[s.user]! }, `ctl${s.user}`);
    } else if (s.op === 'host') {
      const registration: RegisteredHost = {
        host: `n${s.host + 1}`,
        slots: s.slots,
        memBytes: 64 * 2 ** 30,
        booleans: [null, [], ['ib']][s.booleans] ?? null,
        numerics: [{ name: 'mem', value: s.mem }],
        strings: s.strings ? [] : null,
        timeMs: timeMs + 1000,
      };
      fact({ kind: 'host', registration });
    } else if (s.op === 'clean') {
      // as the leader proposes it (the jobs due at its clock), or naming any job and an unknown id
      const ids = s.due ? cleanCandidates(state, timeMs + 1000) : [pick(s.pick)?.id ?? 1, state.nextJobId + 5];
      if (ids.length > 0) fact({ kind: 'clean', jobIds: ids });
    } else {
      timeMs += s.advanceMs;
      fact({ kind: 'noop' });
    }
  }
  return state;
}

test('(d) capnp-es reads snapshots of states built by applying random facts (and restored) as the states', () => {
  const states = new Set<string>();
  let withHosts = 0;
  let withCleaned = 0;
  fc.assert(
    fc.property(fc.array(arbStep, { minLength: 10, maxLength: 40 }), fc.boolean(), (steps, emptyListsSet) => {
      const state = stateFromFacts(steps);
      for (const j of state.jobs.values()) states.add(j.state);
      if (state.hosts.size > 0) withHosts++;
      if (state.jobsCleaned > 0) withCleaned++;
      const bytes = snapshot(state);
      checkSnapshot(bytes, state);
      const restored = restore(bytes);
      checkSnapshot(snapshot(restored), state);
      assertRestoredAs(restore(writeSnapshotEs(state, { emptyListsSet })), state);
    }),
    { seed: 1808, numRuns: SNAPSHOT_RUNS },
  );
  assert.deepEqual([...states].sort(), ['DONE', 'EXIT', 'PEND', 'RUN'], 'the facts reached every job state');
  assert.ok(withHosts > 0, 'some states hold host registrations');
  assert.ok(withCleaned > 0, 'some states have cleaned jobs');
});
