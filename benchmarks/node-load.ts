// What the benchmarks that drive a ControllerNode in their own process share: the shipped
// configuration as a config fact for the bench's controllers, submit facts, and loading a node
// with many submits (bounded in time).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControllerNode } from '../daemon/controller-node.js';
import { encodeFact } from '../statemachine/facts-codec.js';
import { jobSpec } from '../testing/test-cluster.js';
import type { ControllerAddress } from '../model/config-types.js';

const configDir = new URL('../../configs/', import.meta.url).pathname;
/** Proposals kept in flight while loading. */
const LOAD_IN_FLIGHT = 2_000;
const T0 = 1_764_547_200_000;

/** The shipped configs/ as one config fact, with xce.yaml's controllers replaced by `controllers`. */
export function configFact(controllers: readonly ControllerAddress[]): Uint8Array {
  const files = readdirSync(configDir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => {
      const text = readFileSync(join(configDir, f), 'utf8');
      return {
        path: f,
        text:
          f === 'xce.yaml'
            ? text.replace(
                /controllers:\n(  - .*\n)+/,
                `controllers:\n${controllers.map((c) => `  - { id: ${c.id}, host: ${c.host}, port: ${c.port} }\n`).join('')}`,
              )
            : text,
      };
    });
  return encodeFact({ clientId: null, sequence: 0, timeMs: T0, body: { kind: 'config', files, user: 'admin' } });
}

/**
 * Makes submit facts of one client: alice's `python` jobs named `<name>-<i>`, 100 distinct commands;
 * with `dependencyOf`, each with that `-w` (null: none).
 */
export function submits(
  clientId: string,
  name: string,
  dependencyOf: (i: number) => string | null = () => null,
): (i: number) => Uint8Array {
  let seq = 0;
  return (i) => {
    seq++;
    return encodeFact({
      clientId,
      sequence: seq,
      timeMs: T0 + seq,
      body: {
        kind: 'submit',
        user: 'alice',
        queue: 'normal',
        profile: 'python',
        profileRequested: null,
        dependency: dependencyOf(i),
        dependencyKill: false,
        spec: jobSpec({
          command: ['python3', 'train.py', `--case=${i % 100}`],
          env: [{ name: 'CASE', value: `case-${i % 100}` }],
          cwd: '/home/alice',
          jobName: `${name}-${i}`,
        }),
      },
    });
  };
}

/**
 * Proposes `jobs` submits to a leader, LOAD_IN_FLIGHT at a time; gives up after `limit_ms`.
 * Returns how many submits `submit` made (the next job number).
 */
export async function load(
  node: ControllerNode,
  submit: (i: number) => Uint8Array,
  jobs: number,
  limit_ms: number,
): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: LOAD_IN_FLIGHT }, async () => {
      while (next < jobs) {
        if (performance.now() - t0 > limit_ms)
          throw new Error(
            `loading ${jobs} jobs took over ${limit_ms / 1000} s (${next} proposed); try a smaller --jobs`,
          );
        const r = await node.propose(submit(next++));
        if (r.kind !== 'submitted') throw new Error(`a load submit was not accepted: ${JSON.stringify(r)}`);
      }
    }),
  );
  process.stdout.write(
    `loaded ${node.state.jobs.size.toLocaleString('en-US')} jobs in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );
  return next;
}
