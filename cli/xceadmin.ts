#!/usr/bin/env node
// xceadmin: the administrators' command line (see cli/admin/program.ts for its subcommands).
import { runAdmin } from './admin/program.js';

process.exitCode = await runAdmin(process.argv);
