// `xceadmin config build DIR [--json]`: validates a configuration directory offline with the same
// loader the controller uses at start and on live upgrade, and prints every error and warning, each
// naming the file, the entry and the field (line:column where the YAML gives them). Exit status 1
// on any error, 0 otherwise (warnings alone do not fail the build).

import type { Command } from 'commander';
import { loadConfig } from '../../model/config.js';
import type { ClusterConfig, Diagnostic } from '../../model/config-types.js';
import { formatDiagnostic } from '../../model/diagnostics.js';
import { profileHash, profileLabel } from '../../model/profile-hash.js';
import { presetLabel } from '../../model/presets.js';
import { readConfigDir } from '../../daemon/config-files.js';
import { EXIT } from '../output.js';

export interface BuildReport {
  readonly ok: boolean;
  readonly dir: string;
  readonly errors: readonly Diagnostic[];
  readonly warnings: readonly Diagnostic[];
  /** On success: each profile with its content-hash label, the aliases and the default. */
  readonly profiles?: ReadonlyArray<{
    readonly name: string;
    readonly label: string;
    readonly hash: string;
    readonly aliases: readonly string[];
  }>;
  readonly defaultApplication?: string;
  /** On success: each site preset (presets/*.yaml) with its content-hash label. */
  readonly presets?: ReadonlyArray<{ readonly name: string; readonly label: string; readonly hash: string }>;
}

export function buildConfigDir(dir: string): BuildReport {
  const r = loadConfig(readConfigDir(dir));
  if (!r.ok) return { ok: false, dir, errors: r.errors, warnings: r.warnings };
  return { ok: true, dir, errors: [], warnings: r.warnings, ...summary(r.config) };
}

function summary(c: ClusterConfig): Pick<BuildReport, 'profiles' | 'defaultApplication' | 'presets'> {
  return {
    profiles: [...c.profiles.values()].map((p) => {
      const hash = profileHash(p);
      return { name: p.name, label: profileLabel(p.name, hash), hash, aliases: p.aliases };
    }),
    defaultApplication: c.cluster.defaultApplication,
    presets: [...c.presets.values()].map((p) => ({
      name: p.preset.name,
      label: presetLabel(p.preset.name, p.hash),
      hash: p.hash,
    })),
  };
}

export function renderBuildReport(r: BuildReport): string {
  const lines = [...r.errors, ...r.warnings].map(formatDiagnostic);
  const counts = `${r.errors.length} error${r.errors.length === 1 ? '' : 's'}, ${r.warnings.length} warning${r.warnings.length === 1 ? '' : 's'}`;
  if (r.ok) {
    const profiles = (r.profiles ?? [])
      .map((p) => p.label + (p.aliases.length ? ` (aliases: ${p.aliases.join(', ')})` : ''))
      .join(', ');
    lines.push(
      `config build: ${r.dir} is valid (${counts}); profiles: ${profiles}; default_application: ${r.defaultApplication}` +
        `; site presets: ${(r.presets ?? []).map((p) => p.label).join(', ') || '(none)'}`,
    );
  } else {
    lines.push(`config build: ${r.dir} is refused (${counts})`);
  }
  return `${lines.join('\n')}\n`;
}

export function registerConfigBuild(config: Command): void {
  config
    .command('build')
    .description('validate a configuration directory offline; print every error and warning; exit 1 on any error')
    .argument('<dir>', 'the directory holding xce.yaml, applications.yaml, queues.yaml, ..., and presets/*.yaml')
    .option('--json', 'machine-readable output')
    .action((dir: string, opts: { json?: boolean }) => {
      const report = buildConfigDir(dir);
      if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else (report.ok ? process.stdout : process.stderr).write(renderBuildReport(report));
      process.exitCode = report.ok ? EXIT.ok : EXIT.refused;
    });
}
