// The xceadmin program: one commander program, each subcommand group in its own module under
// cli/admin/. Add a group by registering it here (`config` now; tokens, cluster status, leadership
// transfer and membership come with the daemon).

import { Command, CommanderError } from 'commander';
import { registerConfigBuild } from './config-build.js';
import { ConfigDirError } from '../../daemon/config-files.js';
import { registerConfigSchema } from './config-schema-export.js';
import { registerDrill } from './drill.js';
import { registerOpenApi } from './openapi-export.js';
import { registerAccounting } from './accounting.js';
import { registerLive } from './live.js';
import { EXIT } from '../output.js';
import { timeoutOption } from '../connect.js';

export function adminProgram(): Command {
  const program = new Command('xceadmin')
    .description('XCE cluster administration')
    .addOption(timeoutOption())
    .showHelpAfterError()
    .exitOverride();
  const config = program.command('config').description('cluster configuration: offline validation and schemas');
  registerConfigBuild(config);
  registerConfigSchema(config);
  registerLive(program, config);
  registerDrill(program);
  registerOpenApi(program);
  registerAccounting(program);
  return program;
}

/** Runs xceadmin with `argv` (as process.argv); returns the exit status. */
export async function runAdmin(argv: readonly string[]): Promise<number> {
  const program = adminProgram();
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (e instanceof ConfigDirError) {
      process.stderr.write(`xceadmin: ${e.message}\n`);
      return EXIT.usage;
    }
    throw e;
  }
}
