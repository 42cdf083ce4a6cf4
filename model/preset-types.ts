// The values a preset holds and a site preset as the configuration holds it: types only, so that
// the configuration's types (config-types.ts) can name them without importing the preset schema.

/**
 * A job's own values as a client types them (structurally the API's JobSpec without the command
 * and working directory): what a preset sets and what a command line sets.
 */
export interface JobValues {
  readonly app?: string;
  readonly queue?: string;
  readonly name?: string;
  readonly tasks?: number;
  readonly resreq?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly limits?: {
    readonly runtime?: string;
    readonly memory?: string;
    readonly cpu?: string;
    readonly tasks?: number;
  };
  readonly preExec?: string;
  readonly postExec?: string;
  readonly stdout?: string;
  readonly stderr?: string;
}

export interface Preset {
  readonly name: string;
  readonly description: string | null;
  readonly values: JobValues;
}

export type PresetSource = 'site' | 'user';

/** A site preset as the configuration holds it (config-presets.ts). */
export interface SitePreset {
  readonly preset: Preset;
  /** `presets/cfd-big.yaml`. */
  readonly file: string;
  /** The file as the admin wrote it (what `xcecli presets pull` copies). */
  readonly text: string;
  readonly hash: string;
}
