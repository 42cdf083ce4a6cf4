#!/usr/bin/env node
// The size rules of README's "Conventions": no file over 400 lines and no function over 70 lines,
// outside generated code (schema/*.ts), tests, and the exceptions listed below with their reason.
// `node scripts/sizes.mjs` lists what breaks a rule and exits 1; `npm test` runs it.
import { createRequire } from 'node:module';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const FOLDERS = require('./folders.cjs');
const root = fileURLToPath(new URL('..', import.meta.url));

const FILE_LINES_MAX = 400;
const FUNCTION_LINES_MAX = 70;
/** file:function → why it may be longer (CLI command builders: one declarative list of options). */
const EXCEPTIONS = new Map([
  ['cli/xcecli-program.ts:cliProgram', 'the CLI command builder: one declarative list of commands and options'],
  ['cli/admin/live.ts:registerLive', 'a CLI command builder: the live admin commands and their options'],
  ['cli/admin/drill.ts:registerDrill', 'a CLI command builder: the drill command and its options'],
]);

/** @param {string} dir @returns {string[]} */
function sources(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts') && !/\.test\.ts$|\.contract\.ts$/.test(name))
      out.push(path);
  }
  return out;
}

/** @param {import('typescript').Node} node @param {import('typescript').SourceFile} sf */
function nameOf(node, sf) {
  if (node.name) return node.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return `${node.parent.name?.getText(sf) ?? 'class'}.constructor`;
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p)) return p.name.getText(sf);
  if (p && ts.isPropertyAssignment(p)) return p.name.getText(sf);
  return '(anonymous)';
}

const problems = [];
for (const folder of FOLDERS) {
  if (folder === 'schema') continue;
  for (const file of sources(join(root, folder))) {
    const rel = relative(root, file);
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length;
    if (lines > FILE_LINES_MAX) problems.push(`${rel}: ${lines} lines (at most ${FILE_LINES_MAX})`);
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
        const end = sf.getLineAndCharacterOfPosition(node.end).line + 1;
        const name = nameOf(node, sf);
        if (end - start + 1 > FUNCTION_LINES_MAX && !EXCEPTIONS.has(`${rel}:${name}`)) {
          problems.push(
            `${rel}:${start}: function ${name} has ${end - start + 1} lines (at most ${FUNCTION_LINES_MAX})`,
          );
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
}
for (const p of problems) console.error(p);
process.exit(problems.length === 0 ? 0 : 1);
