// The REST API's OpenAPI 3.1 document, generated from the route table (api/rest-routes.ts) and
// the operations' zod schemas (api/protocol.ts) with zod's own JSON Schema export (draft 2020-12,
// the dialect OpenAPI 3.1 uses). Served at GET /v1/openapi.json and checked in as api/openapi.json
// (api/openapi.test.ts fails when that copy is stale; `xceadmin openapi --write api/openapi.json`
// rewrites it).
//
// The answers' shapes are TypeScript types (api/responses.ts), not zod schemas: the document names
// each one and describes it as an object; the errors are described in full (Problem).

import { z } from 'zod';
import { JobSpec, OP_ARGS, type Op } from './protocol.js';
import { IDEMPOTENCY_HEADER, OPENAPI_PATH, REST_ROUTES, STALE_PARAM, isWrite, pathParams } from './rest-routes.js';
import type { RestRoute } from './rest-routes.js';

type Json = Record<string, unknown>;

/** The result type (api/responses.ts) each operation answers. */
const RESULT_TYPES: Record<Op, string> = {
  login: 'LoginResult',
  'jobs.submit': 'SubmitResult | DryRunResult',
  'jobs.list': 'JobList',
  'jobs.show': 'JobDetails',
  'jobs.history': 'JobHistory',
  'accounting.report': 'AccountingReport',
  'jobs.kill': 'ControlResult',
  'jobs.requeue': 'ControlResult',
  'jobs.hold': 'ControlResult',
  'jobs.release': 'ControlResult',
  'jobs.suspend': 'ControlResult',
  'jobs.resume': 'ControlResult',
  'jobs.modify': 'ModifyResult',
  'jobs.peek': 'PeekResult',
  'hosts.close': 'HostControlResult',
  'hosts.open': 'HostControlResult',
  'queues.list': 'QueueList',
  'queues.show': 'QueueRow',
  'jobs.restart': 'ControlResult',
  'apps.list': 'AppList',
  'apps.show': 'AppDetail',
  'presets.list': 'SitePresetList',
  'presets.get': 'SitePresetDetail',
  'config.upgrade': 'ConfigUpgradeResult',
  'cluster.status': 'ClusterStatus',
  'hosts.list': 'HostList',
  'cluster.transferLeader': 'TransferResult',
  'cluster.addMember': 'MembershipResult',
  'cluster.removeMember': 'MembershipResult',
  'token.issue': 'LoginResult',
  'roles.list': 'RoleList',
  'roles.set': 'RoleChangeResult',
  'roles.delete': 'RoleChangeResult',
};

function jsonSchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Json;
  return rest;
}

const PROBLEM: Json = {
  type: 'object',
  description: 'RFC 9457 problem details; `detail` names the field, the permission or the profile value',
  required: ['type', 'title', 'status', 'detail', 'code', 'instance'],
  properties: {
    type: { type: 'string', description: '`urn:xce:problem:<code>`' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', description: 'the client API error code (`forbidden`, `bad-request`, ...)' },
    instance: { type: 'string', description: 'the request path' },
    permission: { type: 'string', description: 'with 403: the permission refused' },
    invalidParams: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'in', 'reason'],
        properties: {
          name: { type: 'string' },
          in: { enum: ['path', 'query', 'body', 'header'] },
          reason: { type: 'string' },
        },
      },
    },
    leader: { type: 'object', properties: { id: { type: 'integer' }, address: { type: 'string' } } },
    retryAfter_ms: { type: 'integer' },
  },
};

const ERRORS: Record<string, string> = {
  '400': 'A bad value, named with where it was (`invalidParams`)',
  '401': 'No token, or one that is forged, expired or names a user no longer in users.yaml',
  '403': 'RBAC refused; `permission` names what is missing',
  '404': 'Not found (an unknown job, a profile you may not view, an unknown route)',
  '413': 'The body exceeds 1 MiB',
  '422': 'Refused by admission or apply (e.g. a job value the profile does not allow)',
  '429': 'Too many logins; retry after Retry-After',
  '503': 'No leader, the leader unreachable, or the controller busy; retry (a write with the same Idempotency-Key)',
};

