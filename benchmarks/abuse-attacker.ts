// The abuse benchmark's attacker (abuse.bench.ts starts it in a worker thread, so that its own work
// does not delay the legitimate client's measurement): idle connections held open on the leader's
// /api, reopened whenever the leader closes them, then a flood of unauthenticated connects.

import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

export interface AttackPlan {
  readonly url: string;
  /** The CA (PEM) that signed the controllers' certificate, for wss://; null with ws://. */
  readonly ca: string | null;
  readonly idle: number;
  readonly connectsPerSecond: number;
  readonly seconds: number;
  readonly addresses: number;
}

/** What the attacker reports at the end. */
export interface AttackFigures {
  /** Idle connections open at the end of the ramp, and opened in all (each reopened after the leader closed it). */
  idleOpenAfterRamp: number;
  idleOpened: number;
  idleClosedByServer: number;
  /** Close codes and reasons the leader gave (first of each). */
  closeReasons: Record<string, string>;
  connectsTried: number;
  connectsAnswered: number;
  connectsFailed: number;
  rampSeconds: number;
}

/** The idle connection `i`'s source address: 127.0.0.2 ... 127.0.0.(1 + addresses). */
function idleAddress(i: number, addresses: number): string {
  return `127.0.0.${2 + (i % addresses)}`;
}

/** The idle connections held open: how many are open now, and `stop` to close them and open no more. */
interface IdleHolder {
  open(): number;
  stop(): void;
}

/**
 * Opens `plan.idle` connections (100 opening at a time) and holds them: each is opened again whenever
 * the server closes it, until `stop`. Resolves once the ramp is done.
 */
async function holdIdle(plan: AttackPlan, f: AttackFigures): Promise<IdleHolder> {
  let stopping = false;
  const open = new Set<WebSocket>();
  /** Opens idle connection `i`, and opens it again whenever the server closes it, until stopping. */
  const hold = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const ws = new WebSocket(plan.url, {
        localAddress: idleAddress(i, plan.addresses),
        handshakeTimeout: 30_000,
        ...(plan.ca !== null ? { ca: plan.ca } : {}),
      });
      let opened = false;
      ws.on('error', () => undefined);
      ws.on('open', () => {
        opened = true;
        open.add(ws);
        f.idleOpened++;
        resolve();
      });
      ws.on('close', (code, reason) => {
        open.delete(ws);
        if (opened) f.idleClosedByServer++;
        f.closeReasons[String(code)] ??= reason.toString();
        if (!opened) resolve();
        // At once after the auth deadline (an attacker's loop); later when refused (1013) or not connected.
        if (!stopping) setTimeout(() => void hold(i), opened && code !== 1013 ? 0 : 1_000);
      });
    });
  // Ramp: 100 opening at a time.
  const t0 = performance.now();
  for (let i = 0; i < plan.idle; i += 100)
    await Promise.all(Array.from({ length: Math.min(100, plan.idle - i) }, (_, k) => hold(i + k)));
  f.rampSeconds = (performance.now() - t0) / 1000;
  f.idleOpenAfterRamp = open.size;
  return {
    open: () => open.size,
    stop: () => {
      stopping = true;
      for (const ws of open) ws.terminate();
    },
  };
}

/**
 * The connect flood for `plan.seconds`: one connect every 1/rate s, from 127.0.1.1 ... 127.0.1.250 in
 * turn; each sends one request without a token, reads the refusal and hangs up. Resolves once all ended.
 */
async function connectFlood(plan: AttackPlan, f: AttackFigures): Promise<void> {
  const every_ms = 1_000 / plan.connectsPerSecond;
  const end = performance.now() + plan.seconds * 1000;
  let n = 0;
  const inflight = new Set<Promise<void>>();
  while (performance.now() < end) {
    const due = (performance.now() - (end - plan.seconds * 1000)) / every_ms;
    while (n < due) {
      n++;
      f.connectsTried++;
      const p = new Promise<void>((resolve) => {
        const ws = new WebSocket(plan.url, {
          localAddress: `127.0.1.${1 + (n % 250)}`,
          handshakeTimeout: 10_000,
          ...(plan.ca !== null ? { ca: plan.ca } : {}),
        });
        const timer = setTimeout(() => ws.terminate(), 10_000);
        ws.on('error', () => undefined);
        ws.on('open', () => ws.send(JSON.stringify({ id: 1, op: 'cluster.status', args: {} })));
        ws.on('message', () => {
          f.connectsAnswered++;
          ws.close();
        });
        ws.on('close', () => {
          clearTimeout(timer);
          resolve();
        });
      }).then(() => void inflight.delete(p));
      inflight.add(p);
    }
    await new Promise((r) => setTimeout(r, Math.max(1, every_ms / 2)));
  }
  await Promise.all(inflight);
  f.connectsFailed = f.connectsTried - f.connectsAnswered;
}

/** The attacker: the idle connections ramped up, then (on the main thread's word) the connect flood. */
async function attack(plan: AttackPlan): Promise<void> {
  const port = parentPort!;
  const f: AttackFigures = {
    idleOpenAfterRamp: 0,
    idleOpened: 0,
    idleClosedByServer: 0,
    closeReasons: {},
    connectsTried: 0,
    connectsAnswered: 0,
    connectsFailed: 0,
    rampSeconds: 0,
  };
  const idle = await holdIdle(plan, f);
  port.postMessage({ kind: 'ramped', idle: idle.open() });
  await new Promise<void>((resolve) => port.once('message', () => resolve()));
  await connectFlood(plan, f);
  idle.stop();
  port.postMessage({ kind: 'done', figures: f });
}

if (!isMainThread) await attack(workerData as AttackPlan);
