// `xcecli presets list|show|diff|pull|check`: a user's presets beside the site's (served read-only
// by the controllers). Presets are handled by the client: these commands read the user's folder,
// ask the controllers for site presets, and `check` asks for a dry run, nothing else.

import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { formatDiagnostic } from '../../model/diagnostics.js';
import { PresetError } from '../../model/preset-expand.js';
import type { XceClient } from '../client.js';
import { EXIT, printable, table } from '../output.js';
import { UsageError } from '../submit-args.js';
import { getSitePreset } from './site.js';
import { pulledHeader, readUserPreset, userPresetDir, writeUserPreset } from './user-files.js';
import { checkPresets, presetChanges, presetListing, presetShow, type PresetChange } from './views.js';
import { sitePresetOf } from './site.js';

interface Globals {
  json?: boolean;
  stale?: boolean;
}
type Run = (fn: (c: XceClient, g: Globals, color: boolean) => Promise<void>) => () => Promise<void>;
type Print = (g: Globals, result: unknown, human: () => string) => void;

const problemsText = (problems: readonly Parameters<typeof formatDiagnostic>[0][]): string =>
  problems.length === 0 ? '' : `${problems.map((d) => printable(formatDiagnostic(d))).join('\n')}\n`;

function renderChanges(name: string, changes: readonly PresetChange[], header: string): string {
  if (changes.length === 0) return `${header}\nNo difference: your copy of ${name} sets what the site's does.\n`;
  const rows = changes.map((c) => [c.option, c.user ?? '(not set)', c.site ?? '(not set)']);
  return `${header}\n${table(['OPTION', 'YOURS', 'SITE'], rows)}`;
}

/** Runs FN with a client, the global options and the command's arguments when CMD is called. */
function command<A extends unknown[]>(
  run: Run,
  cmd: Command,
  fn: (c: XceClient, g: Globals, ...args: A) => Promise<void>,
): Command {
  return cmd.action(async (...args: unknown[]) => run((c, g) => fn(c, g, ...(args as A)))());
}

/** `presets VERB NAME`: a command on one preset, named by its argument (then its options, if any). */
function onePreset<A extends unknown[]>(
  { presets, run }: Ctx,
  verb: string,
  description: string,
  fn: (c: XceClient, g: Globals, name: string, ...options: A) => Promise<void>,
): Command {
  return command(run, presets.command(verb).description(description).argument('<name>', 'preset name'), fn);
}

interface Ctx {
  readonly presets: Command;
  readonly run: Run;
  readonly print: Print;
  readonly setCode: (code: number) => void;
}

export function registerPresets(program: Command, run: Run, print: Print, setCode: (code: number) => void): void {
  const presets = program
    .command('presets')
    .description(
      `presets: job values you would like (site presets from the cluster, yours in ${userPresetDir()}); use with jobs submit --preset`,
    );
  const ctx: Ctx = { presets, run, print, setCode };
  registerList(ctx);
  registerShow(ctx);
  registerDiff(ctx);
  registerPull(ctx);
  registerCheck(ctx);
}

function registerList({ presets, run, print, setCode }: Ctx): void {
  command(
    run,
    presets
      .command('list')
      .description('site and user presets with their version hash; a user preset of a site name shadows it'),
    async (c, g) => {
      const r = await presetListing(c, g.stale === true);
      if (r.problems.length > 0 && !g.json) process.stderr.write(problemsText(r.problems));
      print(g, r, () =>
        table(
          ['NAME', 'SOURCE', 'VERSION', 'APP', 'SHADOWS SITE', 'DESCRIPTION'],
          r.presets.map((p) => [
            printable(p.name),
            p.source,
            p.label,
            printable(p.app ?? '-'),
            p.source === 'user' ? (p.shadowsSite ? 'yes' : 'no') : '-',
            printable(p.description ?? ''),
          ]),
        ),
      );
      if (r.problems.length > 0) setCode(EXIT.refused);
    },
  );
}