function operation(route: RestRoute): Json {
  const args = jsonSchema(OP_ARGS[route.op]) as { properties?: Record<string, Json>; required?: string[] };
  const props = args.properties ?? {};
  const inPath = pathParams(route);
  const parameters: Json[] = [
    ...inPath.map((name) => ({ name, in: 'path', required: true, schema: props[name] ?? { type: 'string' } })),
    ...Object.entries(route.query ?? {}).map(([name, arg]) => ({ name, in: 'query', schema: props[arg] ?? {} })),
  ];
  if (route.method === 'GET')
    parameters.push({
      name: STALE_PARAM,
      in: 'query',
      description: 'read this node’s state as it is instead of a linearizable read',
      schema: { type: 'boolean' },
    });
  if (isWrite(route)) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  const op: Json = {
    operationId: route.op,
    summary: route.summary,
    description: `Needs: ${route.needs}. The WebSocket API's \`${route.op}\`.`,
    tags: [route.tag],
    parameters,
    responses: responses(route),
  };
  if (route.op === 'login') op['security'] = [];
  if (route.body === 'job')
    op['requestBody'] = {
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/JobSpec' } } },
    };
  else if (route.body === 'args') {
    const body: Json = {
      ...args,
      properties: Object.fromEntries(Object.entries(props).filter(([k]) => !inPath.includes(k))),
    };
    const required = (args.required ?? []).filter((k) => !inPath.includes(k));
    if (required.length > 0) body['required'] = required;
    else delete body['required'];
    op['requestBody'] = { required: required.length > 0, content: { 'application/json': { schema: body } } };
  }
  return op;
}

function responses(route: RestRoute): Json {
  const ok = {
    description: `\`${RESULT_TYPES[route.op]}\` (api/responses.ts)`,
    content: { 'application/json': { schema: { type: 'object' } } },
  };
  const out: Json =
    route.op === 'jobs.submit' ? { '200': { ...ok, description: 'DryRunResult' }, '201': ok } : { '200': ok };
  const codes = Object.keys(ERRORS).filter(
    (c) =>
      (c !== '413' || route.body !== undefined) &&
      (c !== '401' && c !== '403' ? true : route.op !== 'login') &&
      (c !== '429' || route.op === 'login'),
  );
  for (const c of codes) out[c] = { $ref: `#/components/responses/E${c}` };
  return out;
}

/** The whole document: every route of REST_ROUTES and GET /v1/openapi.json. */
export function openApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const r of REST_ROUTES) (paths[r.path] ??= {})[r.method.toLowerCase()] = operation(r);
  paths[OPENAPI_PATH] = {
    get: {
      operationId: 'openapi',
      summary: 'This document',
      tags: ['meta'],
      security: [],
      responses: {
        '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'XCE REST API',
      version: '1.0.0',
      description:
        'The client API of the XCE controllers over HTTP/JSON: the same operations, schemas, RBAC and exactly-once sessions as the WebSocket API at /api. Any controller answers; a follower forwards writes to the leader.',
    },
    tags: ['auth', 'jobs', 'apps', 'cluster', 'admin', 'meta'].map((name) => ({ name })),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      parameters: {
        IdempotencyKey: {
          name: IDEMPOTENCY_HEADER.replace(/(^|-)\w/g, (s) => s.toUpperCase()),
          in: 'header',
          description:
            '`<client>:<seq>`: a client id (8 to 64 characters) and a sequence number; a retry with the same key is applied once. Without it the controller makes one and answers it in the Idempotency-Key header (Idempotency-Key-Source: server).',
          schema: { type: 'string', pattern: '^.{8,64}:[1-9][0-9]*$' },
        },
      },
      schemas: { JobSpec: jsonSchema(JobSpec), Problem: PROBLEM },
      responses: Object.fromEntries(
        Object.entries(ERRORS).map(([c, description]) => [
          `E${c}`,
          {
            description,
            content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
          },
        ]),
      ),
    },
  };
}
