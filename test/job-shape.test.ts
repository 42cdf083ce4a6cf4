// What a job may carry, end to end with real processes: whatever the API admits, the worker runs;
// what the worker could not take is refused at submit, naming it, and never left running forever.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster } from '../harness/cluster.js';
import { ApiError, type XceClient } from '../cli/client.js';
import { submitJob, untilEnded } from '../testing/e2e.js';

let cluster: TestCluster;
let alice: XceClient;
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'xce-shape-'));
  cluster = await TestCluster.start({
    controllers: 1,
    schedulerGrace_ms: 200,
    edit: {
      // A profile without a runtime maximum, so that a job may ask for a long one.
      'applications.yaml': (t) =>
        `${t.trimEnd()}\n  - name: unbounded\n    launch_type: serial\n    job_pre_post_exec: allow\n`,
      'rbac.yaml': (t) => t.replace('values: [openfoam, mpich]', 'values: [openfoam, mpich, unbounded]'),
    },
    workers: [{ host: 'node01', slots: 8, bools: ['ib', 'x86_64'], extraArgs: ['--run-as-self'] }],
  });
  alice = await cluster.client('alice');
});

after(async () => {
  await cluster.stop();
});

const finished = (
  id: number,
  limit_ms?: number,
): Promise<{ state: string; reason: string | null; exitCode: number | null }> => untilEnded(alice, id, limit_ms);

/** Submits a job of alice's (in the work directory unless it says otherwise). */
const submitted = (job: Parameters<XceClient['submit']>[0]): Promise<number> => submitJob(alice, { cwd: work, ...job });

async function refusedAtSubmit(job: Parameters<XceClient['submit']>[0], re: RegExp): Promise<void> {
  await assert.rejects(alice.submit(job), (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, 'bad-request', e.message);
    assert.match(e.message, re);
    return true;
  });
}

test('an env name the worker could not take (MY-VAR, A=B) is refused at submit, naming the variable', async () => {
  await refusedAtSubmit(
    { app: 'unbounded', env: { 'MY-VAR': '1' }, command: ['true'], cwd: work },
    /args\.job\.env\.MY-VAR: environment variable name "MY-VAR" is not valid/,
  );
  await refusedAtSubmit(
    { app: 'unbounded', env: { 'A=B': '1' }, command: ['true'], cwd: work },
    /environment variable name "A=B" is not valid/,
  );
  const many = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`V${i}`, '1']));
  await refusedAtSubmit(
    { app: 'unbounded', env: many, command: ['true'], cwd: work },
    /at most 1024 environment variables, not 1025/,
  );
  const jobs = (await alice.listJobs()) as { jobs: unknown[] };
  assert.deepEqual(jobs.jobs, [], 'nothing was admitted');
});

test('a job at the limits the API admits (1,024 env vars) runs on the worker to DONE', async () => {
  const env = Object.fromEntries(Array.from({ length: 1024 }, (_, i) => [`V${i}`, String(i)]));
  const d = await finished(
    await submitted({
      app: 'unbounded',
      env,
      command: ['sh', '-c', 'echo "$V0 $V1023"'],
      stdout: join(work, 'env.out'),
    }),
  );
  assert.equal(d.state, 'DONE', JSON.stringify(d));
  assert.equal(readFileSync(join(work, 'env.out'), 'utf8'), '0 1023\n');
});

test('a runtime limit of 30d does not kill the job at once: it runs to DONE', async () => {
  const d = await finished(
    await submitted({
      app: 'unbounded',
      limits: { runtime: '30d' },
      command: ['sleep', '1'],
    }),
  );
  assert.deepEqual([d.state, d.reason, d.exitCode], ['DONE', null, 0]);
});
