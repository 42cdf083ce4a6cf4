// xceadmin's commands against a running cluster: `config upgrade`, `cluster status`,
// `cluster transfer-leader`, `cluster add-member` / `remove-member`, `hosts close|open`, `token issue`.
// They use the same client library, controller list and token as xcecli (an admin logs in with
// `xcecli login`).

import type { Command } from 'commander';
import type { XceClient } from '../client.js';
import { withClient } from '../connect.js';
import { EXIT, useColor } from '../output.js';
import { positiveInteger, UsageError } from '../numeric-flags.js';
import { renderClusterStatus } from '../render.js';
import { readConfigDir } from '../../daemon/config-files.js';
import { configFileKey } from '../../model/config.js';
import { HOST_REASON_CHARS_MAX } from '../../api/protocol.js';

interface Globals {
  controllers?: string;
  timeout?: string;
  json?: boolean;
}

type Runner = (fn: (c: XceClient, json: boolean) => Promise<number | void>) => Promise<void>;

function runner(cmd: Command): Runner {
  return async (fn) => {
    const g = cmd.optsWithGlobals<Globals>();
    const setCode = (code: number): void => void (process.exitCode = code);
    await withClient(
      'xceadmin',
      g,
      async (c) => {
        const code = await fn(c, g.json === true);
        if (typeof code === 'number') setCode(code);
      },
      setCode,
    );
  };
}

/** Gives CMD the options every live command shares (--controllers, --json) and runs FN with a client. */
function live<A extends unknown[]>(
  cmd: Command,
  fn: (c: XceClient, json: boolean, ...args: A) => Promise<number | void>,
): Command {
  return cmd
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, ...args: unknown[]) {
      await runner(this)((c, json) => fn(c, json, ...(args as A)));
    });
}

const members = (r: { voters: number[]; learners: number[] }): string =>
  `Members: voters ${r.voters.join(', ')}${r.learners.length ? `; learners ${r.learners.join(', ')}` : ''}\n`;

const out = (json: boolean, result: unknown, human: string): void =>
  void process.stdout.write(json ? `${JSON.stringify(result)}\n` : human);

