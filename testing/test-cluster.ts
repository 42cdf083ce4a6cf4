// A small cluster configuration as file texts, for the state machine's tests and benchmarks (no
// I/O: the texts are here). Variants change one thing at a time so a test reads like the brief:
// the profile removed, renamed with an alias, changed, the default moved.

import type { ConfigFile, JobSpec } from '../statemachine/facts.js';

/** A job's own values with nothing set but a command: tests and benchmarks override what they need. */
export function jobSpec(overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    resreq: null,
    tasks: null,
    env: [],
    limits: {},
    preExec: null,
    postExec: null,
    command: ['./run.sh'],
    cwd: '/home/alice',
    stdoutPath: null,
    stderrPath: null,
    jobName: null,
    script: null,
    ...overrides,
  };
}

export interface TestClusterOptions {
  /** Leave the openfoam profile out (as if an admin removed it). */
  readonly withoutOpenfoam?: boolean;
  /** Rename openfoam to this name, keeping `openfoam` as an alias. */
  readonly renameOpenfoamTo?: string;
  /** openfoam's license reservation (1 by default): another value is a changed profile. */
  readonly foamLicenses?: number;
  /** default_application (serial by default). */
  readonly defaultApplication?: string;
  /** Drop the serial profile (with the default still naming it: a dangling default). */
  readonly withoutSerial?: boolean;
  /** Slots per host (8 by default). */
  readonly slots?: number;
  /** hosts.yaml `numeric: { mem }` of n1, n2, n3 (64000 each by default); fractional amounts allowed. */
  readonly hostMem?: readonly [number, number, number];
  /** resources.yaml total of the license_foam pool (4 by default). */
  readonly licenseTotal?: number;
  /** More xce.yaml lines, e.g. `finished_job_retention: 2s` (none by default). */
  readonly xceExtra?: string;
  /**
   * More roles, each bound to the users given: `permissions` are rbac.yaml flow mappings, e.g.
   * `{ name: app:view, type: app, values: [serial] }`. By default no one but root holds job:view
   * or app:view.
   */
  readonly extraRoles?: ReadonlyArray<{
    readonly name: string;
    readonly permissions: readonly string[];
    readonly users: readonly string[];
  }>;
}

/** scrypt (N=1024, cheap for tests) of the password `test-pass`. */
export const TEST_PASSWORD_HASH = 'scrypt$1024$rd17GojsjI83/YII0eaQFA==$XMWRcetysQ7ed4as7+GJLFCNAHD1F5ChmMWfAWcsMzs=';

/** xce.yaml of a one-controller test cluster named `name`. */
export function xceYaml(name: string, defaultApplication: string): string {
  return `name: ${name}
controllers:
  - { id: 1, host: 127.0.0.1, port: 7001 }
secret: "0123456789abcdef0123456789abcdef-test"
default_application: ${defaultApplication}
`;
}

/** The profiles of applications.yaml: serial, openfoam (or its new name) and python, as the options say. */
function applications(o: TestClusterOptions, foamName: string): string {
  const foamAliases = o.renameOpenfoamTo !== undefined ? '["openfoam-old", "openfoam"]' : '["openfoam-old"]';
  const serial = `  - name: serial
    description: "plain serial jobs"
    mode: direct
`;
  const openfoam = `  - name: ${foamName}
    description: "OpenFOAM, MPI"
    aliases: ${foamAliases}
    mode: direct
    launch_type: openmpi
    resreq: "select[ib] rusage[license_foam=${o.foamLicenses ?? 1}]"
    tasks: { min: 1, max: 512 }
    limits: { runtime: 24h, memory: 128G }
    env: { FOAM_INST_DIR: /opt/openfoam }
    pre_exec: /opt/xce/app/openfoam/pre.sh
    post_exec: /opt/xce/app/openfoam/post.sh
    job_pre_post_exec: allow
`;
  const python = `  - name: python
    mode: direct
    job_pre_post_exec: forbid
`;
  return [o.withoutSerial ? '' : serial, o.withoutOpenfoam ? '' : openfoam, python].join('');
}

const QUEUES = `queues:
  - { name: normal, priority: 30 }
  - { name: night, priority: 10 }
`;

const resources = (licenseTotal: number): string => `resources:
  - { name: ib, type: boolean }
  - { name: mem, type: numeric }
  - { name: license_foam, type: numeric, scope: cluster, total: ${licenseTotal} }
`;

function hosts(slots: number, mem: readonly [number, number, number]): string {
  return `hosts:
  - { name: n1, slots: ${slots}, mem: 64G, resources: [ib], numeric: { mem: ${mem[0]} } }
  - { name: n2, slots: ${slots}, mem: 64G, resources: [ib], numeric: { mem: ${mem[1]} } }
  - { name: n3, slots: ${slots}, mem: 64G, numeric: { mem: ${mem[2]} } }
`;
}

// Every user the bindings name (tokens are good only while their user is here); the password of each is `test-pass`.
const USERS = `users:
${['root', 'alice', 'bob', 'carol', 'olga'].map((u) => `  - { name: ${u}, groups: [users], password: "${TEST_PASSWORD_HASH}" }`).join('\n')}
`;

/** rbac.yaml: root admin, alice and bob users, carol serial only, olga operator, and the extra roles. */
function rbac(o: TestClusterOptions, foamName: string): string {
  const usable = [o.withoutSerial ? null : 'serial', 'python', o.withoutOpenfoam ? null : foamName]
    .filter((x) => x !== null)
    .join(', ');
  const serialOnly = o.withoutSerial ? 'python' : 'serial';
  const extra = o.extraRoles ?? [];
  return `roles:
  - name: cluster_admin
    permissions: [{ name: cluster:admin }]
  - name: basic_user
    permissions:
      - { name: queue:submit, type: queue, values: [normal, night] }
      - { name: app:use, type: app, values: [${usable}] }
  - name: serial_only
    permissions:
      - { name: queue:submit, type: queue, values: [normal] }
      - { name: app:use, type: app, values: [${serialOnly}] }
  - name: operator
    permissions:
      - { name: job:control }
${extra.map((r) => `  - name: ${r.name}\n    permissions:\n${r.permissions.map((p) => `      - ${p}\n`).join('')}`).join('')}bindings:
  - { role: cluster_admin, users: [root] }
  - { role: basic_user, users: [alice, bob] }
  - { role: serial_only, users: [carol] }
  - { role: operator, users: [olga] }
${extra.map((r) => `  - { role: ${r.name}, users: [${r.users.join(', ')}] }\n`).join('')}`;
}

export function testClusterFiles(o: TestClusterOptions = {}): ConfigFile[] {
  const foamName = o.renameOpenfoamTo ?? 'openfoam';
  return [
    { path: 'xce.yaml', text: xceYaml('testcluster', o.defaultApplication ?? 'serial') + (o.xceExtra ?? '') },
    { path: 'applications.yaml', text: `applications:\n${applications(o, foamName)}` },
    { path: 'queues.yaml', text: QUEUES },
    { path: 'resources.yaml', text: resources(o.licenseTotal ?? 4) },
    { path: 'hosts.yaml', text: hosts(o.slots ?? 8, o.hostMem ?? [64000, 64000, 64000]) },
    { path: 'users.yaml', text: USERS },
    { path: 'rbac.yaml', text: rbac(o, foamName) },
  ];
}
