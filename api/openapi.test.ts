// The OpenAPI document: valid OpenAPI 3.1 (checked by @seriousme/openapi-schema-validator, against
// the specification's own JSON Schema), current in its checked-in copy, and the route table's exact
// image: every operation of the client API has a route, every route is in the document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument } from './openapi.js';
import { OPS } from './protocol.js';
import { OPENAPI_PATH, REST_ROUTES, matchRoute } from './rest-routes.js';
import { routeArgs } from './rest-args.js';
import { openApiCurrent } from '../cli/admin/openapi-export.js';

const CHECKED_IN = fileURLToPath(new URL('../../api/openapi.json', import.meta.url));

type Doc = { paths: Record<string, Record<string, { operationId: string }>> };

test('the document is valid OpenAPI 3.1', async () => {
  const v = new Validator();
  const r = await v.validate(openApiDocument());
  assert.equal(v.version, '3.1');
  assert.deepEqual(r, { valid: true });
});

test('api/openapi.json is current (run `xceadmin openapi` when this fails)', () => {
  assert.ok(openApiCurrent(CHECKED_IN), 'api/openapi.json is stale: run `npx xceadmin openapi --out api/openapi.json`');
});

test('every operation of the client API has exactly one route, and the document lists every route', () => {
  assert.deepEqual([...REST_ROUTES.map((r) => r.op)].sort(), [...OPS].sort());
  const doc = openApiDocument() as Doc;
  const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
  const routes = [...REST_ROUTES.map((r) => `${r.method.toLowerCase()} ${r.path}`), `get ${OPENAPI_PATH}`];
  assert.deepEqual(listed.sort(), routes.sort());
});

test('a route is matched with its path parameters; another method on it is told apart from no route', () => {
  const m = matchRoute('POST', '/v1/jobs/12/kill');
  assert.equal(m.kind, 'route');
  assert.ok(m.kind === 'route' && m.route.op === 'jobs.kill' && m.params['id'] === '12');
  assert.deepEqual(matchRoute('PATCH', '/v1/jobs'), { kind: 'method', allowed: ['GET', 'POST'] });
  assert.deepEqual(matchRoute('GET', '/v1/nothing'), { kind: 'none' });
});

test('arguments come from the path, the query and the body, and a bad one is named with where it was', () => {
  const list = REST_ROUTES.find((r) => r.op === 'jobs.list')!;
  const ok = routeArgs(list, {}, new URLSearchParams('state=PEND&limit=5&stale=true'), undefined);
  assert.deepEqual(ok, { ok: true, args: { state: 'PEND', limit: 5 }, stale: true });
  const bad = routeArgs(list, {}, new URLSearchParams('limit=x&color=red'), undefined);
  assert.equal(bad.ok, false);
  assert.deepEqual(!bad.ok && bad.invalid.map((i) => [i.name, i.in]), [['color', 'query']]);
  const badLimit = routeArgs(list, {}, new URLSearchParams('limit=0'), undefined);
  assert.deepEqual(!badLimit.ok && badLimit.invalid.map((i) => [i.name, i.in]), [['limit', 'query']]);
  const submit = REST_ROUTES.find((r) => r.op === 'jobs.submit')!;
  const badJob = routeArgs(submit, {}, new URLSearchParams(), { command: ['x'], tasks: -1 });
  assert.deepEqual(!badJob.ok && badJob.invalid.map((i) => [i.name, i.in]), [['tasks', 'body']]);
  const show = REST_ROUTES.find((r) => r.op === 'jobs.show')!;
  const badId = routeArgs(show, { id: 'abc' }, new URLSearchParams(), undefined);
  assert.deepEqual(!badId.ok && badId.invalid.map((i) => [i.name, i.in]), [['id', 'path']]);
  const role = REST_ROUTES.find((r) => r.op === 'roles.set')!;
  const twice = routeArgs(role, { name: 'x' }, new URLSearchParams(), { name: 'y', permissions: [] });
  assert.deepEqual(!twice.ok && twice.invalid.map((i) => [i.name, i.in]), [['name', 'body']]);
});
