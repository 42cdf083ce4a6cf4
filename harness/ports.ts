// Ports for the daemons that tests and benchmarks start on 127.0.0.1.
//
// Listening on port 0 gives a port from the kernel's ephemeral range, the range it also draws the
// local ports of outgoing connections from. Between the moment such a port is found free and the
// moment a daemon binds it, any connection this machine opens (the suite opens thousands) can take
// it, and the daemon then fails with EADDRINUSE: a three-controller test cluster ran with two and
// timed out waiting for a leader after its leader was killed. So the ports come from below the
// ephemeral range, where the kernel never puts a connection, and each is checked free first.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port handed out (below: well-known and commonly configured services). */
const LOWEST = 10_000;
/** Ports handed out by this process, so that one cluster never gets the same port twice. */
const given = new Set<number>();

/** [low, high] of the kernel's ephemeral ports (Linux's default when it cannot be read). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // not Linux: its default range below
  }
  return [32_768, 60_999];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

function kernelPicks(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** A port on 127.0.0.1 that is free now, outside the ephemeral range, and not given before here. */
export async function freePort(): Promise<number> {
  const [low, high] = ephemeralRange();
  // The free stretch below the ephemeral range, or above it when that is the larger one.
  const [from, to] = low - LOWEST >= 65_535 - high ? [LOWEST, low - 1] : [high + 1, 65_535];
  if (to - from < 1_000) return kernelPicks(); // an unusual range: fall back to the kernel's pick
  for (let tries = 0; tries < 100; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (given.has(port)) continue;
    if (await canListen(port)) {
      given.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${from}-${to} after 100 tries`);
}
