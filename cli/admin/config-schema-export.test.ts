// The checked-in JSON Schemas (configs/schema/*.schema.json) must be what the zod schemas generate:
// a stale file fails here; `xceadmin config schema` rewrites them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configSchemaTexts, staleConfigSchemas } from './config-schema-export.js';

const DIR = fileURLToPath(new URL('../../../configs/schema/', import.meta.url));

test('configs/schema holds one JSON Schema per configuration file, and nothing else', () => {
  assert.deepEqual(readdirSync(DIR).sort(), [...configSchemaTexts().keys()].sort());
});

test('the checked-in JSON Schemas are current (run `xceadmin config schema` when this fails)', () => {
  for (const [name, text] of configSchemaTexts()) {
    assert.deepEqual(JSON.parse(readFileSync(`${DIR}/${name}`, 'utf8')), JSON.parse(text), `${name} is stale`);
  }
  assert.deepEqual(staleConfigSchemas(DIR), []);
});

test('the schemas refuse unknown keys and state the only mode', () => {
  const apps = JSON.parse(configSchemaTexts().get('applications.schema.json') as string) as {
    properties: { applications: { items: { additionalProperties: boolean; properties: { mode: { const: string } } } } };
  };
  assert.equal(apps.properties.applications.items.additionalProperties, false);
  assert.equal(apps.properties.applications.items.properties.mode.const, 'direct');
});
