// The XCE status page: reads the REST API (/v1) with the user's token (kept in sessionStorage for
// this tab only) and redraws every POLL_MS. Plain DOM, no framework, no build step; every value is
// set as text, never parsed as HTML.

const POLL_MS = 2000;
const FINISHED_SHOWN_MAX = 20;
const JOBS_FETCHED_MAX = 500;

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem('xce-token');
let who = sessionStorage.getItem('xce-user');
let timer = null;
let shownJob = null;
let lastLeader = null;
let lastFailover = null;

/** An element with attributes and children (strings become text nodes). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'onclick') el.addEventListener('click', v);
    else if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) el.append(c instanceof Node ? c : document.createTextNode(String(c ?? '')));
  return el;
}

function table(el, head, rows, empty = 'none') {
  el.replaceChildren(
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((c) => h('th', { class: /^[#0-9]|slots|lag|match|count/i.test(c) ? 'num' : null }, c)),
      ),
    ),
    h('tbody', {}, rows.length > 0 ? rows : [h('tr', {}, h('td', { colspan: head.length, class: 'muted' }, empty))]),
  );
}

class ApiProblem extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(path, init = {}) {
  const headers = { accept: 'application/json', ...(init.headers || {}) };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(path, { ...init, headers });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    if (r.status === 401 && path !== '/v1/auth/login') logout('Your session ended: log in again.');
    throw new ApiProblem(r.status, body);
  }
  return body;
}

function showError(message) {
  const e = $('error');
  e.textContent = message || '';
  e.hidden = !message;
}

async function login(ev) {
  ev.preventDefault();
  try {
    const r = await api('/v1/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: $('user').value, password: $('password').value }),
    });
    token = r.token;
    who = r.user;
    sessionStorage.setItem('xce-token', token);
    sessionStorage.setItem('xce-user', who);
    $('password').value = '';
    showError('');
    start();
  } catch (err) {
    showError(`Login failed: ${err.message}`);
  }
}

function logout(message) {
  token = null;
  who = null;
  sessionStorage.removeItem('xce-token');
  sessionStorage.removeItem('xce-user');
  clearTimeout(timer);
  $('main').hidden = true;
  $('login').hidden = false;
  $('logout').hidden = true;
  $('whoami').textContent = '';
  showError(typeof message === 'string' ? message : '');
}

function start() {
  $('login').hidden = true;
  $('main').hidden = false;
  $('logout').hidden = false;
  $('whoami').textContent = `Logged in as ${who}`;
  void poll();
}

async function poll() {
  clearTimeout(timer);
  if (!token) return;
  const filters = new URLSearchParams({ limit: String(JOBS_FETCHED_MAX) });
  for (const f of ['user', 'app', 'queue']) if ($(`f-${f}`).value.trim()) filters.set(f, $(`f-${f}`).value.trim());
  const [status, hosts, jobs, apps, roles] = await Promise.allSettled([
    api('/v1/cluster/status'),
    api('/v1/cluster/hosts'),
    api(`/v1/jobs?${filters}`),
    api('/v1/apps'),
    api('/v1/roles'),
  ]);
  if (!token) return;
  const failed = [status, hosts, jobs, apps].filter((r) => r.status === 'rejected' && r.reason.status !== 403);
  showError(failed.length > 0 ? failed[0].reason.message : '');
  drawCluster(status);
  drawHosts(hosts, jobs);
  drawJobs(jobs);
  drawApps(apps, jobs, roles);
  if (shownJob !== null) await showJob(shownJob);
  $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  timer = setTimeout(poll, POLL_MS);
}

function refused(el, r, what) {
  el.replaceChildren(h('p', { class: 'muted' }, `${what}: ${r.reason.message}`));
}

function drawCluster(r) {
  const sum = $('cluster-summary');
  if (r.status === 'rejected') {
    $('members').replaceChildren();
    return refused(sum, r, 'Cluster status is not shown');
  }
  const s = r.value;
  if (lastLeader !== null && s.leader !== lastLeader) lastFailover = new Date();
  lastLeader = s.leader;
  const fact = (k, v) => h('span', {}, `${k} `, h('b', {}, v));
  sum.replaceChildren(
    fact('Leader', s.leader ? `node ${s.leader} (${s.leaderAddress ?? '?'})` : 'none (election)'),
    fact('Term', s.term),
    fact('Commit', s.commit),
    fact('Applied', s.applied),
    fact('Last index', s.lastIndex),
    fact('Snapshot', s.snapshotIndex),
    fact('Answered by', `node ${s.node}`),
    fact('Last leader change', lastFailover ? lastFailover.toLocaleTimeString() : 'none seen'),
    fact(
      'Jobs',
      Object.entries(s.jobs)
        .map(([k, v]) => `${k} ${v}`)
        .join(' · '),
    ),
  );
  table(
    $('members'),
    ['Node', 'Role', 'Address', 'Leader', 'Match', 'Lag', 'Link'],
    s.members.map((m) =>
      h(
        'tr',
        { class: m.leader ? 'leader' : null },
        h('td', {}, m.id),
        h('td', {}, m.role),
        h('td', {}, m.address ?? ''),
        h('td', {}, m.leader ? 'leader' : ''),
        h('td', { class: 'num' }, m.match ?? '–'),
        h('td', { class: 'num' }, m.lag ?? '–'),
        h('td', {}, m.connected ? 'connected' : 'down'),
      ),
    ),
  );
}

function drawHosts(r, jobs) {
  if (r.status === 'rejected') return refused($('hosts-table'), r, 'Hosts are not shown');
  const running = new Map();
  if (jobs.status === 'fulfilled')
    for (const j of jobs.value.jobs.filter((j) => j.state === 'RUN'))
      for (const part of j.hosts.split(',').filter(Boolean)) {
        const host = part.split(':')[0];
        running.set(host, (running.get(host) ?? 0) + 1);
      }
  const gib = (b) => `${(b / 2 ** 30).toFixed(0)} GiB`;
  table(
    $('hosts-table'),
    ['Host', 'Slots used', 'Slots total', 'Running jobs', 'Memory', 'State', 'Notes'],
    r.value.hosts.map((x) =>
      h(
        'tr',
        {},
        h('td', {}, x.name),
        h('td', { class: 'num' }, x.slotsUsed),
        h('td', { class: 'num' }, x.slots),
        h('td', { class: 'num' }, running.get(x.name) ?? 0),
        h('td', {}, gib(x.mem_bytes)),
        h('td', {}, x.status === null ? 'known to the leader' : x.status === 'ok' ? 'ok' : 'unavailable'),
        h('td', {}, x.registered === null ? 'never registered' : x.mismatches.join('; ')),
      ),
    ),
  );
}

function jobLink(id) {
  return h('a', { class: 'job', 'data-job': id, onclick: () => showJob(id) }, `#${id}`);
}

function drawJobs(r) {
  if (r.status === 'rejected') {
    for (const t of ['pending', 'running', 'finished']) table($(t), ['Jobs'], [], r.reason.message);
    return;
  }
  const jobs = r.value.jobs;
  const byReason = new Map();
  for (const j of jobs.filter((j) => j.state === 'PEND')) {
    const k = j.pendReason ?? '(no reason)';
    byReason.set(k, [...(byReason.get(k) ?? []), j]);
  }
  table(
    $('pending'),
    ['Count', 'Reason', 'Jobs'],
    [...byReason].map(([reason, js]) =>
      h(
        'tr',
        {},
        h('td', { class: 'num' }, js.length),
        h('td', {}, reason),
        h(
          'td',
          {},
          js.slice(0, 8).map((j) => [jobLink(j.id), ' ']),
        ),
      ),
    ),
  );
  const row = (j, extra) =>
    h(
      'tr',
      {},
      h('td', {}, jobLink(j.id)),
      h('td', { class: `state-${j.state}` }, j.state),
      h('td', {}, j.user),
      h('td', {}, j.app ?? ''),
      h('td', {}, j.queue),
      h('td', {}, extra),
    );
  table(
    $('running'),
    ['Job', 'State', 'User', 'Profile', 'Queue', 'Hosts'],
    jobs.filter((j) => j.state === 'RUN').map((j) => row(j, j.hosts)),
  );
  table(
    $('finished'),
    ['Job', 'State', 'User', 'Profile', 'Queue', 'Exit'],
    jobs
      .filter((j) => j.state === 'DONE' || j.state === 'EXIT')
      .slice(0, FINISHED_SHOWN_MAX)
      .map((j) => row(j, j.exitCode ?? j.reason ?? '')),
  );
}

async function showJob(id) {
  shownJob = id;
  const d = $('detail');
  d.hidden = false;
  try {
    const j = await api(`/v1/jobs/${id}`);
    const origins = (list, f) => list.map((t) => h('tr', {}, h('td', {}, f(t)), h('td', {}, t.origin)));
    const resreq = h('table', {});
    table(
      resreq,
      ['Resource requirement', 'Origin'],
      origins(j.resreq, (t) => t.text),
    );
    const env = h('table', {});
    table(
      env,
      ['Environment', 'Origin'],
      origins(j.env, (t) => `${t.value.name}=${t.value.value}`),
    );
    d.replaceChildren(
      h(
        'h3',
        {},
        `Job ${j.id} `,
        h('span', { class: `state-${j.state}` }, j.state),
        ' ',
        h('button', { onclick: closeJob }, 'Close'),
      ),
      h(
        'div',
        { class: 'facts' },
        h('span', {}, 'User ', h('b', {}, j.user)),
        h('span', {}, 'Queue ', h('b', {}, j.queue)),
        h('span', {}, 'Profile ', h('b', {}, j.profile.display)),
        h('span', {}, 'Label ', h('b', {}, j.profile.label ?? j.recordLabel ?? '–')),
        h('span', {}, 'Tasks ', h('b', {}, j.tasks ?? '–')),
        h('span', {}, 'Command ', h('b', {}, j.command.join(' '))),
        j.pendReason ? h('span', {}, 'Pending: ', h('b', {}, j.pendReason)) : '',
        j.profileChangedSinceDispatch ? h('span', { class: 'error' }, 'profile changed since dispatch') : '',
        j.profileValuesHidden ? h('span', { class: 'muted' }, j.profileValuesHidden) : '',
      ),
      h('div', { class: 'columns' }, h('div', {}, resreq), h('div', {}, env), h('div', {})),
      h(
        'h3',
        {},
        j.record ? `Frozen dispatch record (${j.recordLabel ?? 'no hash'})` : 'No dispatch record yet (pending)',
      ),
      j.record ? h('pre', {}, JSON.stringify(j.record, null, 2)) : '',
    );
  } catch (err) {
    d.replaceChildren(h('p', { class: 'error' }, `Job ${id}: ${err.message}`));
  }
}

function closeJob() {
  shownJob = null;
  $('detail').hidden = true;
}

/** Who may use profile `name`, from rbac.yaml's roles and bindings (admins only see roles). */
function usersOf(name, roles) {
  const out = [];
  for (const role of roles.roles) {
    const grants = role.grants.filter(
      (g) =>
        g.permission === 'cluster:admin' ||
        (g.permission === 'app:use' && (g.scopeType === 'all' || g.values.includes('all') || g.values.includes(name))),
    );
    if (grants.length === 0) continue;
    const who = roles.bindings
      .filter((b) => b.role === role.name)
      .flatMap((b) => [...(b.users ?? []), ...(b.groups ?? []).map((g) => `@${g}`)]);
    out.push(`${role.name} (${who.join(', ') || 'nobody'})`);
  }
  return out.join('; ');
}

