// A profile in Cap'n Proto's text format (the struct literal syntax of schema/profile.capnp), as an
// independent second encoding: the hash tests feed it to `capnp convert text:canonical` and compare
// the reference tool's canonical bytes with profile-hash.ts's. Also handy when debugging a hash:
// `capnp convert text:canonical schema/profile.capnp AppProfile <<< "$(…)" | xxd`.

import type { Probe, ServiceSpec } from './config-types.js';
import type { CmpOp, Profile, ResReq, SelectExpr } from './profile-types.js';

const OP: Record<CmpOp, string> = { '>': 'gt', '>=': 'ge', '<': 'lt', '<=': 'le', '==': 'eq', '!=': 'ne' };

function str(s: string): string {
  // Every ASCII character other than a letter, a digit, "_", "/", "." or "-" is written as \xNN:
  // capnp's text stream reader finds where each message ends with a scanner that does not know
  // string literals (a ")" or "#" inside a string cuts the message short), so none may appear raw.
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (c < 0x80 && !/[A-Za-z0-9_/.-]/.test(ch)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}

function num(n: number): string {
  // capnp reads a literal without a point or exponent as a 64-bit integer and wraps it, so a
  // whole float64 of 2^53 or more (String gives plain digits up to 1e21) goes as an exponent.
  if (Number.isInteger(n) && Math.abs(n) >= 2 ** 53) return n.toExponential();
  return String(Object.is(n, -0) ? 0 : n);
}

function fields(parts: ReadonlyArray<string | null>): string {
  return `(${parts.filter((p): p is string => p !== null).join(', ')})`;
}

function opt(name: string, s: string | null | undefined): string | null {
  return s === null || s === undefined || s === '' ? null : `${name} = ${str(s)}`;
}

function sel(e: SelectExpr): string {
  switch (e.kind) {
    case 'bool':
      return `(bool = ${str(e.name)})`;
    case 'cmp': {
      const value =
        typeof e.value === 'string'
          ? e.value === ''
            ? `(string = "")`
            : `(string = ${str(e.value)})`
          : `(number = ${num(e.value)})`;
      return `(cmp = (name = ${str(e.name)}, op = ${OP[e.op]}, value = ${value}))`;
    }
    case 'not':
      return `(not = ${sel(e.expr)})`;
    case 'and':
    case 'or':
      return `(${e.kind} = [${e.args.map(sel).join(', ')}])`;
  }
}

function resreq(r: ResReq): string {
  return fields([
    r.select.length ? `select = [${r.select.map(sel).join(', ')}]` : null,
    r.rusage.length
      ? `rusage = [${r.rusage
          .map((u) =>
            fields([
              `name = ${str(u.name)}`,
              `value = ${num(u.value)}`,
              u.duration_s !== undefined ? `hasDuration = true, durationS = ${u.duration_s}` : null,
            ]),
          )
          .join(', ')}]`
      : null,
    r.span
      ? `span = ${fields([r.span.ptile !== undefined ? `ptile = ${r.span.ptile}` : null, r.span.hosts !== undefined ? `hosts = ${r.span.hosts}` : null])}`
      : null,
    r.same && r.same.length ? `same = [${r.same.map(str).join(', ')}]` : null,
    r.order && r.order.length
      ? `order = [${r.order.map((k) => fields([`name = ${str(k.name)}`, `descending = ${k.descending}`])).join(', ')}]`
      : null,
  ]);
}

function probe(p: Probe): string {
  const a = p.action;
  const action =
    a.kind === 'command'
      ? `(command = ${str(a.command)})`
      : a.kind === 'tcp'
        ? `(tcpPort = ${str(a.port)})`
        : `(http = ${fields([opt('port', a.port), opt('path', a.path)])})`;
  return fields([
    `action = ${action}`,
    `periodS = ${p.period_s}`,
    `timeoutS = ${p.timeout_s}`,
    `initialDelayS = ${p.initialDelay_s}`,
    `failureThreshold = ${p.failureThreshold}`,
  ]);
}

function service(s: ServiceSpec): string {
  const policy = { 'on-failure': 'onFailure', always: 'always', never: 'never' }[s.restart.policy];
  return fields([
    `restart = ${fields([
      `policy = ${policy}`,
      `backoffInitialS = ${s.restart.backoffInitial_s}`,
      `backoffMaxS = ${s.restart.backoffMax_s}`,
      s.restart.giveUp
        ? `giveUpAttempts = ${s.restart.giveUp.attempts}, giveUpWindowS = ${s.restart.giveUp.window_s}`
        : null,
    ])}`,
    s.liveness ? `liveness = ${probe(s.liveness)}` : null,
    s.readiness ? `readiness = ${probe(s.readiness)}` : null,
    s.ports.length
      ? `ports = [${s.ports.map((p) => fields([opt('name', p.name), `port = ${p.port}`, `protocol = ${p.protocol}`])).join(', ')}]`
      : null,
    s.replicas ? `replicas = (min = ${s.replicas.min}, max = ${s.replicas.max})` : null,
    s.spread ? `spread = ${fields([opt('across', s.spread.across), `maxSkew = ${s.spread.maxSkew}`])}` : null,
    s.rollout ? `rollout = (maxUnavailable = ${s.rollout.maxUnavailable}, maxSurge = ${s.rollout.maxSurge})` : null,
  ]);
}

/** The AppProfile text literal of a profile, normalised as the hash normalises it (no description). */
export function profileCapnpText(p: Profile): string {
  const l = p.limits;
  const hasLimits =
    l.runtime_s !== undefined || l.memory_bytes !== undefined || l.cpu_s !== undefined || l.tasks !== undefined;
  return fields([
    opt('name', p.name),
    p.aliases.length ? `aliases = [${[...p.aliases].sort().map(str).join(', ')}]` : null,
    `mode = direct`,
    p.launchType ? `launchType = ${p.launchType}` : null,
    p.resreq ? `resreq = ${resreq(p.resreq)}` : null,
    p.tasks ? `tasks = (min = ${p.tasks.min}, max = ${p.tasks.max})` : null,
    hasLimits
      ? `limits = ${fields([
          l.runtime_s !== undefined ? `runtimeS = ${l.runtime_s}` : null,
          l.memory_bytes !== undefined ? `memoryBytes = ${l.memory_bytes}` : null,
          l.cpu_s !== undefined ? `cpuS = ${l.cpu_s}` : null,
          l.tasks !== undefined ? `tasks = ${l.tasks}` : null,
        ])}`
      : null,
    p.env.length
      ? `env = [${p.env.map((e) => fields([opt('name', e.name), opt('value', e.value)])).join(', ')}]`
      : null,
    opt('preExec', p.preExec),
    opt('postExec', p.postExec),
    `jobPrePostExec = ${p.jobPrePostExec}`,
    p.service ? `service = ${service(p.service as ServiceSpec)}` : null,
  ]);
}
