// The drill's private network: a cut is a real, silent partition between two namespaces that
// leaves everyone else connected, an isolation cuts a node off from everyone, and a heal restores
// it all. Each namespace runs a small relay: asked "host:port" over TCP, it tries to connect there
// itself and answers what happened, so the test sees reachability from inside each namespace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { NetLab, probeNetLab, removeStaleLabs } from './netlab.js';

const probe = probeNetLab();
const skip = probe.ok ? false : `no network namespaces here: ${probe.reason}`;
const PORT = 7999;
/** How long a connection attempt may stay silent before it counts as dropped. */
const CONNECT_WAIT_MS = 700;

const RELAY = `
const net = require('node:net');
const [host, port, wait] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
net.createServer((s) => {
  s.once('data', (d) => {
    const [h, p] = String(d).trim().split(':');
    const c = net.connect(Number(p), h);
    const t = setTimeout(() => { c.destroy(); s.end('silent'); }, wait);
    c.once('connect', () => { clearTimeout(t); c.destroy(); s.end('ok'); });
    c.once('error', (e) => { clearTimeout(t); s.end('error ' + e.code); });
  });
}).listen(port, host, () => process.stdout.write('ready\\n'));
setTimeout(() => process.exit(0), 60000);
`;

/** Connects from this process; 'ok', 'silent' or 'error CODE'. With `ask`, relays it and returns the relay's answer. */
function reach(addr: string, ask?: string): Promise<string> {
  return new Promise((resolve) => {
    const c = connect(PORT, addr);
    let answer = '';
    const t = setTimeout(
      () => {
        c.destroy();
        resolve('silent');
      },
      ask ? CONNECT_WAIT_MS * 3 : CONNECT_WAIT_MS,
    );
    c.once('connect', () => {
      if (!ask) {
        clearTimeout(t);
        c.destroy();
        resolve('ok');
      } else c.write(`${ask}:${PORT}\n`);
    });
    c.on('data', (d) => (answer += String(d)));
    c.once('end', () => {
      clearTimeout(t);
      resolve(answer);
    });
    c.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(t);
      resolve(`error ${e.code}`);
    });
  });
}

test(
  'a lab cuts two controllers apart silently, isolates one, heals, and leaves nothing behind',
  { skip, timeout: 60_000 },
  async () => {
    const lab = NetLab.create([1, 2, 3]);
    const relays: ChildProcess[] = [];
    try {
      for (const id of lab.ids) {
        const p = spawn(
          'ip',
          [
            'netns',
            'exec',
            lab.namespace(id),
            process.execPath,
            '-e',
            RELAY,
            lab.address(id),
            String(PORT),
            String(CONNECT_WAIT_MS),
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        relays.push(p);
        await new Promise<void>((resolve, reject) => {
          p.stdout!.once('data', () => resolve());
          p.once('exit', (code) => reject(new Error(`relay in ${lab.namespace(id)} exited with ${code}`)));
        });
      }
      const [a1, a2, a3] = [lab.address(1), lab.address(2), lab.address(3)];

      for (const a of [a1, a2, a3]) assert.equal(await reach(a), 'ok', `this process reaches ${a}`);
      assert.equal(await reach(a1, a2), 'ok', '1 reaches 2 before any cut');

      lab.cut(1, 2);
      assert.equal(await reach(a1, a2), 'silent', '1 → 2 is dropped silently');
      assert.equal(await reach(a2, a1), 'silent', '2 → 1 is dropped silently');
      assert.equal(await reach(a1, a3), 'ok', '1 still reaches 3');
      assert.equal(await reach(a3, a2), 'ok', '3 still reaches 2');
      assert.equal(await reach(a1), 'ok', 'clients still reach 1');
      assert.equal(await reach(a2), 'ok', 'clients still reach 2');

      lab.heal();
      assert.equal(await reach(a1, a2), 'ok', 'healed: 1 reaches 2 again');

      lab.isolate(3);
      assert.equal(await reach(a3), 'silent', 'an isolated node is unreachable from clients');
      assert.equal(await reach(a1, a3), 'silent', 'and from its peers');
      assert.equal(await reach(a1, a2), 'ok', 'the other two still reach each other');

      lab.heal();
      assert.equal(await reach(a3), 'ok', 'healed: clients reach 3 again');
      assert.equal(await reach(a3, a1), 'ok', 'and 3 reaches 1');
    } finally {
      for (const p of relays) p.kill('SIGKILL');
      lab.destroy();
    }
    const left = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
    assert.ok(!left.includes(`xce${process.pid}n`), `every namespace of the lab was removed:\n${left}`);
    assert.deepEqual(removeStaleLabs(), [], 'no stale lab of a dead run is left either');
  },
);

test('a controller id that cannot be a host of the lab is refused with the reason', { skip }, () => {
  assert.throws(() => NetLab.create([1, 254]), /controller id 254 cannot be a host number in a \/24 \(1\.\.253\)/);
});