export function registerLive(program: Command, config: Command): void {
  live(
    config
      .command('upgrade')
      .description(
        'validate DIR and apply it to the running cluster (live upgrade); prints removed profiles that pending jobs still name',
      )
      .argument('<dir>', 'configuration directory'),
    async (c, json, dir: string) => {
      const files = readConfigDir(dir).map((f) => ({ path: configFileKey(f.path), text: f.text }));
      const r = await c.call('config.upgrade', { files });
      const lines = ['Configuration applied.'];
      for (const w of r.warnings) lines.push(`warning: ${w}`);
      for (const u of r.inUse) {
        lines.push(
          `warning: removed ${u.isAlias ? 'alias' : 'profile'} ${u.name} is still named by ${u.pendingJobs} pending job(s); they pend with "application profile ${u.name} is not defined" until it is back`,
        );
      }
      out(json, r, lines.join('\n') + '\n');
    },
  );

  const cluster = program.command('cluster').description('the controller cluster: status, leadership, membership');
  live(cluster.command('status').description('members, leader, term, indexes and lag'), async (c, json) => {
    const r = (await c.call('cluster.status', {})) as Record<string, unknown>;
    out(json, r, renderClusterStatus(r, useColor()));
  });
  live(
    cluster
      .command('transfer-leader')
      .description('hand leadership to node ID (default: any connected voter)')
      .argument('[id]', 'target node id'),
    async (c, json, id?: string) => {
      const r = (await c.call(
        'cluster.transferLeader',
        id === undefined ? {} : { to: positiveInteger('node id', id) },
      )) as {
        transferred: boolean;
        to: number;
        leader: number;
      };
      out(
        json,
        r,
        r.transferred
          ? `Leadership moved to node ${r.leader}.\n`
          : `Leadership transfer to node ${r.to} did not complete; the leader is node ${r.leader}.\n`,
      );
      return r.transferred ? EXIT.ok : EXIT.unavailable;
    },
  );
  live(
    cluster
      .command('add-member')
      .description('add controller ID at HOST:PORT (listed in xce.yaml) as a voter, or --learner')
      .argument('<id>', 'node id')
      .argument('<address>', 'host:port')
      .option('--learner', 'add as a non-voting learner (promote later with add-member without --learner)'),
    async (c, json, id: string, address: string, o: { learner?: boolean }) => {
      const r = (await c.call('cluster.addMember', {
        id: positiveInteger('node id', id),
        address,
        ...(o.learner ? { learner: true } : {}),
      })) as { voters: number[]; learners: number[] };
      out(json, r, members(r));
    },
  );
  live(
    cluster.command('remove-member').description('remove controller ID from the cluster').argument('<id>', 'node id'),
    async (c, json, id: string) => {
      const r = (await c.call('cluster.removeMember', { id: positiveInteger('node id', id) })) as {
        voters: number[];
        learners: number[];
      };
      out(json, r, members(r));
    },
  );

  const hosts = program
    .command('hosts')
    .description('close a host (it gets no new jobs; running ones go on) or open it again; `xcecli hosts` shows it');
  live(
    hosts
      .command('close')
      .description(
        'close host NAME: the scheduler places no new job on it (a replicated fact); the reason shows in `xcecli hosts`',
      )
      .argument('<name>', 'host name from hosts.yaml')
      .option('--reason <text>', `why (at most ${HOST_REASON_CHARS_MAX} characters)`),
    async (c, json, name: string, o: { reason?: string }) => {
      if (o.reason !== undefined && (o.reason === '' || o.reason.length > HOST_REASON_CHARS_MAX))
        throw new UsageError(`--reason must be 1 to ${HOST_REASON_CHARS_MAX} characters`);
      const r = await c.call('hosts.close', { name, ...(o.reason !== undefined ? { reason: o.reason } : {}) });
      out(json, r, `Host ${name} closed${o.reason !== undefined ? `: ${o.reason}` : ''}; it gets no new jobs.\n`);
    },
  );
  live(
    hosts
      .command('open')
      .description('open host NAME again: it takes new jobs')
      .argument('<name>', 'host name from hosts.yaml'),
    async (c, json, name: string) => {
      const r = await c.call('hosts.open', { name });
      out(json, r, `Host ${name} opened; it takes new jobs.\n`);
    },
  );

  const token = program.command('token').description('API tokens');
  live(
    token
      .command('issue')
      .description('issue a token for USER (admin only), e.g. for a portal or a service account')
      .argument('<user>', 'user name from users.yaml')
      .option('--ttl <seconds>', "lifetime in seconds (default: the controller's token lifetime)"),
    async (c, json, user: string, o: { ttl?: string }) => {
      const ttl = o.ttl === undefined ? {} : { ttl_s: positiveInteger('--ttl', o.ttl) };
      const r = (await c.call('token.issue', { user, ...ttl })) as { token: string };
      out(json, r, `${r.token}\n`);
    },
  );

  const role = program.command('role').description('RBAC roles (stored in rbac.yaml of the replicated configuration)');
  live(role.command('list').description('roles with their grants, and the bindings'), async (c, json) => {
    const r = await c.call('roles.list', {});
    const lines = r.roles.map(
      (x) =>
        `${x.name}: ${x.grants.map((g) => (g.scopeType === 'all' ? g.permission : `${g.permission}=${g.scopeType}:${g.values.join(',')}`)).join('  ')}`,
    );
    out(json, r, lines.join('\n') + '\n');
  });
  live(
    role
      .command('set')
      .description(
        'create or replace a role, e.g. role set cfd_user -p queue:submit=queue:night -p app:use=app:openfoam,mpich',
      )
      .argument('<name>', 'role name')
      .option('-d, --description <text>', 'description')
      .option(
        '-p, --permission <spec>',
        'PERMISSION or PERMISSION=TYPE:VALUE[,VALUE...] with TYPE queue or app (repeatable)',
        (v: string, prev: string[] = []) => [...prev, v],
      ),
    async (c, json, name: string, o: { description?: string; permission?: string[] }) => {
      const permissions = (o.permission ?? []).map(parsePermission);
      const r = (await c.call('roles.set', {
        name,
        permissions,
        ...(o.description !== undefined ? { description: o.description } : {}),
      })) as { action: string };
      out(json, r, `Role ${name} ${r.action}.\n`);
    },
  );
  live(
    role.command('delete').description('delete a role').argument('<name>', 'role name'),
    async (c, json, name: string) => {
      const r = await c.call('roles.delete', { name });
      out(json, r, `Role ${name} deleted.\n`);
    },
  );
}

/** `app:use=app:openfoam,mpich` → { name: 'app:use', type: 'app', values: ['openfoam', 'mpich'] }. */
export function parsePermission(spec: string): { name: string; type?: 'queue' | 'app' | 'all'; values?: string[] } {
  const eq = spec.indexOf('=');
  if (eq < 0) return { name: spec };
  const name = spec.slice(0, eq);
  const rest = spec.slice(eq + 1);
  const colon = rest.indexOf(':');
  const type = colon < 0 ? '' : rest.slice(0, colon);
  if (type !== 'queue' && type !== 'app')
    throw new Error(`--permission ${spec}: expected PERMISSION=queue:NAMES or PERMISSION=app:NAMES`);
  const values = rest
    .slice(colon + 1)
    .split(',')
    .filter((v) => v !== '');
  if (values.length === 0)
    throw new Error(`--permission ${spec}: no ${type} names after "${type}:" (use all for every ${type})`);
  return { name, type, values };
}