function registerShow(ctx: Ctx): void {
  const { print } = ctx;
  const about = 'what --preset NAME sets: each value with its origin (site, or your file overriding it)';
  onePreset(ctx, 'show', about, async (c, g, name) => {
    const r = await presetShow(c, name, readUserPreset(name), g.stale === true).catch((e: unknown) => {
      throw e instanceof PresetError ? new UsageError(e.message) : e;
    });
    print(g, r, () => {
      const lines = [`Preset ${printable(name)}`];
      if (r.site) lines.push(`  site   ${r.site.label}   ${r.site.file}   ${printable(r.site.description ?? '')}`);
      if (r.user)
        lines.push(`  user   ${r.user.label}   ${r.user.file}   ${printable(r.user.preset.description ?? '')}`);
      const rows = r.values.map((v) => [v.option, printable(v.value), v.origin]);
      return `${lines.join('\n')}\n${table(['OPTION', 'VALUE', 'ORIGIN'], rows)}`;
    });
  });
}

function registerDiff(ctx: Ctx): void {
  const { print, setCode } = ctx;
  const about = "your copy of a site preset against the site's current version (exit 1 when they differ)";
  onePreset(ctx, 'diff', about, async (c, g, name) => {
    const user = readUserPreset(name);
    if (user === null)
      throw new UsageError(
        `you have no preset ${name} (${userPresetDir()}/${name}.yaml); presets pull ${name} copies it`,
      );
    const site = await getSitePreset(c, name, g.stale === true);
    if (site === null) throw new UsageError(`the cluster serves no site preset ${name}; yours is your own`);
    const changes = presetChanges(user.preset, sitePresetOf(site));
    const since =
      user.pulledFrom === null
        ? ''
        : user.pulledFrom === site.label
          ? ` (pulled from ${user.pulledFrom}, still current)`
          : ` (pulled from ${user.pulledFrom}; the site version is now ${site.label})`;
    const header = `${printable(name)}: yours ${user.label} (${user.file}) vs site ${site.label}${since}`;
    const result = {
      name,
      user: user.label,
      site: site.label,
      pulledFrom: user.pulledFrom,
      same: changes.length === 0,
      changes,
    };
    print(g, result, () => renderChanges(name, changes, header));
    if (changes.length > 0) setCode(EXIT.refused);
  });
}

function registerPull(ctx: Ctx): void {
  const { print } = ctx;
  const about = 'copy a site preset into your presets folder (--force replaces your copy)';
  onePreset(ctx, 'pull', about, async (c, g, name, o: { force?: boolean }) => {
    const site = await getSitePreset(c, name);
    if (site === null) throw new UsageError(`the cluster serves no site preset ${name} (see xcecli presets list)`);
    const target = `${userPresetDir()}/${name}.yaml`;
    if (!o.force && (existsSync(target) || existsSync(`${userPresetDir()}/${name}.yml`)))
      throw new UsageError(
        `${target} exists; see what differs with \`xcecli presets diff ${name}\`, replace it with --force`,
      );
    const file = writeUserPreset(name, pulledHeader(site.label) + site.text);
    print(g, { name, label: site.label, file }, () => `Copied site preset ${site.label} to ${file}\n`);
  }).option('--force', 'replace your copy if you have one');
}

function registerCheck({ presets, run, print, setCode }: Ctx): void {
  command(
    run,
    presets
      .command('check')
      .description(
        'judge each preset (or those named) against the current profiles by a dry run; exit 1 on any refusal',
      )
      .argument('[names...]', 'preset names (default: every site and user preset)'),
    async (c, g, names: string[]) => {
      const r = await checkPresets(c, names).catch((e: unknown) => {
        throw e instanceof PresetError ? new UsageError(e.message) : e;
      });
      print(g, r, () => {
        const lines = r.checks.map((x) =>
          x.ok
            ? `ok       preset ${x.name} (${x.sources.join(' + ')})`
            : `refused  preset ${x.name} (${x.sources.join(' + ')}): ${printable(x.refusal ?? '')}`,
        );
        const bad = r.checks.filter((x) => !x.ok).length + r.problems.length;
        lines.push(
          bad === 0
            ? `presets check: ${r.checks.length} preset(s), all accepted by the current profiles`
            : `presets check: ${bad} problem(s): change the preset, or ask the admin about the profile value named`,
        );
        return problemsText(r.problems) + lines.join('\n') + '\n';
      });
      if (r.problems.length > 0 || r.checks.some((x) => !x.ok)) setCode(EXIT.refused);
    },
  );
}
