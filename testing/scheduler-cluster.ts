// A small cluster for the scheduler's tests and benchmark: configuration from YAML texts (through
// the real loadConfig, inside a ConfigFact), jobs submitted and dispatches applied through the real
// `apply`, so every decision the tests check is one the state machine accepts.

import { apply } from '../statemachine/apply.js';
import type { ApplyResult, ConfigFile, FactBody, JobSpec } from '../statemachine/facts.js';
import { submitFactFor } from '../statemachine/jobs.js';
import { emptyState, type ControllerState } from '../statemachine/state.js';
import type { Decision } from '../scheduler/pass.js';
import { jobSpec, xceYaml } from './test-cluster.js';

export const T0_MS = 1_764_547_200_000;

export interface ClusterTexts {
  /** The body of applications.yaml under `applications:` (YAML list items). */
  readonly apps?: string;
  /** The list items under `hosts:`. */
  readonly hosts: string;
  /** The list items under `resources:` (ib, x86_64, mem, gpu, rack and license_foam with total 4 by default). */
  readonly resources?: string;
  /** The list items under `queues:` (normal 30, night 10, urgent 60 by default). */
  readonly queues?: string;
  readonly defaultApplication?: string;
}

export const DEFAULT_RESOURCES = `  - { name: ib, type: boolean }
  - { name: x86_64, type: boolean }
  - { name: mem, type: numeric }
  - { name: gpu, type: numeric }
  - { name: rack, type: string }
  - { name: license_foam, type: numeric, scope: cluster, total: 4 }
`;

export const DEFAULT_APPS = `  - name: serial
    mode: direct
  - name: openfoam
    aliases: [openfoam-old]
    mode: direct
    launch_type: openmpi
    resreq: "select[ib] rusage[license_foam=1]"
    tasks: { min: 1, max: 512 }
    job_pre_post_exec: allow
`;

export const DEFAULT_QUEUES = `  - { name: normal, priority: 30 }
  - { name: night, priority: 10 }
  - { name: urgent, priority: 60 }
`;

export function clusterFiles(t: ClusterTexts): ConfigFile[] {
  return [
    { path: 'xce.yaml', text: xceYaml('schedtest', t.defaultApplication ?? 'serial') },
    { path: 'applications.yaml', text: `applications:\n${t.apps ?? DEFAULT_APPS}` },
    { path: 'queues.yaml', text: `queues:\n${t.queues ?? DEFAULT_QUEUES}` },
    { path: 'resources.yaml', text: `resources:\n${t.resources ?? DEFAULT_RESOURCES}` },
    { path: 'hosts.yaml', text: `hosts:\n${t.hosts}` },
    {
      path: 'rbac.yaml',
      text: `roles:
  - name: cluster_admin
    permissions: [{ name: cluster:admin }]
bindings:
  - { role: cluster_admin, users: [alice, root] }
`,
    },
  ];
}

export const SPEC: JobSpec = jobSpec();

export class TestCluster {
  readonly state: ControllerState = emptyState();
  private index = 0;
  private timeMs = T0_MS;

  constructor(texts: ClusterTexts) {
    const r = this.configure(texts);
    if (r.kind !== 'configApplied') throw new Error(`test configuration refused: ${JSON.stringify(r)}`);
  }

  fact(body: FactBody): ApplyResult {
    this.timeMs += 1;
    return apply(this.state, { clientId: null, sequence: 0, timeMs: this.timeMs, body }, ++this.index);
  }

  configure(texts: ClusterTexts): ApplyResult {
    return this.fact({ kind: 'config', files: clusterFiles(texts), user: null });
  }

  /** Submits a job (as alice) and returns its id; throws when the state machine refuses it. */
  submit(app: string | null, spec: Partial<JobSpec> = {}, queue = 'normal'): number {
    const config = this.state.config!.cluster;
    const r = this.fact(submitFactFor(config, 'alice', queue, app, { ...SPEC, ...spec }));
    if (r.kind !== 'submitted') throw new Error(`submit refused: ${JSON.stringify(r)}`);
    return r.jobId;
  }

  /** Applies a decision as the loop would propose it. */
  dispatch(d: Decision): ApplyResult {
    const { jobId, runNumber, placement, record, schedulerHash } = d;
    return this.fact({ kind: 'dispatch', jobId, runNumber, placement, record, schedulerHash });
  }

  /** Every configured host name. */
  hostNames(): Set<string> {
    return new Set(this.state.config!.cluster.hosts.keys());
  }
}
