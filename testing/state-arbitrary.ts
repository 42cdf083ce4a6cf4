// fast-check generators of whole controller states (the snapshot's content), built from the
// generators of facts-arbitrary.ts: every field a snapshot carries, at the extremes. Test-only.

import fc from 'fast-check';
import { loadConfig } from '../model/config.js';
import { emptyState, isRunning, type ClosedHost, type ControllerState, type Job } from '../statemachine/state.js';
import { account } from '../statemachine/usage.js';
import { arbJob, arbRegisteredHost, arbSessions } from './facts-arbitrary.js';
import { arbI64, arbOptText, arbPosU64, arbText, arbU64 } from './scalar-arbitrary.js';
import { testClusterFiles, type TestClusterOptions } from './test-cluster.js';

/** Hosts an administrator closed (`xceadmin hosts close`), each once. */
export const arbClosedHosts: fc.Arbitrary<ClosedHost[]> = fc.uniqueArray(
  fc.record({ host: arbText, reason: arbOptText, user: arbText, timeMs: arbI64 }, { noNullPrototype: true }),
  { selector: (c) => c.host, maxLength: 4 },
);

const CONFIG_VARIANTS: readonly TestClusterOptions[] = [{}, { withoutOpenfoam: true }, { renameOpenfoamTo: 'foam' }];

/**
 * A whole controller state with random values in every field a snapshot carries (the usage is
 * derived, as restore derives it). The configuration, when there is one, is a valid test cluster:
 * restore rebuilds it with loadConfig.
 */
export const arbControllerState: fc.Arbitrary<ControllerState> = fc
  .tuple(
    fc.option(fc.constantFrom(...CONFIG_VARIANTS), { nil: null }),
    fc.uniqueArray(arbPosU64, { maxLength: 6 }),
    arbSessions,
    arbU64,
    arbI64,
    arbU64,
    fc.uniqueArray(arbRegisteredHost, { selector: (h) => h.host, maxLength: 4 }),
    arbU64,
    arbClosedHosts,
  )
  .chain(([variant, ids, sessions, appliedIndex, logTimeMs, nextJobId, hosts, jobsCleaned, closed]) =>
    (ids.length === 0 ? fc.constant([] as Job[]) : fc.tuple(...ids.map(arbJob))).map((jobs) => {
      const state: ControllerState = { ...emptyState(), appliedIndex, logTimeMs, nextJobId, jobsCleaned };
      if (variant !== null) {
        const files = testClusterFiles(variant);
        const loaded = loadConfig(files);
        if (!loaded.ok) throw new Error('the test cluster configuration does not load');
        state.config = { files, cluster: loaded.config };
      }
      for (const j of jobs) {
        state.jobs.set(j.id, j);
        if (isRunning(j) && j.record !== null) account(state.usage, state.config?.cluster ?? null, j.record, 1);
      }
      for (const s of sessions) state.sessions.set(s.clientId, s);
      for (const h of hosts) state.hosts.set(h.host, h);
      for (const c of closed) state.closedHosts.set(c.host, c);
      return state;
    }),
  );
