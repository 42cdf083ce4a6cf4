// The additive rule, case by case (the brief's table as tests), from the shared vectors
// (fixtures/additive-rule.yaml, run in full), then every refusal message, then properties.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { ConfigFile } from './config-file.js';
import { ProfileSchema } from './config-schema.js';
import { jobOwnValues, type JobValuesInput } from './job-own-values.js';
import { AdditiveRuleError, merge, type MergeResult } from './merge.js';
import { buildProfile } from './profile-config.js';
import type { EffectiveValues, EnvVar, JobOwnValues, Limits, Profile, ResReq } from './profile-types.js';
import { formatSelectExpr, parseResReq, parseSimpleResReq } from './resreq.js';
import { arbOrder, arbRusage, arbSame, arbSelectTerms, arbSpan } from '../testing/resreq-arbitrary.js';
import { parseDuration, parseSize } from './units.js';

const VECTORS_URL = new URL('../../model/fixtures/additive-rule.yaml', import.meta.url);
const vectorsText = readFileSync(VECTORS_URL, 'utf8');

/** A job of the vector file: the client's values, with the pre/post-exec under their YAML names. */
type VectorJob = JobValuesInput & { pre_exec?: string; post_exec?: string };

interface VectorCase {
  name: string;
  profile: string;
  job: VectorJob;
  accept?: {
    select_terms?: string[];
    rusage?: Record<string, number>;
    tasks?: number;
    env?: string[];
    limits?: { runtime?: string; memory?: string; cpu?: string; tasks?: number };
  };
  reject?: string[];
}
const vectors = parseYaml(vectorsText) as { profiles: Record<string, unknown>; cases: VectorCase[] };

/** Builds a profile through the same code path as applications.yaml (schema + buildProfile). */
function profileFromVector(name: string): Profile {
  const f = new ConfigFile('additive-rule.yaml', vectorsText);
  const raw = ProfileSchema.parse(vectors.profiles[name]);
  const p = buildProfile(f, ['profiles', name], raw, null);
  assert.deepEqual(f.diagnostics, [], `profile ${name} of the vectors is valid`);
  assert.ok(p !== null);
  return p;
}
const profiles = new Map(Object.keys(vectors.profiles).map((n) => [n, profileFromVector(n)]));

function mergeCase(c: VectorCase): MergeResult {
  const profile = profiles.get(c.profile);
  assert.ok(profile, `vector profile ${c.profile} exists`);
  const { pre_exec, post_exec, ...job } = c.job ?? {};
  return merge(profile, jobOwnValues({ ...job, preExec: pre_exec ?? null, postExec: post_exec ?? null }));
}

function checkAccepted(c: VectorCase, e: EffectiveValues): void {
  const a = c.accept ?? {};
  const terms = e.resreq.select.map((t) => formatSelectExpr(t.value));
  for (const t of a.select_terms ?? []) assert.ok(terms.includes(t), `select term ${t} among ${JSON.stringify(terms)}`);
  const rusage = new Map(e.resreq.rusage.map((r) => [r.value.name, r.value.value]));
  for (const [k, v] of Object.entries(a.rusage ?? {})) assert.equal(rusage.get(k), v, `rusage ${k}`);
  if (a.tasks !== undefined) assert.equal(e.tasks, a.tasks);
  if (a.env !== undefined) assert.deepEqual(e.env.map((v) => v.value.name).sort(), [...a.env].sort());
  const l = a.limits ?? {};
  if (l.runtime !== undefined) assert.equal(e.limits.runtime_s?.value, parseDuration(l.runtime));
  if (l.memory !== undefined) assert.equal(e.limits.memory_bytes?.value, parseSize(l.memory));
  if (l.cpu !== undefined) assert.equal(e.limits.cpu_s?.value, parseDuration(l.cpu));
  if (l.tasks !== undefined) assert.equal(e.limits.tasks?.value, l.tasks);
}

test('the vector file has cases and every case names a verdict', () => {
  assert.ok(vectors.cases.length >= 24);
  for (const c of vectors.cases) assert.ok((c.accept === undefined) !== (c.reject === undefined), c.name);
});

for (const c of vectors.cases) {
  test(`vector: ${c.name}`, () => {
    const r = mergeCase(c);
    if (c.reject !== undefined) {
      assert.equal(r.ok, false, `${c.name}: expected a rejection`);
      if (r.ok) return;
      assert.ok(r.error instanceof AdditiveRuleError);
      for (const s of c.reject) assert.ok(r.error.message.includes(s), `"${r.error.message}" should contain "${s}"`);
    } else {
      assert.equal(r.ok, true, r.ok ? '' : `${c.name}: refused with ${r.error.message}`);
      if (r.ok) checkAccepted(c, r.effective);
    }
  });
}

