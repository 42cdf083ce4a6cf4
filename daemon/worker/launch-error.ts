// A job that cannot be started on this host: the reason is what the user reads in `jobs show`,
// so it says what is missing and where (`execution user bob does not exist on host h1`).

export class LaunchError extends Error {
  override readonly name = 'LaunchError';
  constructor(readonly reason: string) {
    super(reason);
  }
}
