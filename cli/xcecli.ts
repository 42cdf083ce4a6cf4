#!/usr/bin/env node
// xcecli: the users' command line (see cli/xcecli-program.ts for its commands).
import { runCli } from './xcecli-program.js';

process.exitCode = await runCli(process.argv);