// ---- every refusal message, exactly ----

function refusal(profile: string, job: JobValuesInput): AdditiveRuleError {
  const r = merge(profiles.get(profile) as Profile, jobOwnValues(job));
  assert.equal(r.ok, false);
  return (r as { ok: false; error: AdditiveRuleError }).error;
}

test('refusal messages name the profile, the field and the profile value as written', () => {
  const cases: Array<[string, JobValuesInput, string, string | null, string]> = [
    [
      'openfoam',
      { resreq: 'rusage[license_foam=2]' },
      'rusage',
      'rusage[license_foam=1]',
      'job sets rusage[license_foam=2] but application profile openfoam requires rusage[license_foam=1]',
    ],
    [
      'onehost',
      { resreq: 'span[ptile=4]' },
      'span',
      'span[hosts=1]',
      'job sets span[ptile=4] but application profile onehost requires span[hosts=1]; a job may set span[...] only when its profile sets none',
    ],
    [
      'openfoam',
      { tasks: 16 },
      'tasks',
      '32-512',
      'job asks for 16 tasks but application profile openfoam requires between 32 and 512 tasks (tasks: {min: 32, max: 512})',
    ],
    [
      'openfoam',
      { tasks: 1024 },
      'tasks',
      '32-512',
      'job asks for 1024 tasks but application profile openfoam requires between 32 and 512 tasks (tasks: {min: 32, max: 512})',
    ],
    [
      'openfoam',
      { env: { FOAM_INST_DIR: '/tmp/foam' } },
      'env',
      'FOAM_INST_DIR=/opt/openfoam',
      "job sets env FOAM_INST_DIR=/tmp/foam but application profile openfoam requires FOAM_INST_DIR=/opt/openfoam; a job may add variables, not redefine the profile's",
    ],
    [
      'bare',
      { env: { XCE_JOBID: '7' } },
      'env',
      null,
      'job sets environment variable XCE_JOBID, but the XCE_ prefix is reserved for variables XCE sets itself; rename it',
    ],
    [
      'openfoam',
      { limits: { runtime: '48h' } },
      'limits.runtime',
      '24h',
      'job asks for limits.runtime 48h but application profile openfoam allows at most 24h; a job may only ask for less',
    ],
    [
      'openfoam',
      { limits: { memory: '256G' } },
      'limits.memory',
      '128G',
      'job asks for limits.memory 256G but application profile openfoam allows at most 128G; a job may only ask for less',
    ],
    [
      'onehost',
      { preExec: './prep.sh' },
      'pre_exec',
      'job_pre_post_exec: forbid',
      `job sets its own pre-exec "./prep.sh" but application profile onehost forbids a job's own pre/post-exec (job_pre_post_exec: forbid)`,
    ],
    [
      'onehost',
      { resreq: 'span[hosts=1]' },
      'span',
      'span[hosts=1]',
      'job sets span[hosts=1], which application profile onehost already sets; a job may set span[...] only when its profile sets none, so leave it out',
    ],
    [
      'onehost',
      { postExec: './done.sh' },
      'post_exec',
      'job_pre_post_exec: forbid',
      `job sets its own post-exec "./done.sh" but application profile onehost forbids a job's own pre/post-exec (job_pre_post_exec: forbid)`,
    ],
    [
      'openfoam',
      { resreq: '{select[ib] rusage[mem=1000]} + {select[gpu]}' },
      'resreq',
      'select[ib] rusage[license_foam=1]',
      'job sets a compound resource requirement ({select[ib] rusage[mem=1000]} + {select[gpu]}) but application profile openfoam requires select[ib] rusage[license_foam=1]; compound and alternative ("+") requirements are not supported under a profile that sets resource requirement terms',
    ],
  ];
  for (const [profile, job, field, profileValue, message] of cases) {
    const e = refusal(profile, job);
    assert.equal(e.profile, profile);
    assert.equal(e.field, field);
    assert.equal(e.profileValue, profileValue);
    assert.equal(e.message, message);
  }
});

