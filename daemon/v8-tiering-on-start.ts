// Imported for its effect, first of xcectld's imports: sets V8's interrupt budget (v8-tiering.ts)
// before the controller's modules run any code. ESM evaluates a module's imports in order, so every
// later import's code starts with the flag in force.
import { setFlagsFromString } from 'node:v8';
import { tieringFlags } from './v8-tiering.js';

for (const flag of tieringFlags(process.execArgv, process.env['NODE_OPTIONS'])) setFlagsFromString(flag);
