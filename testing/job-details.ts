// What `jobs show --json` returns for a job, for the CLI's rendering tests: a pending serial job of
// alice's with nothing unusual; a test overrides the fields it is about.

/** Job 7's details; `over` replaces fields. */
export function jobDetailsFixture(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 7,
    state: 'PEND',
    user: 'alice',
    queue: 'normal',
    name: null,
    command: ['./run.sh'],
    profile: { display: 'serial', label: 'serial@1' },
    mode: 'direct',
    launchType: 'serial',
    tasks: 1,
    resreq: [],
    env: [],
    record: null,
    recordLabel: null,
    pendReason: null,
    runNumber: 0,
    requeueCount: 0,
    ...over,
  };
}