test("the effective requirement records each term's origin, the profile's first", () => {
  const r = merge(
    profiles.get('openfoam') as Profile,
    jobOwnValues({
      resreq: 'select[mem>64000] rusage[mem=4000] order[-slots]',
      limits: { runtime: '1h' },
      env: { MY_CASE: 'cavity' },
    }),
  );
  assert.ok(r.ok);
  const e = r.effective;
  assert.deepEqual(
    e.resreq.select.map((t) => [formatSelectExpr(t.value), t.origin]),
    [
      ['ib', 'profile'],
      ['mem>64000', 'job'],
    ],
  );
  assert.deepEqual(
    e.resreq.rusage.map((t) => [t.value.name, t.origin]),
    [
      ['license_foam', 'profile'],
      ['mem', 'job'],
    ],
  );
  assert.deepEqual(e.resreq.order, { value: [{ name: 'slots', descending: true }], origin: 'job' });
  assert.deepEqual(e.limits.runtime_s, { value: 3600, origin: 'job' });
  assert.deepEqual(e.limits.memory_bytes, { value: 128 * 1024 ** 3, origin: 'profile' });
  assert.deepEqual(
    e.env.map((v) => [v.value.name, v.origin]),
    [
      ['FOAM_INST_DIR', 'profile'],
      ['MY_CASE', 'job'],
    ],
  );
  assert.equal(e.launchType, 'openmpi');
  assert.equal(e.mode, 'direct');
  assert.equal(e.profilePreExec, '/opt/xce/app/openfoam/pre.sh');
});

test("restating the profile's span, same or order is refused (the brief's table); restating rusage or env is not a change", () => {
  // "span / same / order: set them if the profile does not; otherwise rejected" (brief, the additive rule).
  const r = merge(profiles.get('onehost') as Profile, jobOwnValues({ resreq: 'select[x86_64] span[hosts=1]' }));
  assert.ok(!r.ok);
  assert.equal(r.error.field, 'span');
  assert.match(r.error.message, /job sets span\[hosts=1\], which application profile onehost already sets/);
  const withAll: Profile = {
    ...(profiles.get('bare') as Profile),
    resreq: parseSimpleResReq('same[rack] order[-slots]'),
  };
  for (const [job, field] of [
    ['same[rack]', 'same'],
    ['order[-slots]', 'order'],
  ] as const) {
    const x = merge(withAll, jobOwnValues({ resreq: job }));
    assert.ok(!x.ok, job);
    assert.equal(x.error.field, field);
    assert.match(x.error.message, new RegExp(`a job may set ${field}\\[\\.\\.\\.\\] only when its profile sets none`));
  }
  assert.ok(
    merge(
      profiles.get('openfoam') as Profile,
      jobOwnValues({ resreq: 'rusage[license_foam=1]', env: { FOAM_INST_DIR: '/opt/openfoam' } }),
    ).ok,
  );
});

test('a job without a task count under a profile without a range runs one task; launch type defaults to serial', () => {
  const r = merge(profiles.get('bare') as Profile, jobOwnValues({}));
  assert.ok(r.ok);
  assert.equal(r.effective.tasks, 1);
  assert.equal(r.effective.launchType, 'serial');
});

test('a compound job requirement stands as written under a profile with no terms', () => {
  const r = merge(profiles.get('bare') as Profile, jobOwnValues({ resreq: 'select[ib] || select[gpu]' }));
  assert.ok(r.ok);
  assert.equal(r.effective.resreq.compound?.operator, '||');
});

// ---- properties: adding is always accepted; changing or removing any profile value never is ----

const arbEnv = (prefix: string): fc.Arbitrary<EnvVar[]> =>
  fc
    .uniqueArray(
      fc.tuple(
        fc.stringMatching(/^[A-Z][A-Z0-9_]{0,6}$/).map((s) => prefix + s),
        fc.string({ maxLength: 8 }),
      ),
      { selector: (t) => t[0], maxLength: 4 },
    )
    .map((kv) =>
      kv.map(([name, value]) => ({ name, value })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    );

const arbLimits: fc.Arbitrary<Limits> = fc
  .record(
    {
      runtime_s: fc.integer({ min: 60, max: 10 ** 7 }),
      memory_bytes: fc.integer({ min: 1024, max: 2 ** 45 }),
      cpu_s: fc.integer({ min: 60, max: 10 ** 7 }),
      tasks: fc.integer({ min: 1, max: 10 ** 5 }),
    },
    { requiredKeys: [], noNullPrototype: true },
  )
  .map((l) => ({ ...l }));

const arbProfile: fc.Arbitrary<Profile> = fc
  .record(
    {
      select: arbSelectTerms,
      rusage: arbRusage.map((r) => r.map((i) => ({ ...i, name: `p_${i.name}` }))),
      span: fc.option(arbSpan, { nil: null }),
      same: fc.option(arbSame, { nil: null }),
      order: fc.option(arbOrder, { nil: null }),
      tasks: fc.option(
        fc
          .tuple(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 512 }))
          .map(([min, extra]) => ({ min, max: min + extra })),
        { nil: null },
      ),
      limits: arbLimits,
      env: arbEnv('P_'),
      jobPrePostExec: fc.constantFrom('allow', 'forbid' as const),
      launchType: fc.constantFrom(null, 'serial', 'openmpi', 'mpich' as const),
    },
    { noNullPrototype: true },
  )
  .map((x): Profile => {
    const resreq: ResReq = {
      kind: 'simple',
      select: x.select,
      rusage: x.rusage,
      span: x.span,
      same: x.same,
      order: x.order,
    };
    const empty =
      x.select.length === 0 && x.rusage.length === 0 && x.span === null && x.same === null && x.order === null;
    return {
      name: 'prop',
      description: null,
      aliases: [],
      mode: 'direct',
      launchType: x.launchType,
      resreq: empty ? null : resreq,
      tasks: x.tasks,
      limits: x.limits,
      env: x.env,
      preExec: '/pre.sh',
      postExec: null,
      jobPrePostExec: x.jobPrePostExec,
      service: null,
    };
  });

