// The shape of a preset file (one preset per file: a user's `~/.config/xce/presets/NAME.yaml` or a
// site preset, `presets/NAME.yaml` beside the cluster configuration) and the values a preset holds.
// A preset holds what the user would like (brief, "Profiles hold requirements; preferences go
// into presets"): any of the job's own values, never a profile's. It carries no privilege: what it
// sets is submitted as if typed, and the additive rule judges it like typed values.
//
// Strict like the configuration files (a typo must not pass silently); meaning (resreq syntax,
// units, env names, the file's name) is checked by presets.ts. Exported as JSON Schema to
// configs/schema/preset.schema.json for editors.

import { z } from 'zod';
import { Command, Duration, EnvValues, Name, PositiveInt, Size } from './config-schema.js';

export const PresetSchema = z
  .strictObject({
    name: Name.meta({ description: 'The preset name; the same as the file name without `.yaml`.' }),
    description: z.string().optional(),
    app: Name.optional().meta({
      description: 'The application profile it is meant for; using the preset sets `--app` to it.',
    }),
    queue: Name.optional().meta({ description: '`-q`: the queue.' }),
    tasks: PositiveInt.optional().meta({ description: "`-n`: the task count (within the profile's range)." }),
    resreq: z.string().optional().meta({
      description: '`-R`: select / rusage / span / same / order to ADD to the profile\'s, e.g. "span[ptile=32]".',
    }),
    env: EnvValues.optional().meta({
      description: '`-e`: environment variables of the job; XCE_* names are reserved.',
    }),
    limits: z
      .strictObject({
        runtime: Duration.optional(),
        memory: Size.optional(),
        cpu: Duration.optional(),
        tasks: PositiveInt.optional(),
      })
      .optional()
      .meta({ description: "`-l`: limits below the profile's maximums." }),
    output: z.string().min(1).optional().meta({ description: '`-o`: the stdout file (pattern).' }),
    error: z.string().min(1).optional().meta({ description: '`--error`: the stderr file (pattern).' }),
    job_name: Name.optional().meta({ description: '`-J`: the job name.' }),
    pre_exec: Command.optional().meta({ description: "`--pre-exec`: the job's own pre-exec (if the profile allows)." }),
    post_exec: Command.optional().meta({
      description: "`--post-exec`: the job's own post-exec (if the profile allows).",
    }),
  })
  .meta({ description: 'An XCE preset: job values a user would like, expanded by the client at submit.' });

export type RawPreset = z.output<typeof PresetSchema>;

export type { JobValues, Preset, PresetSource, SitePreset } from './preset-types.js';

/** The JSON Schema written to configs/schema/preset.schema.json. */
export function presetJsonSchema(): Record<string, unknown> {
  return {
    ...(z.toJSONSchema(PresetSchema, { io: 'input' }) as Record<string, unknown>),
    $id: 'https://xce.example/schema/preset.schema.json',
    title: 'XCE preset',
  };
}
