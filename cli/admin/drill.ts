// `xceadmin drill`: the failover drill (harness/drill/). Without --attach it starts its own
// three-node cluster with workers on 127.0.0.1, as `npm run drill` does. With --attach it drives the
// running cluster the controller list names (--controllers, XCE_CONTROLLERS or the config file),
// as the logged-in user (`xcecli login`): submits, reads, kills and requeues of its own jobs only,
// leadership transfers, and with --allow-kill SIGKILL/SIGSTOP of controller processes on this
// machine, which a supervisor must restart (`npm run cluster` does; systemd's Restart=always does).

import type { Command } from 'commander';
import { EXIT } from '../output.js';
import { positiveInteger } from '../numeric-flags.js';
import { readToken, resolveControllers, resolveTls } from '../settings.js';

interface DrillFlags {
  attach?: boolean;
  controllers?: string;
  duration: string;
  seed?: string;
  faults?: string;
  minFaults?: string;
  apps?: string;
  allowKill?: boolean;
  comeBackMs?: string;
  json?: string;
}

/** The drill's default duration (harness/drill/drill.ts DRILL_DURATION_S_DEFAULT). */
const DURATION_S_DEFAULT = 60;

class DrillUsageError extends Error {}

function positive(flag: string, text: string): number {
  try {
    return positiveInteger(`--${flag}`, text);
  } catch (err) {
    throw new DrillUsageError((err as Error).message);
  }
}

export function registerDrill(program: Command): void {
  program
    .command('drill')
    .description(
      'failover drill: load, faults on a seeded schedule, then checks (nothing lost or doubled, identical state, linearizable history)',
    )
    .option('--attach', 'drive the running cluster (--controllers) instead of starting one')
    .option('--controllers <list>', 'controller addresses (with --attach)')
    .option('--duration <s>', 'seconds of load and faults', String(DURATION_S_DEFAULT))
    .option('--seed <n>', 'seed of the fault schedule (printed; replays the schedule)')
    .option(
      '--faults <kinds>',
      'only these fault kinds: kill-leader, kill-follower, pause-node, transfer-leader, wipe-follower, partition',
    )
    .option('--min-faults <n>', 'go on past --duration until this many faults were injected')
    .option('--apps <list>', 'with --attach: profiles to submit under (default: the cluster default)')
    .option('--allow-kill', 'with --attach: may SIGKILL and SIGSTOP controller processes on this machine')
    .option('--come-back-ms <ms>', 'with --attach: how long a killed controller may take to come back', '30000')
    .option('--json <file>', 'also write the report as JSON')
    .action(async function (this: Command) {
      const f = this.opts<DrillFlags>();
      try {
        if (!f.attach)
          for (const [flag, v] of [
            ['controllers', f.controllers],
            ['apps', f.apps],
            ['allow-kill', f.allowKill],
          ] as const)
            if (v !== undefined)
              throw new DrillUsageError(`--${flag} needs --attach (without it the drill starts its own cluster)`);
        const { drillCommand, parseFaultKinds } = await import('../../harness/drill/run.js');
        let kinds;
        try {
          kinds = f.faults === undefined ? undefined : parseFaultKinds(f.faults);
        } catch (err) {
          throw new DrillUsageError((err as Error).message);
        }
        const duration_s = positive('duration', f.duration);
        const seed = f.seed === undefined ? Math.floor(Math.random() * 1_000_000) + 1 : positive('seed', f.seed);
        let attach;
        if (f.attach) {
          const token = readToken();
          if (token === undefined)
            throw new DrillUsageError(
              '--attach needs a login: run `xcecli login` as an admin first (or set XCE_TOKEN)',
            );
          attach = {
            controllers: resolveControllers(f.controllers),
            token,
            tls: resolveTls(),
            ...(f.apps
              ? {
                  apps: f.apps
                    .split(',')
                    .map((a) => a.trim())
                    .filter((a) => a !== ''),
                }
              : {}),
            allowKill: f.allowKill === true,
            comeBack_ms: positive('come-back-ms', f.comeBackMs ?? '30000'),
          };
        }
        const minFaults = f.minFaults === undefined ? 0 : positive('min-faults', f.minFaults);
        process.exitCode = await drillCommand({
          duration_s,
          seed,
          minFaults,
          ...(kinds ? { kinds } : {}),
          ...(attach ? { attach } : {}),
          ...(f.json ? { json: f.json } : {}),
        });
      } catch (err) {
        process.stderr.write(`xceadmin drill: ${(err as Error).message}\n`);
        // AttachError (harness/drill/target.ts, loaded lazily): no controller answered.
        process.exitCode =
          err instanceof DrillUsageError
            ? EXIT.usage
            : (err as Error).name === 'AttachError'
              ? EXIT.unavailable
              : EXIT.internal;
      }
    });
}
