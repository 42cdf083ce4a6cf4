// xceadmin's commands against a running cluster: `config upgrade`, `cluster status`,
// `cluster transfer-leader`, `cluster add-member` / `remove-member`, `token issue`.
// They use the same client library, controller list and token as xcecli (an admin logs in with
// `xcecli login`).

import { basename } from 'node:path';
import type { Command } from 'commander';
import { XceClient } from '../client.js';
import { EXIT, reportError, useColor } from '../output.js';
import { renderClusterStatus } from '../render.js';
import { readToken, resolveControllers } from '../settings.js';
import { readConfigDir } from './config-files.js';

interface Globals {
  controllers?: string;
  json?: boolean;
}

type Runner = (fn: (c: XceClient, json: boolean) => Promise<number | void>) => Promise<void>;

function runner(cmd: Command): Runner {
  return async (fn) => {
    const g = cmd.optsWithGlobals<Globals>();
    const token = readToken();
    const c = new XceClient({ controllers: resolveControllers(g.controllers), ...(token ? { token } : {}) });
    try {
      const code = await fn(c, g.json === true);
      if (typeof code === 'number') process.exitCode = code;
    } catch (err) {
      process.exitCode = reportError('xceadmin', err, g.json === true);
    } finally {
      c.close();
    }
  };
}

const out = (json: boolean, result: unknown, human: string): void => void process.stdout.write(json ? `${JSON.stringify(result)}\n` : human);

export function registerLive(program: Command, config: Command): void {
  config
    .command('upgrade')
    .description('validate DIR and apply it to the running cluster (live upgrade); prints removed profiles that pending jobs still name')
    .argument('<dir>', 'configuration directory')
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, dir: string) {
      await runner(this)(async (c, json) => {
        const files = readConfigDir(dir).map((f) => ({ path: basename(f.path), text: f.text }));
        const r = (await c.call('config.upgrade', { files })) as { inUse: Array<{ name: string; isAlias: boolean; pendingJobs: number }>; warnings: string[] };
        const lines = ['Configuration applied.'];
        for (const w of r.warnings) lines.push(`warning: ${w}`);
        for (const u of r.inUse) {
          lines.push(`warning: removed ${u.isAlias ? 'alias' : 'profile'} ${u.name} is still named by ${u.pendingJobs} pending job(s); they pend with "application profile ${u.name} is not defined" until it is back`);
        }
        out(json, r, lines.join('\n') + '\n');
      });
    });

  const cluster = program.command('cluster').description('the controller cluster: status, leadership, membership');
  cluster
    .command('status')
    .description('members, leader, term, indexes and lag')
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command) {
      await runner(this)(async (c, json) => {
        const r = (await c.call('cluster.status', {})) as Record<string, unknown>;
        out(json, r, renderClusterStatus(r, useColor()));
      });
    });
  cluster
    .command('transfer-leader')
    .description('hand leadership to node ID (default: any connected voter)')
    .argument('[id]', 'target node id')
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, id?: string) {
      await runner(this)(async (c, json) => {
        const r = (await c.call('cluster.transferLeader', id === undefined ? {} : { to: Number(id) })) as { transferred: boolean; to: number; leader: number };
        out(json, r, r.transferred ? `Leadership moved to node ${r.leader}.\n` : `Leadership transfer to node ${r.to} did not complete; the leader is node ${r.leader}.\n`);
        return r.transferred ? EXIT.ok : EXIT.unavailable;
      });
    });
  cluster
    .command('add-member')
    .description('add controller ID at HOST:PORT (listed in xce.yaml) as a voter, or --learner')
    .argument('<id>', 'node id')
    .argument('<address>', 'host:port')
    .option('--learner', 'add as a non-voting learner (promote later with add-member without --learner)')
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, id: string, address: string, o: { learner?: boolean }) {
      await runner(this)(async (c, json) => {
        const r = (await c.call('cluster.addMember', { id: Number(id), address, ...(o.learner ? { learner: true } : {}) })) as { voters: number[]; learners: number[] };
        out(json, r, `Members: voters ${r.voters.join(', ')}${r.learners.length ? `; learners ${r.learners.join(', ')}` : ''}\n`);
      });
    });
  cluster
    .command('remove-member')
    .description('remove controller ID from the cluster')
    .argument('<id>', 'node id')
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, id: string) {
      await runner(this)(async (c, json) => {
        const r = (await c.call('cluster.removeMember', { id: Number(id) })) as { voters: number[]; learners: number[] };
        out(json, r, `Members: voters ${r.voters.join(', ')}${r.learners.length ? `; learners ${r.learners.join(', ')}` : ''}\n`);
      });
    });

  const token = program.command('token').description('API tokens');
  token
    .command('issue')
    .description('issue a token for USER (admin only), e.g. for a portal or a service account')
    .argument('<user>', 'user name from users.yaml')
    .option('--ttl <seconds>', 'lifetime in seconds', (v) => Number(v))
    .option('--controllers <list>', 'controller addresses')
    .option('--json', 'machine-readable output')
    .action(async function (this: Command, user: string, o: { ttl?: number }) {
      await runner(this)(async (c, json) => {
        const r = (await c.call('token.issue', { user, ...(o.ttl ? { ttl_s: o.ttl } : {}) })) as { token: string };
        out(json, r, `${r.token}\n`);
      });
    });
}