/** Job values that only add to `p`: extra terms and resources, settings p leaves open, lower limits. */
function arbAdditiveJob(p: Profile): fc.Arbitrary<JobOwnValues> {
  const r = p.resreq;
  return fc
    .record(
      {
        select: arbSelectTerms,
        rusage: arbRusage.map((xs) => xs.map((i) => ({ ...i, name: `j_${i.name}` }))),
        restate: fc.boolean(),
        span: r?.span ? fc.constant(null) : fc.option(arbSpan, { nil: null }),
        same: r?.same ? fc.constant(null) : fc.option(arbSame, { nil: null }),
        order: r?.order ? fc.constant(null) : fc.option(arbOrder, { nil: null }),
        tasks: p.tasks
          ? fc.option(fc.integer({ min: p.tasks.min, max: p.tasks.max }), { nil: null })
          : fc.option(fc.integer({ min: 1, max: 4096 }), { nil: null }),
        env: arbEnv('J_'),
        lower: fc.record(
          {
            runtime_s: fc.double({ min: 0.01, max: 1, noNaN: true }),
            memory_bytes: fc.double({ min: 0.01, max: 1, noNaN: true }),
            cpu_s: fc.double({ min: 0.01, max: 1, noNaN: true }),
            tasks: fc.double({ min: 0.01, max: 1, noNaN: true }),
          },
          { requiredKeys: [] },
        ),
        ownExec: p.jobPrePostExec === 'allow' ? fc.boolean() : fc.constant(false),
      },
      { noNullPrototype: true },
    )
    .map((x): JobOwnValues => {
      const limits: Record<string, number> = {};
      for (const [k, f] of Object.entries(x.lower)) {
        const max = p.limits[k as keyof Limits];
        limits[k] = max === undefined ? 1000 : Math.max(1, Math.floor(max * (f as number)));
      }
      // Restating the profile's own rusage values is allowed and changes nothing.
      const rusage = x.restate && r ? [...r.rusage, ...x.rusage] : x.rusage;
      return {
        resreq: { kind: 'simple', select: x.select, rusage, span: x.span, same: x.same, order: x.order },
        tasks: x.tasks,
        env: x.env,
        limits,
        preExec: x.ownExec ? './prep.sh' : null,
        postExec: x.ownExec ? './done.sh' : null,
      };
    });
}

test('property: any job that only adds to its profile is accepted, and keeps every profile value', () => {
  fc.assert(
    fc.property(
      arbProfile.chain((p) => fc.tuple(fc.constant(p), arbAdditiveJob(p))),
      ([p, job]) => {
        const r = merge(p, job);
        assert.ok(r.ok, r.ok ? '' : r.error.message);
        const e = r.effective;
        const pSel = p.resreq?.select ?? [];
        assert.deepEqual(
          e.resreq.select.slice(0, pSel.length).map((t) => t.value),
          pSel,
        );
        for (const u of p.resreq?.rusage ?? [])
          assert.ok(e.resreq.rusage.some((x) => x.value === u && x.origin === 'profile'));
        for (const v of p.env) assert.ok(e.env.some((x) => x.value === v && x.origin === 'profile'));
        for (const k of ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'] as const) {
          const max = p.limits[k];
          if (max !== undefined) assert.ok((e.limits[k]?.value ?? Infinity) <= max);
        }
        if (p.tasks) assert.ok(e.tasks >= p.tasks.min && e.tasks <= p.tasks.max);
      },
    ),
    { numRuns: 500 },
  );
});

