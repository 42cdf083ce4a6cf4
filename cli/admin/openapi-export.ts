// Writes (or checks) the REST API's OpenAPI document, api/openapi.json, from the route table and
// the zod schemas (api/openapi.ts); the controllers serve the same document at GET /v1/openapi.json.
//   xceadmin openapi [--out FILE]            write it
//   xceadmin openapi --check [--out FILE]    exit 1 when the checked-in file is stale
//   xceadmin openapi --out -                 print it
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { openApiDocument } from '../../api/openapi.js';
import { readOrNull, writeOrCheck } from './generated-files.js';

/** The document as the checked-in file holds it (2-space JSON, a final newline). */
export function openApiText(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

/** Whether `file` holds the current document (false when it is missing or differs). */
export function openApiCurrent(file: string): boolean {
  return readOrNull(file) === openApiText();
}

export function registerOpenApi(program: Command): void {
  program
    .command('openapi')
    .description('write the REST API’s OpenAPI 3.1 document (served at GET /v1/openapi.json), or --check it')
    .option('--out <file>', 'where it goes (- for stdout)', 'api/openapi.json')
    .option('--check', 'write nothing; exit 1 when the file is missing or stale')
    .action((opts: { out: string; check?: boolean }) => {
      if (opts.out === '-') {
        process.stdout.write(openApiText());
        return;
      }
      writeOrCheck('openapi', opts, {
        stale: () => (openApiCurrent(opts.out) ? null : `${opts.out} is stale or missing`),
        write: () => {
          writeFileSync(opts.out, openApiText());
          return `wrote ${opts.out}`;
        },
      });
    });
}
