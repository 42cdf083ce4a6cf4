// The REST API (`/v1`) through real controllers with Node's fetch: every route answers its
// success, its RBAC refusal (403 naming the permission), a missing and a forged token (401), a bad
// value (400 naming the field), an oversized body (413); unknown routes are 404; a follower
// forwards writes to the leader; the OpenAPI document served is the generated one and each of its
// routes is served; and a POST retried with the same Idempotency-Key across a SIGKILL of the
// leader creates one job.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { TestCluster, until } from '../harness/cluster.js';
import { openApiDocument } from '../api/openapi.js';
import { REST_ROUTES } from '../api/rest-routes.js';
import { REST_BODY_BYTES_MAX } from '../daemon/rest/server.js';
import { hashPassword } from '../daemon/auth.js';

let cluster: TestCluster;
let work: string;
const tokens = new Map<string, string>();

interface Answer {
  status: number;
  headers: Headers;
  // The JSON answer (or problem), as the test reads it.
  body: Record<string, unknown>;
}

async function call(
  method: string,
  path: string,
  o: {
    user?: string;
    token?: string;
    body?: unknown;
    raw?: string;
    headers?: Record<string, string>;
    node?: number;
  } = {},
): Promise<Answer> {
  const node = o.node ?? (await cluster.waitForLeader());
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  const token = o.token ?? (o.user !== undefined ? tokens.get(o.user) : undefined);
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  let body: string | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  }
  const r = await fetch(`http://${cluster.address(node)}${path}`, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await r.text();
  return {
    status: r.status,
    headers: r.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

function problem(a: Answer, status: number, detail: RegExp): void {
  assert.equal(a.status, status, JSON.stringify(a.body));
  assert.match(a.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(a.body['status'], status);
  assert.match(String(a.body['type']), /^urn:xce:problem:/);
  assert.equal(typeof a.body['title'], 'string');
  assert.match(String(a.body['detail']), detail);
}

function forbidden(a: Answer, permission: string): void {
  problem(a, 403, new RegExp(permission));
  assert.equal(a.body['permission'], permission);
}

function badField(a: Answer, field: string): void {
  problem(a, 400, new RegExp(field.replace('.', '\\.')));
  const names = (a.body['invalidParams'] as Array<{ name: string }>).map((i) => i.name);
  assert.ok(names.includes(field), `invalidParams ${JSON.stringify(names)} names ${field}`);
}

async function login(user: string): Promise<string> {
  const a = await call('POST', '/v1/auth/login', { body: { user, password: `${user}-dev` } });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  return String(a.body['token']);
}

let keySeq = 0;
const KEY_CLIENT = `rest-test-${process.pid}`;
function newKey(): string {
  return `${KEY_CLIENT}:${++keySeq}`;
}

async function submit(
  user: string,
  job: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<number> {
  const a = await call('POST', '/v1/jobs', { user, body: { cwd: work, ...job }, headers });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  return Number(a.body['jobId']);
}

async function waitState(id: number, state: string): Promise<void> {
  await until(
    `job ${id} to reach ${state}`,
    async () => {
      const a = await call('GET', `/v1/jobs/${id}`, { user: 'admin' });
      return a.body['state'] === state || undefined;
    },
    30_000,
    100,
  );
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'xce-rest-'));
  const carolHash = await hashPassword('carol-dev', 1024);
  cluster = await TestCluster.start({
    controllers: 3,
    // carol is a user with no role at all.
    edit: { 'users.yaml': (t) => `${t.trimEnd()}\n  - name: carol\n    groups: []\n    password: "${carolHash}"\n` },
    schedulerGrace_ms: 200,
    workers: [
      { host: 'node01', slots: 8, bools: ['ib', 'x86_64'], nums: { mem: 262144 }, extraArgs: ['--run-as-self'] },
    ],
  });
  for (const u of ['alice', 'bob', 'admin', 'carol']) tokens.set(u, await login(u));
});

after(async () => {
  await cluster.stop();
  rmSync(work, { recursive: true, force: true });
});

test('POST /v1/auth/login: a token; a wrong password is 401, a missing field 400 naming it', async () => {
  assert.match(tokens.get('alice')!, /^ey/);
  problem(await call('POST', '/v1/auth/login', { body: { user: 'alice', password: 'nope' } }), 401, /.+/);
  badField(await call('POST', '/v1/auth/login', { body: { user: 'alice' } }), 'password');
  problem(
    await call('POST', '/v1/auth/login', { raw: '{"user":', headers: { 'content-type': 'application/json' } }),
    400,
    /not JSON/,
  );
});

test('every route but login refuses a missing token and a forged one with 401', async () => {
  const forged = `${tokens.get('admin')!.slice(0, -4)}AAAA`;
  for (const r of REST_ROUTES.filter((x) => x.op !== 'login')) {
    const path = r.path.replace('{id}', '1').replace('{name}', 'python');
    const body = r.body !== undefined ? {} : undefined;
    const none = await call(r.method, path, { body });
    problem(none, 401, /token/);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/, `${r.method} ${r.path}`);
    problem(await call(r.method, path, { token: forged, body }), 401, /token/);
  }
});