function drawApps(r, jobs, roles) {
  if (r.status === 'rejected') return refused($('apps'), r, 'Profiles are not shown');
  const counts = new Map();
  if (jobs.status === 'fulfilled')
    for (const j of jobs.value.jobs) {
      const c = counts.get(j.app) ?? { PEND: 0, RUN: 0 };
      if (j.state === 'PEND' || j.state === 'RUN') c[j.state]++;
      counts.set(j.app, c);
    }
  const admin = roles.status === 'fulfilled';
  table(
    $('apps'),
    [
      'Profile',
      'Description',
      'Pending',
      'Running',
      'Launch',
      admin ? 'Who may use it (role: users, @groups)' : 'You may use it',
    ],
    r.value.apps.map((a) =>
      h(
        'tr',
        {},
        h('td', {}, a.label, a.isDefault ? ' (default)' : ''),
        h('td', {}, a.description ?? ''),
        h('td', { class: 'num' }, counts.get(a.name)?.PEND ?? 0),
        h('td', { class: 'num' }, counts.get(a.name)?.RUN ?? 0),
        h('td', {}, a.launchType),
        h('td', {}, admin ? usersOf(a.name, roles.value) : a.usable ? 'yes' : 'no'),
      ),
    ),
  );
}

$('login').addEventListener('submit', login);
$('logout').addEventListener('click', () => logout(''));
$('filters').addEventListener('submit', (ev) => {
  ev.preventDefault();
  void poll();
});
if (token) start();
