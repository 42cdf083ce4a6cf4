// What xcecd says at start about whose identity jobs run under, true in each of the four cases
// (root or not, --run-as-self or not). Only a root worker without --run-as-self runs each job as
// its submitter; every other worker runs every job as its own user, and says so loudly.

export interface IdentityNotice {
  readonly level: 'info' | 'warn';
  readonly message: string;
}

export interface IdentitySituation {
  /** The daemon runs as root (uid 0). */
  readonly root: boolean;
  /** --run-as-self was given. */
  readonly runAsSelf: boolean;
  /** The daemon's own user name. */
  readonly self: string;
  /** util-linux setpriv was found (a root worker uses it to set supplementary groups). */
  readonly setprivFound: boolean;
}

/** Whether jobs switch to their submitter's identity: root, and not told to run them as itself. */
export function runsAsSubmitter(s: Pick<IdentitySituation, 'root' | 'runAsSelf'>): boolean {
  return s.root && !s.runAsSelf;
}

export function identityNotices(s: IdentitySituation): IdentityNotice[] {
  const everyJob = `every job runs as user ${s.self}, whoever submitted it`;
  if (runsAsSubmitter(s)) {
    const out: IdentityNotice[] = [
      { level: 'info', message: 'xcecd is running as root: each job runs as the user who submitted it' },
    ];
    if (!s.setprivFound)
      out.push({
        level: 'warn',
        message:
          "util-linux setpriv not found: jobs run with the user's uid and primary gid but without supplementary groups",
      });
    return out;
  }
  if (s.root)
    return [
      {
        level: 'warn',
        message: `xcecd is running as root with --run-as-self: ${everyJob} (development and tests only)`,
      },
    ];
  if (s.runAsSelf)
    return [
      {
        level: 'warn',
        message: `xcecd is not running as root (--run-as-self changes nothing then): ${everyJob} (development mode)`,
      },
    ];
  return [{ level: 'warn', message: `xcecd is not running as root: ${everyJob} (development mode)` }];
}
