// The cluster of the end-to-end tests of application profiles (test/app-view.test.ts,
// test/profile-edges.test.ts): real processes, one controller whose scheduler starts at once,
// applications.yaml with the test's own profiles, and one worker, node01.
import { TestCluster, type ClusterOptions } from '../harness/cluster.js';
import { workerHost } from './e2e.js';

/**
 * Starts that cluster. `profiles`: applications.yaml entries, as YAML indented as in the file,
 * starting with a newline; `edit`: the other files' edits.
 */
export function startWithProfiles(profiles: string, edit: ClusterOptions['edit'] = {}): Promise<TestCluster> {
  return TestCluster.start({
    controllers: 1,
    schedulerGrace_ms: 200,
    edit: { 'applications.yaml': (t) => `${t.trimEnd()}${profiles}`, ...edit },
    workers: [workerHost('node01')],
  });
}
