// The expansion order (model/preset-expand.ts), by example and by property: a random stack of
// presets expands to the values a user would get by typing every layer's options in order on the
// command line, and the server's merge (the additive rule) answers the same for both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { expandPresets, originLabel, presetLayers, PresetError, type PresetLayer } from '../../model/preset-expand.js';
import type { JobValues, Preset } from '../../model/preset-schema.js';
import { jobOwnValues } from '../../model/job-own-values.js';
import { merge } from '../../model/merge.js';
import { builtinDefaultProfile } from '../../model/profile-config.js';
import type { MergeResult } from '../../model/merge.js';
import { arbFullProfile } from '../../testing/profile-arbitrary.js';
import { buildJobSpec, type SubmitFlags } from '../submit-args.js';
import { expandPresets as exported } from '../index.js';

const preset = (name: string, values: JobValues): Preset => ({ name, description: null, values });

test('order: site, the user preset of the same name, later --preset flags, then the command line', () => {
  const site = new Map([
    ['cfd', preset('cfd', { tasks: 64, queue: 'night', resreq: 'span[ptile=32]', env: { A: 'site', B: 'site' } })],
    ['gpu', preset('gpu', { tasks: 4, stdout: 'gpu.out' })],
  ]);
  const user = new Map([['cfd', preset('cfd', { tasks: 128, env: { A: 'user' } })]]);
  const layers = presetLayers(['cfd', 'gpu'], site, user);
  assert.deepEqual(
    layers.map((l) => `${l.preset.name}:${l.source}`),
    ['cfd:site', 'cfd:user', 'gpu:site'],
  );
  const x = expandPresets(layers, { command: ['run'], cwd: '/w', queue: 'normal', env: { B: 'cli' } });
  assert.deepEqual(x.job, {
    command: ['run'],
    cwd: '/w',
    queue: 'normal',
    tasks: 4,
    resreq: 'span[ptile=32]',
    stdout: 'gpu.out',
    env: { A: 'user', B: 'cli' },
  });
  assert.deepEqual(
    x.origins.map((o) => `${o.option} ${o.value} (${originLabel(o.origin)})`),
    [
      '-q normal (command line)',
      '-n 4 (preset gpu, site)',
      '-R span[ptile=32] (preset cfd, site)',
      '-o gpu.out (preset gpu, site)',
      '-e A user (preset cfd, user)',
      '-e B cli (command line)',
    ],
  );
  assert.equal(exported, expandPresets, 'the client library exports the same expansion');
});

test('a preset that is neither a site nor a user preset is refused by name', () => {
  assert.throws(
    () => presetLayers(['nope'], new Map(), new Map(), '/home/u/.config/xce/presets'),
    (e: unknown) =>
      e instanceof PresetError &&
      e.message.startsWith(
        'preset nope is not defined: there is neither a site preset nope nor /home/u/.config/xce/presets/nope.yaml',
      ),
  );
});

test('without presets the command line is the job, unchanged', () => {
  const job = { command: ['x'], cwd: '/', tasks: 2, env: { A: '1' } };
  assert.deepEqual(expandPresets([], job).job, job);
});

// ---- property: expanding = typing every layer's options in order ----

const arbValues: fc.Arbitrary<JobValues> = fc.record(
  {
    app: fc.constantFrom('openfoam', 'python', 'mpich'),
    queue: fc.constantFrom('normal', 'night', 'priority'),
    name: fc.constantFrom('a', 'b-1'),
    tasks: fc.integer({ min: 1, max: 600 }),
    resreq: fc.constantFrom('span[ptile=32]', 'rusage[mem=4000]', 'select[ib] span[hosts=1]', 'rusage[license_foam=2]'),
    env: fc.dictionary(fc.constantFrom('A', 'B', 'C', 'FOAM_INST_DIR'), fc.constantFrom('1', 'x y', ''), {
      maxKeys: 3,
    }),
    limits: fc.record(
      {
        runtime: fc.constantFrom('1h', '30m', '48h'),
        memory: fc.constantFrom('4G', '512G'),
        cpu: fc.constantFrom('2h', '90'),
        tasks: fc.integer({ min: 1, max: 64 }),
      },
      { requiredKeys: [] },
    ),
    preExec: fc.constantFrom('./pre.sh', 'true'),
    postExec: fc.constantFrom('./post.sh'),
    stdout: fc.constantFrom('o-%J.out', 'out.txt'),
    stderr: fc.constantFrom('e-%J.err'),
  },
  { requiredKeys: [] },
);

/** The options a user would type for `v`, in order. */
function typedOptions(v: JobValues): Array<[keyof SubmitFlags, string]> {
  const out: Array<[keyof SubmitFlags, string]> = [];
  const scalar: Array<[keyof JobValues, keyof SubmitFlags]> = [
    ['app', 'app'],
    ['queue', 'queue'],
    ['name', 'name'],
    ['tasks', 'tasks'],
    ['resreq', 'resreq'],
    ['preExec', 'preExec'],
    ['postExec', 'postExec'],
    ['stdout', 'output'],
    ['stderr', 'error'],
  ];
  for (const [k, flag] of scalar) if (v[k] !== undefined) out.push([flag, String(v[k])]);
  for (const [k, value] of Object.entries(v.env ?? {})) out.push(['env', `${k}=${value}`]);
  for (const [k, value] of Object.entries(v.limits ?? {})) out.push(['limit', `${k}=${String(value)}`]);
  return out;
}

/**
 * One command line holding every layer's options in order: a repeated option keeps its last
 * value (as commander does), a repeated `-e NAME` / `-l NAME` only its last value (a user types a
 * variable once).
 */
function typedFlags(layers: readonly JobValues[]): SubmitFlags {
  const flags: Record<string, string | string[]> = {};
  const perName = { env: new Map<string, string>(), limit: new Map<string, string>() };
  for (const v of layers)
    for (const [flag, value] of typedOptions(v)) {
      if (flag === 'env' || flag === 'limit') perName[flag].set(value.slice(0, value.indexOf('=')), value);
      else flags[flag] = value;
    }
  for (const k of ['env', 'limit'] as const) if (perName[k].size > 0) flags[k] = [...perName[k].values()];
  return flags as SubmitFlags;
}

const outcome = (r: MergeResult) =>
  r.ok ? r.effective : { field: r.error.field, message: r.error.message, profileValue: r.error.profileValue };

test('property: a random preset stack expands to the same job as typing it, and the merge answers the same', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom('site', 'user') as fc.Arbitrary<'site' | 'user'>, arbValues), {
        maxLength: 5,
      }),
      arbValues,
      // A random profile (mostly refusals) or the built-in default (mostly accepted): both paths of the merge.
      fc.oneof(arbFullProfile, fc.constant(builtinDefaultProfile('default'))),
      (stack, commandLine, profile) => {
        const layers: PresetLayer[] = stack.map(([source, values], i) => ({ source, preset: preset(`p${i}`, values) }));
        const cli = buildJobSpec(typedFlags([commandLine]), ['./run.sh'], '/w');
        const expanded = expandPresets(layers, cli).job;
        const typed = buildJobSpec(typedFlags([...stack.map(([, v]) => v), commandLine]), ['./run.sh'], '/w');
        assert.deepEqual(expanded, typed);
        assert.deepEqual(outcome(merge(profile, jobOwnValues(expanded))), outcome(merge(profile, jobOwnValues(typed))));
      },
    ),
    { numRuns: 300 },
  );
});
