// A throw-away certificate authority for development and tests (`npm start`, `npm run cluster`,
// TestCluster): a CA and one controller certificate it signs, for 127.0.0.1, localhost and any
// other addresses given (the drill's network namespaces), so that every link of a dev or test
// cluster runs over TLS as a real one does. Made with the `openssl` command-line tool: Node can
// use certificates but has no way to create one, and openssl is on every machine that builds
// Node's own dependencies; without it this says so and names what to do.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DevTls {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** Certificates live this long: a dev cluster is restarted long before. */
const DAYS = 30;

export class DevTlsError extends Error {
  override readonly name = 'DevTlsError';
}

function openssl(args: readonly string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT')
      throw new DevTlsError(
        "openssl is not installed: it makes the dev cluster's throw-away CA (apt-get install openssl), or set insecure_dev: true in xce.yaml",
      );
    throw new DevTlsError(`openssl ${args[0]} failed: ${e.stderr?.toString().trim() ?? e.message}`);
  }
}

/**
 * Makes (or, when `dir` already holds them, reuses) a CA named `name` and a controller
 * certificate for 127.0.0.1, localhost and `addresses` (IPs), in `dir`.
 */
export function makeDevTls(dir: string, name: string, addresses: readonly string[] = []): DevTls {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tls: DevTls = {
    caFile: join(dir, 'ca.pem'),
    certFile: join(dir, 'controller.pem'),
    keyFile: join(dir, 'controller.key'),
  };
  if (existsSync(tls.caFile) && existsSync(tls.certFile) && existsSync(tls.keyFile)) return tls;
  const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    [
      'req',
      '-x509',
      ...curve,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      String(DAYS),
      '-subj',
      `/CN=${name} throw-away CA`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  openssl(
    ['req', ...curve, '-keyout', 'controller.key', '-out', 'controller.csr', '-subj', `/CN=${name} controller`],
    dir,
  );
  const sans = ['IP:127.0.0.1', 'DNS:localhost', ...addresses.map((a) => `IP:${a}`)];
  writeFileSync(
    join(dir, 'controller.ext'),
    `subjectAltName=${sans.join(',')}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'controller.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'controller.pem',
      '-days',
      String(DAYS),
      '-extfile',
      'controller.ext',
    ],
    dir,
  );
  return tls;
}