/** A request with a body whatever the method (fetch sends none with GET): node:http. */
function rawRequest(method: string, path: string, body: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const [host, port] = cluster.address(cluster.controllers.keys().next().value!).split(':');
    const req = httpRequest({ host, port: Number(port), method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: new Headers(res.headers as Record<string, string>),
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('every route refuses a body over the limit with 413, declared or streamed', async () => {
  const big = 'x'.repeat(REST_BODY_BYTES_MAX + 1);
  const auth = { authorization: `Bearer ${tokens.get('admin')!}`, 'content-type': 'application/json' };
  for (const r of REST_ROUTES) {
    const path = r.path.replace('{id}', '1').replace('{name}', 'python');
    const a = await rawRequest(r.method, path, big, { ...auth, 'content-length': String(big.length) });
    problem(a, 413, new RegExp(`limit of ${REST_BODY_BYTES_MAX} bytes`));
  }
  // Chunked, with no length declared: counted as it comes.
  const c = await rawRequest('POST', '/v1/jobs', big, { ...auth, 'transfer-encoding': 'chunked' });
  problem(c, 413, /more than/);
});

test('unknown routes are 404, a known path with another method 405', async () => {
  const a = await call('GET', '/v1/nothing-here', { user: 'alice' });
  problem(a, 404, /no route GET \/v1\/nothing-here/);
  assert.equal(a.body['code'], 'no-route');
  const m = await call('PATCH', '/v1/jobs', { user: 'alice' });
  problem(m, 405, /GET, POST/);
  assert.equal(m.headers.get('allow'), 'GET, POST');
});

test('POST /v1/jobs: 201 with Location; 403 names queue:submit; 400 names the field; 422 quotes the profile', async () => {
  const id = await submit('alice', { command: ['true'], name: 'rest-submit' });
  const again = await call('GET', `/v1/jobs/${id}`, { user: 'alice' });
  assert.equal(again.body['id'], id);
  forbidden(
    await call('POST', '/v1/jobs', { user: 'bob', body: { queue: 'night', command: ['true'] } }),
    'queue:submit',
  );
  badField(await call('POST', '/v1/jobs', { user: 'alice', body: { command: ['true'], tasks: 0 } }), 'tasks');
  badField(await call('POST', '/v1/jobs', { user: 'alice', body: { command: ['true'], colour: 'red' } }), '(body)');
  const refused = await call('POST', '/v1/jobs', {
    user: 'alice',
    body: { app: 'openfoam', resreq: 'rusage[license_foam=2]', command: ['true'] },
  });
  problem(refused, 422, /openfoam requires rusage\[license_foam=1\]/);
  const dry = await call('POST', '/v1/jobs?dry_run=true', { user: 'alice', body: { command: ['true'] } });
  assert.equal(dry.status, 200);
  assert.equal(dry.body['dryRun'], true);
  badField(await call('POST', '/v1/jobs?dry_run=maybe', { user: 'alice', body: { command: ['true'] } }), 'dryRun');
});

test('a write without Idempotency-Key gets one made by the server; the same key twice is one job', async () => {
  const made = await call('POST', '/v1/jobs', { user: 'alice', body: { cwd: work, command: ['true'] } });
  assert.equal(made.status, 201);
  assert.equal(made.headers.get('idempotency-key-source'), 'server');
  assert.match(made.headers.get('idempotency-key') ?? '', /^rest-[0-9a-f]+:1$/);
  const key = newKey();
  const a = await submit('alice', { command: ['true'] }, { 'idempotency-key': key });
  const b = await submit('alice', { command: ['true'] }, { 'idempotency-key': key });
  assert.equal(a, b);
  badField(
    await call('POST', '/v1/jobs', {
      user: 'alice',
      body: { command: ['true'] },
      headers: { 'idempotency-key': 'short:1' },
    }),
    'Idempotency-Key',
  );
  const other = await call('POST', '/v1/jobs', {
    user: 'bob',
    body: { cwd: work, command: ['true'] },
    headers: { 'idempotency-key': key },
  });
  assert.notEqual(other.status, 201, 'another user cannot take over alice’s session');
});

test('GET /v1/jobs lists with filters; 400 names the query parameter', async () => {
  await submit('alice', { command: ['true'], queue: 'normal' });
  const a = await call('GET', '/v1/jobs?user=alice&state=DONE&limit=5&queue=normal', { user: 'alice' });
  assert.equal(a.status, 200);
  assert.ok(Array.isArray(a.body['jobs']));
  badField(await call('GET', '/v1/jobs?limit=0', { user: 'alice' }), 'limit');
  badField(await call('GET', '/v1/jobs?state=WAITING', { user: 'alice' }), 'state');
  badField(await call('GET', '/v1/jobs?colour=red', { user: 'alice' }), 'colour');
  const stale = await call('GET', '/v1/jobs?stale=true', { user: 'alice', node: await follower() });
  assert.equal(stale.status, 200);
});

test('GET /v1/jobs/{id}: the job; 404 for none; 400 for a bad id', async () => {
  const id = await submit('alice', { command: ['true'] });
  const a = await call('GET', `/v1/jobs/${id}`, { user: 'alice' });
  assert.equal(a.status, 200);
  assert.equal((a.body['profile'] as { recorded: string }).recorded, 'python');
  problem(await call('GET', '/v1/jobs/999999', { user: 'alice' }), 404, /job 999999 does not exist/);
  badField(await call('GET', '/v1/jobs/abc', { user: 'alice' }), 'id');
  const h = await call('GET', `/v1/jobs/${id}/history`, { user: 'alice' });
  assert.equal(h.status, 200, JSON.stringify(h.body));
  problem(await call('GET', '/v1/jobs/999999/history', { user: 'alice' }), 404, /999999/);
  badField(await call('GET', '/v1/jobs/x/history', { user: 'alice' }), 'id');
});

test('GET /v1/accounting: job:view; the window is named when it is bad', async () => {
  const now = Date.now();
  const a = await call('GET', `/v1/accounting?since_ms=0&until_ms=${now}&by=user`, { user: 'admin' });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  forbidden(await call('GET', `/v1/accounting?since_ms=0&until_ms=${now}`, { user: 'carol' }), 'job:view');
  badField(await call('GET', '/v1/accounting?since_ms=0', { user: 'admin' }), 'untilMs');
  badField(await call('GET', `/v1/accounting?since_ms=0&until_ms=${now}&by=host`, { user: 'admin' }), 'by');
});

test('POST /v1/jobs/{id}/kill|requeue|restart: the owner may; another user needs job:control', async () => {
  const id = await submit('alice', { command: ['sleep', '30'] });
  forbidden(await call('POST', `/v1/jobs/${id}/kill`, { user: 'bob' }), 'job:control');
  forbidden(await call('POST', `/v1/jobs/${id}/requeue`, { user: 'bob' }), 'job:control');
  forbidden(await call('POST', `/v1/jobs/${id}/restart`, { user: 'bob' }), 'job:control');
  const k = await call('POST', `/v1/jobs/${id}/kill`, { user: 'alice' });
  assert.deepEqual([k.status, k.body], [200, { jobId: id, action: 'kill' }]);
  await waitState(id, 'EXIT');
  const rs = await call('POST', `/v1/jobs/${id}/restart`, { user: 'alice' });
  assert.deepEqual([rs.status, rs.body], [200, { jobId: id, action: 'restart' }]);
  const rq = await call('POST', `/v1/jobs/${id}/requeue`, { user: 'alice' });
  assert.ok(rq.status === 200 || rq.status === 422, JSON.stringify(rq.body));
  await call('POST', `/v1/jobs/${id}/kill`, { user: 'alice' });
  problem(await call('POST', '/v1/jobs/999999/kill', { user: 'alice' }), 404, /does not exist/);
  badField(await call('POST', '/v1/jobs/0/kill', { user: 'alice' }), 'id');
});

test('GET /v1/apps, /v1/apps/{name}, /v1/presets, /v1/presets/{name}: an unknown one is 404', async () => {
  const a = await call('GET', '/v1/apps', { user: 'alice' });
  assert.equal(a.status, 200);
  assert.ok((a.body['apps'] as Array<{ label: string }>).some((p) => /^python@[0-9a-f]+$/.test(p.label)));
  const s = await call('GET', '/v1/apps/python', { user: 'alice' });
  assert.equal(s.body['name'], 'python');
  problem(await call('GET', '/v1/apps/fluent', { user: 'alice' }), 404, /application profile fluent is not defined/);
  badField(await call('GET', `/v1/apps/${'x'.repeat(300)}`, { user: 'alice' }), 'name');
  const presets = await call('GET', '/v1/presets', { user: 'alice' });
  assert.deepEqual([presets.status, Array.isArray(presets.body['presets'])], [200, true]);
  problem(await call('GET', '/v1/presets/nope', { user: 'alice' }), 404, /site preset nope is not defined/);
  badField(await call('GET', `/v1/presets/${'x'.repeat(300)}`, { user: 'alice' }), 'name');
});

test('GET /v1/cluster/status and /v1/cluster/hosts: cluster:view or cluster:admin for the status', async () => {
  const s = await call('GET', '/v1/cluster/status', { user: 'admin' });
  assert.equal(s.status, 200);
  assert.equal((s.body['members'] as unknown[]).length, 3);
  forbidden(await call('GET', '/v1/cluster/status', { user: 'alice' }), 'cluster:admin');
  badField(await call('GET', '/v1/cluster/status?verbose=1', { user: 'admin' }), 'verbose');
  const h = await call('GET', '/v1/cluster/hosts', { user: 'alice' });
  const node01 = (h.body['hosts'] as Array<{ name: string; status: string | null; slots: number }>).find(
    (x) => x.name === 'node01',
  );
  assert.equal(node01?.status, 'ok', 'the leader knows node01 is served');
  assert.equal(node01?.slots, 8, 'the slots node01 registered');
});

test('admin routes: tokens, roles, config, membership, transfer; others get 403 naming cluster:admin', async () => {
  const t = await call('POST', '/v1/tokens', { user: 'admin', body: { user: 'bob', ttl_s: 600 } });
  assert.deepEqual([t.status, t.body['user'], t.body['expiresIn_s']], [200, 'bob', 600]);
  forbidden(await call('POST', '/v1/tokens', { user: 'alice', body: { user: 'bob' } }), 'cluster:admin');
  badField(await call('POST', '/v1/tokens', { user: 'admin', body: { user: 'bob', ttl_s: -1 } }), 'ttl_s');

  const set = await call('PUT', '/v1/roles/rest_viewer', {
    user: 'admin',
    body: { description: 'made over REST', permissions: [{ name: 'job:view' }] },
  });
  assert.deepEqual([set.status, set.body], [200, { role: 'rest_viewer', action: 'created' }]);
  forbidden(await call('PUT', '/v1/roles/x', { user: 'alice', body: { permissions: [] } }), 'cluster:admin');
  badField(await call('PUT', '/v1/roles/x', { user: 'admin', body: {} }), 'permissions');
  const list = await call('GET', '/v1/roles', { user: 'admin' });
  assert.ok((list.body['roles'] as Array<{ name: string }>).some((r) => r.name === 'rest_viewer'));
  forbidden(await call('GET', '/v1/roles', { user: 'alice' }), 'cluster:admin');
  const del = await call('DELETE', '/v1/roles/rest_viewer', { user: 'admin' });
  assert.deepEqual([del.status, del.body], [200, { role: 'rest_viewer', action: 'deleted' }]);
  problem(await call('DELETE', '/v1/roles/rest_viewer', { user: 'admin' }), 404, /role rest_viewer is not defined/);
  forbidden(await call('DELETE', '/v1/roles/basic_user', { user: 'alice' }), 'cluster:admin');

  const up = await call('POST', '/v1/config', { user: 'admin', body: { files: cluster.configFiles() } });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.equal(up.body['applied'], true);
  forbidden(
    await call('POST', '/v1/config', { user: 'alice', body: { files: cluster.configFiles() } }),
    'cluster:admin',
  );
  badField(await call('POST', '/v1/config', { user: 'admin', body: { files: [] } }), 'files');

  problem(
    await call('POST', '/v1/cluster/members', {
      user: 'admin',
      body: { id: 9, address: '127.0.0.1:1', learner: true },
    }),
    422,
    /node 9 is not in xce.yaml controllers/,
  );
  forbidden(
    await call('POST', '/v1/cluster/members', { user: 'alice', body: { id: 9, address: 'x:1' } }),
    'cluster:admin',
  );
  badField(await call('POST', '/v1/cluster/members', { user: 'admin', body: { address: 'x:1' } }), 'id');
  problem(await call('DELETE', '/v1/cluster/members/9', { user: 'admin' }), 422, /.+/);
  forbidden(await call('DELETE', '/v1/cluster/members/9', { user: 'alice' }), 'cluster:admin');
  badField(await call('DELETE', '/v1/cluster/members/x', { user: 'admin' }), 'id');

  forbidden(await call('POST', '/v1/cluster/transfer-leader', { user: 'alice', body: {} }), 'cluster:admin');
  badField(await call('POST', '/v1/cluster/transfer-leader', { user: 'admin', body: { to: 'two' } }), 'to');
  const old = await cluster.waitForLeader();
  const to = [1, 2, 3].find((id) => id !== old)!;
  const tr = await call('POST', '/v1/cluster/transfer-leader', { user: 'admin', body: { to }, node: old });
  assert.equal(tr.status, 200, JSON.stringify(tr.body));
  await until('the new leader', async () => (await cluster.waitForLeader()) === to || undefined);
});

async function follower(): Promise<number> {
  const leader = await cluster.waitForLeader();
  return [...cluster.controllers.keys()].find((id) => id !== leader)!;
}

test('a follower forwards a write to the leader and answers with its answer; reads it serves itself', async () => {
  const f = await follower();
  const leader = await cluster.waitForLeader();
  const a = await call('POST', '/v1/jobs', { user: 'alice', node: f, body: { cwd: work, command: ['true'] } });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  assert.equal(a.headers.get('xce-served-by'), String(leader));
  assert.equal(a.headers.get('idempotency-key-source'), 'server');
  const r = await call('GET', `/v1/jobs/${String(a.body['jobId'])}`, { user: 'alice', node: f });
  assert.equal(r.headers.get('xce-served-by'), String(f));
  // What only the leader knows in full is asked of it, unless the query asks for this node's view.
  const hosts = await call('GET', '/v1/cluster/hosts', { user: 'alice', node: f });
  assert.equal(hosts.headers.get('xce-served-by'), String(leader));
  assert.notEqual((hosts.body['hosts'] as Array<{ status: string | null }>)[0]?.status, null);
  const own = await call('GET', '/v1/cluster/hosts?stale=true', { user: 'alice', node: f });
  assert.equal(own.headers.get('xce-served-by'), String(f));
  assert.equal((own.body['hosts'] as Array<{ status: string | null }>)[0]?.status, null);
  const status = await call('GET', '/v1/cluster/status', { user: 'admin', node: f });
  assert.equal(status.body['node'], leader);
  // A bad body is refused where it arrives, before any forwarding.
  badField(await call('POST', '/v1/jobs', { user: 'alice', node: f, body: { command: [] } }), 'command');
});

test('the OpenAPI document served is the generated one, and every route in it is served', async () => {
  const served = await call('GET', '/v1/openapi.json');
  assert.deepEqual(served.body, JSON.parse(JSON.stringify(openApiDocument())));
  const paths = served.body['paths'] as Record<string, Record<string, unknown>>;
  let walked = 0;
  for (const [path, methods] of Object.entries(paths)) {
    for (const method of Object.keys(methods)) {
      const a = await call(method.toUpperCase(), path.replace('{id}', '1').replace('{name}', 'python'));
      assert.notEqual(a.body['code'], 'no-route', `${method} ${path} is in the document but not served`);
      assert.notEqual(a.status, 405, `${method} ${path}`);
      walked++;
    }
  }
  assert.equal(walked, REST_ROUTES.length + 1);
});

test('REST requests are counted per route in /metrics', async () => {
  const node = await cluster.waitForLeader();
  await submit('alice', { command: ['true'] });
  await call('GET', '/v1/jobs/1', { user: 'alice', node });
  const r = await fetch(`http://${cluster.address(node)}/metrics`);
  const text = await r.text();
  assert.match(text, /xce_rest_requests_total\{route="\/v1\/jobs\/\{id\}",method="GET",status="200"/);
  assert.match(
    text,
    /xce_rest_request_duration_seconds_bucket\{le="[^"]+",node="\d+",route="\/v1\/jobs",method="POST"/,
  );
});

test('a POST retried with the same Idempotency-Key across a SIGKILL of the leader creates one job', async () => {
  const leader = await cluster.waitForLeader();
  const survivors = [...cluster.controllers.keys()].filter((id) => id !== leader);
  const name = `once-${process.pid}`;
  const key = newKey();
  const body = { cwd: work, name, command: ['true'] };
  // Sent to the leader and killed at once: the first try may or may not be applied, or answered.
  const first = call('POST', '/v1/jobs', {
    user: 'alice',
    node: leader,
    body,
    headers: { 'idempotency-key': key },
  }).catch((err: unknown) => err);
  await cluster.kill(leader, 'SIGKILL');
  await first;
  const ids = new Set<number>();
  for (const node of survivors) {
    const a = await until(
      `the retry through node ${node} to be answered`,
      async () => {
        const x = await call('POST', '/v1/jobs', { user: 'alice', node, body, headers: { 'idempotency-key': key } });
        return x.status === 201 ? x : undefined;
      },
      30_000,
      200,
    );
    ids.add(Number(a.body['jobId']));
  }
  assert.equal(ids.size, 1, `every retry names the same job: ${[...ids].join(', ')}`);
  const listed = await call('GET', `/v1/jobs?user=alice`, { user: 'alice', node: survivors[0] });
  const named = (listed.body['jobs'] as Array<{ name: string | null }>).filter((j) => j.name === name);
  assert.equal(named.length, 1, 'one job with that name');
});