type Mutation = { readonly what: string; readonly job: JobOwnValues };

/** Every way a job could change or remove one of the profile's values. */
function mutations(p: Profile): Mutation[] {
  const none: JobOwnValues = { resreq: null, tasks: null, env: [], limits: {}, preExec: null, postExec: null };
  const rr = (over: Partial<ResReq>): JobOwnValues => ({
    ...none,
    resreq: { kind: 'simple', select: [], rusage: [], span: null, same: null, order: null, ...over },
  });
  const out: Mutation[] = [];
  for (const u of p.resreq?.rusage ?? [])
    out.push({ what: `rusage ${u.name}`, job: rr({ rusage: [{ ...u, value: u.value + 1 }] }) });
  const s = p.resreq?.span;
  if (s)
    out.push({
      what: 'span',
      job: rr({ span: s.ptile !== undefined ? { ptile: s.ptile + 1 } : { hosts: (s.hosts ?? 0) + 1 } }),
    });
  const same = p.resreq?.same;
  if (same) out.push({ what: 'same', job: rr({ same: [...same, 'zz_other'] }) });
  const order = p.resreq?.order;
  if (order) out.push({ what: 'order', job: rr({ order: order.map((k) => ({ ...k, descending: !k.descending })) }) });
  if (p.tasks) {
    if (p.tasks.min > 1) out.push({ what: 'tasks below', job: { ...none, tasks: p.tasks.min - 1 } });
    out.push({ what: 'tasks above', job: { ...none, tasks: p.tasks.max + 1 } });
  }
  for (const v of p.env)
    out.push({ what: `env ${v.name}`, job: { ...none, env: [{ name: v.name, value: v.value + 'x' }] } });
  for (const k of ['runtime_s', 'memory_bytes', 'cpu_s', 'tasks'] as const) {
    const max = p.limits[k];
    if (max !== undefined) out.push({ what: `limit ${k}`, job: { ...none, limits: { [k]: max + 1 } } });
  }
  if (p.jobPrePostExec === 'forbid') out.push({ what: 'own pre-exec', job: { ...none, preExec: './x' } });
  if (p.resreq !== null)
    out.push({
      what: 'compound',
      job: {
        ...none,
        resreq: { kind: 'compound', operator: '+', parts: [rr({}).resreq as ResReq, rr({}).resreq as ResReq] },
      },
    });
  out.push({ what: 'XCE_ env', job: { ...none, env: [{ name: 'XCE_X', value: '1' }] } });
  return out;
}

test('property: changing or removing any profile value is refused, naming the profile', () => {
  fc.assert(
    fc.property(arbProfile, (p) => {
      const ms = mutations(p);
      assert.ok(ms.length >= 1); // the XCE_ case is always there
      for (const m of ms) {
        const r = merge(p, m.job);
        assert.equal(r.ok, false, `${m.what} was accepted`);
        if (!r.ok)
          assert.ok(
            r.error.message.includes(m.what === 'XCE_ env' ? 'XCE_X' : `application profile ${p.name}`),
            r.error.message,
          );
      }
    }),
    { numRuns: 500 },
  );
});

test('the merge is deterministic and does not touch its inputs', () => {
  const p = profiles.get('openfoam') as Profile;
  const job = jobOwnValues({
    resreq: 'select[mem>64000] rusage[mem=4000]',
    tasks: 64,
    env: { A: '1' },
    limits: { runtime: '1h' },
  });
  const before = JSON.stringify([p, job]);
  assert.deepEqual(merge(p, job), merge(p, job));
  assert.equal(JSON.stringify([p, job]), before);
  assert.equal(parseResReq('select[ib]').kind, 'simple');
});

test('an empty --pre-exec is no pre-exec of its own: accepted under job_pre_post_exec: forbid, never quoted as "()"', () => {
  const r = merge(profiles.get('onehost') as Profile, jobOwnValues({ preExec: '', postExec: '' }));
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  assert.equal(r.effective.jobPreExec, null);
  assert.equal(r.effective.jobPostExec, null);
  const refused = merge(profiles.get('onehost') as Profile, jobOwnValues({ preExec: 'echo (x)' }));
  assert.ok(!refused.ok);
  assert.match(
    refused.error.message,
    /^job sets its own pre-exec "echo \(x\)" but application profile onehost forbids/,
  );
});
