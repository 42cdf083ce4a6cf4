// A list of listeners for one kind of event of the controller core (leadership, applied batches,
// fsync times, fail-stop). Anyone may subscribe; nobody replaces anybody else's listener.

export class Listeners<A extends readonly unknown[]> {
  private fns: Array<(...args: A) => void> = [];

  /** Subscribes `fn`; returns the function that unsubscribes it. */
  add(fn: (...args: A) => void): () => void {
    this.fns.push(fn);
    return () => {
      this.fns = this.fns.filter((f) => f !== fn);
    };
  }

  /** Calls every listener in the order they subscribed. A listener that throws stops the rest
   * and the error reaches the caller (in the Ready loop: a fail-stop, as any bug there). */
  emit(...args: A): void {
    for (const fn of this.fns) fn(...args);
  }

  get size(): number {
    return this.fns.length;
  }
}
