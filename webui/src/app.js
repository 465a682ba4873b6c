// qo's dashboard. Everything the page shows comes from the bucket (or qo's
// API) and is rendered as text: task data never reaches innerHTML.
// frame.js first: framed, it stops the page before anything else runs.
import './frame.js';
import { diffLines } from 'diff';
import { S3Backend, ApiBackend, stepsToCancel, INDEXED } from './backend.js';
import { readLink, canConnect, navFragment, isNavigation, workflowRef, VIEWS, PAGES } from './link.js';
import { layout, stepActions } from './workflow.js';
import { STATUSES, TERMINAL, COUNTED, LIST_WINDOW_MS, health, priorityOf, shortID, canAct } from './queue.js';
import { progressText, limitText } from './queue.js';
import { mergeRecent, chartSeries, bars, MINUTE_MS } from './chart.js';
import { parseSearch, searchCost, searchNote, SEARCH_LIMIT } from './search.js';
import { planBulk, runBulk, formatOps, serverPlan, BULK_CONCURRENCY } from './bulk.js';
import { dollars } from './fleet.js';

// h builds an element; string children become text nodes.
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false && v != null) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// s builds an SVG element the same way: attributes set one by one, text as
// text nodes, so the chart never parses markup either.
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const $ = (sel) => document.querySelector(sel);

function short(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

function ago(iso, now) {
  if (!iso) return '-';
  const d = now - Date.parse(iso);
  return d >= -1000 ? `${short(Math.max(d, 0))} ago` : `in ${short(d)}`; // within the clock estimate's error: now
}

// countdown is the live column: time to available_at, or lease left.
function countdown(t, now) {
  if (t.status === 'pending') {
    const d = Date.parse(t.available_at) - now;
    return d > 0 ? `runs in ${short(d)}` : `ready ${short(d)}`;
  }
  if (t.status === 'running' && t.lease_expires_at) {
    const d = Date.parse(t.lease_expires_at) - now;
    return d >= 0 ? `lease ${short(d)} left` : `lease expired ${short(d)} ago`;
  }
  return '';
}

// jsonTree renders a JSON value as nested <details> (collapsible).
function jsonTree(name, value) {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v]) : Object.entries(value);
    const unit = Array.isArray(value) ? 'item' : 'key';
    return h('details', { open: true, class: 'json' },
      h('summary', {}, h('span', { class: 'jkey' }, name), ` ${Array.isArray(value) ? '[' : '{'} ${entries.length} ${unit}${entries.length === 1 ? '' : 's'}`),
      entries.map(([k, v]) => jsonTree(Array.isArray(value) ? k : JSON.stringify(k), v)));
  }
  return h('div', { class: 'json leaf' }, h('span', { class: 'jkey' }, name), ': ', h('span', { class: 'jval' }, JSON.stringify(value)));
}

// ---- configuration --------------------------------------------------------

// The URL fragment carries the configuration (never sent to any server;
// see link.js) and where in the page to go. It is read when the page loads
// and whenever another link is opened in the same tab; the address bar then
// keeps only where the queue is and the view or task shown (navFragment):
// credentials live in this page's memory only.
function readFragment() {
  return readLink(location.hash);
}

// writeAddress puts the current view (and task) in the address bar, so the
// address is a link to what the page shows; push adds a history entry (the
// browser's back button returns to the previous view).
function writeAddress(push) {
  const frag = navFragment(state.cfg, { view: state.view, task: state.selected || '', search: state.search?.text || '', type: state.filter.type, workflow: state.workflow });
  if (location.hash === frag) return;
  if (push) history.pushState(null, '', frag);
  else history.replaceState(null, '', location.pathname + location.search + frag);
}

// What the page shows of one bucket (or API); connect starts over from it.
const fresh = () => ({
  shards: [], shardChars: 1,
  filter: { shard: '', status: '', type: '' }, cursors: [''], page: 0, tasks: [], next: '', since: '', malformed: [],
  selected: null, detail: null, payloads: null, events: [], marks: [],
  workers: [], schedules: [], control: null, error: '', flash: '',
  // The overview: the last stats, and every minute of throughput seen
  // since connecting (the stats hold 15; the chart shows up to 60).
  stats: null, history: new Map(),
  // The fleet's request rate: the stats answer it was last computed
  // from (worker_requests and at), and the rate.
  fleet: null,
  // The search box's last query ({text, q}) and its results.
  search: null,
  // Task lists: the checked tasks, and the bulk action planned or under
  // way ({op, plan, running, stop, progress, made}).
  checked: new Set(), bulk: null, pendingPlan: null,
  // Workflows: the one shown (its id or name, '' for the list of names),
  // its last report ({ref, rep, made}), the names, and the names of the
  // workflows seen, by id (for a step's link in the task detail).
  workflow: '', wf: null, wfNames: null, wfNameOf: new Map(),
  refreshedAt: null, failedAt: null, loading: false, reload: false,
});

const state = {
  backend: null, cfg: {}, view: 'overview', refreshTimer: null, tickTimer: null, pendingNav: null,
  // gen counts connections: a load that began under an earlier one (other
  // bucket, other credentials) drops its result.
  gen: 0,
  ...fresh(),
};

// Stale is thrown by current when the page moved to another connection
// while a load was under way.
class Stale extends Error {}

function current(gen) {
  if (gen !== state.gen) throw new Stale('the page moved to another link');
}

function connect(cfg, nav = {}) {
  state.gen++;
  Object.assign(state, fresh());
  state.cfg = cfg;
  state.view = nav.view || 'overview';
  state.selected = nav.task || null;
  state.filter.type = nav.type || '';
  state.workflow = nav.workflow || '';
  setSearch(nav.search || '');
  state.pendingNav = null;
  writeAddress(false);
  state.backend = cfg.api ? new ApiBackend({ api: cfg.api, token: cfg.token })
    : new S3Backend({ endpoint: cfg.endpoint, bucket: cfg.bucket, region: cfg.region, accessKeyId: cfg.ak, secretAccessKey: cfg.sk, sessionToken: cfg.st });
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#search').disabled = false;
  $('#where').textContent = cfg.api ? `API ${cfg.api}` : `bucket ${cfg.bucket}${cfg.endpoint ? ` at ${cfg.endpoint}` : ''}`;
  $('#readonly').hidden = !readOnly();
  start();
}

// readOnly says whether the link's credentials may only read (qo ui url
// and qo ui serve without --operator): the page then offers no action,
// which S3 would refuse anyway.
function readOnly() {
  return state.cfg.ro === '1';
}

// READ_ONLY says why an action is missing.
const READ_ONLY = 'this link is read-only: get one that may act with qo ui url --operator (or qo ui serve --operator)';

// disconnect forgets the current connection and its credentials.
function disconnect() {
  state.gen++;
  Object.assign(state, fresh());
  state.backend = null;
  state.cfg = {};
  clearInterval(state.tickTimer);
  state.tickTimer = null;
  $('#refreshed').textContent = '';
  $('#search').disabled = true;
  $('#bulk-dialog').close?.();
}

function showLogin(message) {
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#login-msg').textContent = message || '';
}

$('#login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  connect(Object.fromEntries([...f.entries()].filter(([, v]) => v)), state.pendingNav || {});
});

// openLink connects with a link's settings, or asks for keys when it
// carries none (keeping the endpoint, bucket and region it names, and the
// view or task it points at for after the keys are entered).
function openLink(cfg, nav = {}) {
  if (cfg.code) {
    // A one-time code (links qo serve and qo ui serve print): out of the
    // address bar before anything else, then exchanged once.
    const { code, ...rest } = cfg;
    history.replaceState(null, '', location.pathname + location.search + navFragment(rest, nav));
    const gen = ++state.gen;
    redeemCode(rest, code).then((creds) => {
      if (gen === state.gen) openLink({ ...rest, ...creds }, nav);
    }, (e) => {
      if (gen !== state.gen) return;
      // Through the API a session this browser opened earlier may still
      // hold: the API says so, or asks for a new link.
      if (rest.api) openLink(rest, nav);
      else {
        disconnect();
        state.pendingNav = nav;
        showLogin(`This link's one-time code did not work (${e.message}): get a new link (qo ui serve), or enter keys.`);
      }
    });
    return;
  }
  if (canConnect(cfg)) {
    connect(cfg, nav);
  } else {
    disconnect();
    state.pendingNav = nav;
    // The link may have carried part of a key: the address keeps only
    // where the queue is and where to go.
    if (location.hash) history.replaceState(null, '', location.pathname + location.search + navFragment(cfg, nav));
    showLogin(cfg.bucket ? `Enter credentials for bucket ${cfg.bucket}.` : '');
  }
  if (cfg.bucket) {
    const form = $('#login-form');
    form.reset();
    for (const k of ['endpoint', 'bucket', 'region']) if (cfg[k]) form.querySelector(`[name=${k}]`).value = cfg[k];
  }
}

// redeemCode exchanges a link's one-time code, once, with the server that
// served this page (a POST, refused from other sites): for qo serve's API
// it opens a session (an HttpOnly cookie: nothing for the page to keep);
// qo ui serve answers with the link's short-lived credentials, which stay
// in this page's memory only. The code is worthless afterwards, so the
// browser's history keeps nothing of use.
async function redeemCode(cfg, code) {
  const url = cfg.api ? `${cfg.api.replace(/\/+$/, '')}/api/session` : new URL('session', location.href).href;
  const res = await fetch(url, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }), credentials: 'same-origin', cache: 'no-store',
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error?.message || `${res.status} ${res.statusText}`);
  if (cfg.api) return {};
  const creds = {};
  for (const k of ['ak', 'sk', 'st', 'exp', 'ro']) if (typeof data[k] === 'string' && data[k]) creds[k] = data[k];
  if (!creds.ak || !creds.sk) throw new Error('the server answered without credentials');
  return creds;
}

// ---- loading ----------------------------------------------------------------

// guard runs fn and shows its error; nothing when the page moved to
// another connection meanwhile.
async function guard(fn) {
  const gen = state.gen;
  let error = '';
  try {
    await fn();
  } catch (e) {
    if (e instanceof Stale) return;
    error = e.message;
  }
  if (gen !== state.gen) return;
  state.error = error;
  renderStatus();
}

async function start() {
  const gen = state.gen;
  const backend = state.backend;
  await guard(async () => {
    const shards = await backend.shards();
    current(gen);
    state.shards = shards;
    state.shardChars = shards[0]?.length || 1;
  });
  if (gen !== state.gen) return;
  renderFilters();
  render();
  await refresh();
  if (gen !== state.gen) return;
  tick();
  clearInterval(state.tickTimer);
  state.tickTimer = setInterval(tick, 1000);
}

// refresh loads what the current view shows. One load runs at a time: a
// refresh asked for meanwhile (another view chosen, the timer) runs once
// the current one ends, so a slow bucket never piles requests up.
async function refresh() {
  const gen = state.gen;
  const backend = state.backend;
  if (!backend) return;
  if (state.loading) {
    state.reload = true;
    return;
  }
  state.loading = true;
  let ok = false;
  await guard(async () => {
    if (state.view === 'overview') {
      const st = await backend.stats();
      current(gen);
      takeStats(st);
      state.malformed = st.malformed || [];
    } else if (state.view === 'tasks' || state.view === 'dead') {
      // The dead letters filter by type (their keys name it); the task
      // list by shard and status.
      const filter = listFilter();
      const page = await backend.listTasks({ ...filter, cursor: state.cursors[state.page] });
      current(gen);
      state.tasks = page.tasks;
      state.next = page.next_cursor;
      state.since = page.since || '';
      state.malformed = page.malformed || [];
      // Only tasks on the page stay checked: one that left the dead
      // letters meanwhile is no longer a candidate.
      const shown = new Set(page.tasks.map((t) => t.id));
      for (const id of state.checked) if (!shown.has(id)) state.checked.delete(id);
      // The type menu of the dead letters comes from the counts; read them
      // once when the overview has not.
      if (state.view === 'dead' && !state.stats) {
        const st = await backend.stats();
        current(gen);
        takeStats(st);
      }
      if (state.selected) await loadDetail(state.selected);
    } else if (state.view === 'search') {
      await runSearch(gen, backend);
      if (state.selected) await loadDetail(state.selected);
    } else if (state.view === 'workflow') {
      await loadWorkflow(gen, backend);
      if (state.selected) await loadDetail(state.selected);
    } else if (state.view === 'schedules') {
      const s = await backend.schedules();
      current(gen);
      state.schedules = s.schedules;
      state.malformed = s.malformed;
    } else {
      const w = await backend.workers();
      current(gen);
      state.workers = w.workers;
      state.malformed = w.malformed;
    }
    const control = await backend.control().catch((e) => ({ error: e.message }));
    current(gen);
    state.control = control;
    ok = true;
  });
  if (gen !== state.gen) return;
  if (ok) state.refreshedAt = new Date();
  else state.failedAt = new Date();
  render();
  state.loading = false;
  if (state.reload) {
    state.reload = false;
    refresh();
  }
}

// takeStats keeps a stats answer: the chart's minutes (the last hour, from
// the monitor's rollup and the heartbeats) and the fleet's request rate.
function takeStats(st) {
  state.stats = st;
  mergeRecent(state.history, st.last_hour?.length ? st.last_hour : st.recent);
  // The rate comes with the answer (inspect.RateMeter, or RateMeter in
  // the backend reading the bucket): measured between heartbeats.
  if (st.request_rate) state.fleet = { perSec: st.request_rate.per_second, perHour: st.request_rate.dollars_per_hour };
}

// setSearch sets the search box's query (the text typed, or a link's):
// parsed, or the reason it cannot be searched for.
function setSearch(text) {
  if (!text) {
    state.search = null;
    return;
  }
  const q = parseSearch(text);
  state.search = { text: q.text || text, q, tasks: [], more: [], made: null, done: false };
  $('#search').value = state.search.text;
}

// runSearch runs the current search and counts what it sent. A single
// task found opens in the detail.
async function runSearch(gen, backend) {
  const sr = state.search;
  if (!sr || sr.q.error) return;
  const before = backend.requests();
  const r = await backend.search(sr.q);
  current(gen);
  if (state.search !== sr) return;
  const after = backend.requests();
  sr.tasks = r.tasks;
  sr.more = r.more;
  sr.made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  sr.done = true;
  state.malformed = r.malformed || [];
  if (r.tasks.length === 1 && !state.selected) {
    state.selected = r.tasks[0].id;
    writeAddress(false);
  }
}

// loadWorkflow reads the workflow shown (its record and a GET per step;
// through the API one request), or the list of names when none is.
async function loadWorkflow(gen, backend) {
  const ref = state.workflow;
  if (!ref) {
    const r = await backend.workflowNames();
    current(gen);
    state.wfNames = r;
    state.malformed = r.malformed || [];
    for (const w of r.workflows) state.wfNameOf.set(w.id, w.name);
    return;
  }
  const before = backend.requests();
  const rep = await backend.workflow(ref);
  current(gen);
  const after = backend.requests();
  if (state.workflow !== ref) return;
  const made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  state.wf = { ref, rep, made };
  state.malformed = [];
  if (rep.name) state.wfNameOf.set(rep.id, rep.name);
}

// workflowName is the name of workflow id, when the page knows it or can
// read it: the record's one GET in S3 mode, once per workflow (through
// the API, a workflow's report is the only way: read once too).
async function workflowName(backend, id) {
  if (state.wfNameOf.has(id)) return state.wfNameOf.get(id);
  let name = '';
  try {
    name = (await backend.workflowRecordName(id)) || '';
  } catch {
    // the link then names the workflow by its id
  }
  state.wfNameOf.set(id, name);
  return name;
}

async function loadDetail(id) {
  const gen = state.gen;
  const backend = state.backend;
  const { task } = await backend.getTask(id, state.shardChars);
  if (task.workflow?.id) await workflowName(backend, task.workflow.id);
  // An offloaded payload that cannot be read is shown as an error in its
  // place; the rest of the detail still renders.
  const payloads = await backend.payloads(task).catch((e) => ({ error: e.message }));
  const events = await backend.history(task);
  // A running task's progress (one GET of its worker's entry); the detail
  // shows without it when it cannot be read.
  const progress = await backend.taskProgress(task).catch(() => null);
  current(gen);
  // A load for a task no longer selected (the operator clicked another
  // meanwhile) must not replace the newer one.
  if (state.selected !== id) return;
  Object.assign(state, { detail: task, payloads, events, progress });
}

// setRefresh sets the auto-refresh period. A hidden tab (another tab in
// front, a minimised window) does not refresh: nobody looks, and each
// refresh costs requests; it refreshes at once when shown again.
function setRefresh(seconds) {
  clearInterval(state.refreshTimer);
  state.refreshSeconds = seconds;
  // Nor while a bulk action runs: its progress shows, and the view
  // reloads once it ends.
  state.refreshTimer = seconds > 0 ? setInterval(() => { if (!document.hidden && !state.bulk?.running) refresh(); }, seconds * 1000) : null;
  renderStatus();
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden || !state.refreshSeconds || !state.backend) return;
  if (!state.refreshedAt || Date.now() - state.refreshedAt >= state.refreshSeconds * 1000) refresh();
});

// tick moves the countdowns and the credential expiry every second.
function tick() {
  if (!state.backend) return;
  const now = state.backend.now();
  for (const el of document.querySelectorAll('[data-countdown]')) {
    const t = shownTasks().find((x) => x.id === el.dataset.countdown);
    if (t) el.textContent = countdown(t, now);
  }
  const exp = state.cfg.exp;
  const el = $('#expiry');
  if (!exp) {
    el.textContent = state.cfg.api ? '' : 'credentials: entered by hand or long-lived (kept in this page only)';
  } else {
    const left = Date.parse(exp) - Date.now();
    el.textContent = left > 0 ? `credentials expire in ${short(left)}` : 'credentials expired: get a new link with qo ui url';
    el.className = left > 300000 ? '' : 'warn';
  }
}

// ---- rendering ----------------------------------------------------------------

// renderStatus shows the last error, which the next load that succeeds
// clears (guard resets it), or the last action's outcome; the line keeps
// its height either way (style.css), so nothing below it moves.
function renderStatus() {
  const el = $('#status');
  const retry = state.refreshSeconds ? ` Retrying every ${state.refreshSeconds} s.` : ' Auto-refresh is off: press Refresh to try again.';
  el.textContent = state.error ? `Error: ${state.error}.${retry}` : state.flash;
  el.className = state.error ? 'error banner' : 'ok';
  el.setAttribute('role', state.error ? 'alert' : 'status');
  const t = (d) => d.toLocaleTimeString();
  const r = $('#refreshed');
  if (!state.backend) r.textContent = '';
  else if (state.error && state.failedAt) r.textContent = `refresh failed ${t(state.failedAt)}${state.refreshedAt ? ` · last refreshed ${t(state.refreshedAt)}` : ''}`;
  else r.textContent = state.refreshedAt ? `last refreshed ${t(state.refreshedAt)}` : 'loading…';
  r.className = state.error ? 'warn' : 'dim';
}

function renderFilters() {
  const shard = $('#shard');
  shard.replaceChildren(h('option', { value: '' }, 'all shards'), ...state.shards.map((s) => h('option', { value: s }, `shard ${s}`)));
  const status = $('#statusf');
  const recent = `last ${LIST_WINDOW_MS / 3600000} h`;
  status.replaceChildren(h('option', { value: '' }, `all but archived (${recent})`),
    ...STATUSES.map((s) => h('option', { value: s }, INDEXED.includes(s) ? s : `${s} (${recent})`)));
}

// renderPaused shows the pause switches: the whole queue, and paused types.
function renderPaused() {
  const c = state.control;
  const types = Object.entries(c?.paused_types || {}).sort(([a], [b]) => a.localeCompare(b));
  const parts = [];
  if (c?.error) parts.push(`The pause switches (control.json) could not be read: ${c.error}`);
  if (c?.paused) parts.push(`The whole queue is paused${c.reason ? `: ${c.reason}` : ''} (since ${c.paused_at || '-'}). Workers start nothing until qo resume --all.`);
  if (types.length) parts.push(`Paused types: ${types.map(([t, p]) => (p.reason ? `${t} (${p.reason})` : t)).join(', ')}.`);
  const el = $('#paused');
  el.textContent = parts.join(' ');
  el.hidden = parts.length === 0;
}

// renderViews shows the current view's section and marks its tab.
function renderViews() {
  for (const v of VIEWS) {
    const tab = $(`#tab-${v}`);
    tab.classList.toggle('on', state.view === v);
    tab.setAttribute('aria-current', state.view === v ? 'page' : 'false');
  }
  const list = state.view === 'tasks' || state.view === 'dead' || state.view === 'search';
  $('#overview-view').hidden = state.view !== 'overview';
  $('#tasks-view').hidden = !list;
  $('#workers-view').hidden = state.view !== 'workers';
  $('#schedules-view').hidden = state.view !== 'schedules';
  $('#workflow-view').hidden = state.view !== 'workflow';
  // One task detail: under the list, or under a workflow's graph.
  const host = state.view === 'workflow' ? $('#wf-detail') : $('#tasks-split');
  if ($('#detail').parentElement !== host) host.append($('#detail'));
  // The dead letters are the task list of failed tasks, newest failure
  // first, of every type or one; the search view shows its results.
  $('#statusf').hidden = state.view !== 'tasks';
  $('#shard').hidden = state.view === 'search';
  $('#typef').hidden = state.view !== 'dead';
  $('#paging').hidden = state.view === 'search';
  $('#bulk').hidden = !checkable();
  $('#bulk-progress').hidden = !checkable() || !state.bulk?.progress;
  $('#search-info').hidden = state.view !== 'search';
  $('#list-title').textContent = state.view === 'dead' ? 'Dead letters: failed tasks, newest failure first'
    : state.view === 'search' ? `Search: ${state.search?.text ?? ''}` : '';
}

// listFilter is the filter the list shown reads with: the dead letters
// are the failed tasks (of a type), the task list any status.
function listFilter() {
  return state.view === 'dead' ? { shard: state.filter.shard, status: 'failed', type: state.filter.type } : { shard: state.filter.shard, status: state.filter.status };
}

// checkable: the list shown has boxes to check tasks for a bulk action
// (none under a read-only link).
function checkable() {
  return (state.view === 'tasks' || state.view === 'dead') && !readOnly();
}

// shownTasks are the tasks the list shows: a page, or search results.
function shownTasks() {
  return state.view === 'search' ? state.search?.tasks || [] : state.tasks;
}

function render() {
  const readOnly = Boolean(state.backend?.readOnly);
  document.body.classList.toggle('readonly', readOnly);
  $('#readonly-note').hidden = !readOnly;
  renderViews();
  renderPaused();
  const now = state.backend.now();
  $('#malformed').textContent = state.malformed?.length
    ? `${state.malformed.length} malformed object(s) skipped, e.g. ${state.malformed[0].key}: ${state.malformed[0].error}` : '';
  if (state.view === 'overview') renderOverview(now);
  else if (state.view === 'tasks' || state.view === 'dead' || state.view === 'search') renderTasks(now);
  else if (state.view === 'schedules') renderSchedules(now);
  else if (state.view === 'workflow') renderWorkflow(now);
  else renderWorkers(now);
  renderStatus();
}

// ---- overview -------------------------------------------------------------

const fmt = (n) => Number(n || 0).toLocaleString('en-US');

function renderOverview(now) {
  const st = state.stats;
  if (!st) {
    $('#counts').replaceChildren(h('p', { class: 'dim' }, 'Counting tasks…'));
    return;
  }
  renderCounts(st);
  renderChart(now);
  renderShardMap(st);
  renderTypes(st);
}

// renderCounts: the live statuses (from the indexes: finished tasks are not
// counted, the chart shows them), the backlog's age and the fleet. Each
// card has a fixed size, so changing numbers move nothing.
function renderCounts(st) {
  const atLeast = st.partial ? '≥ ' : '';
  const card = (key, value, label, note) => h('div', { class: `card ${key}`, 'data-count': key },
    h('div', { class: 'big' }, value), h('div', {}, label), h('div', { class: 'dim small' }, note || ' '));
  const w = st.workers || {};
  const r = state.fleet;
  const rate = card('requests', r ? `${r.perSec.toFixed(1)} req/s` : '-', 'S3 requests',
    r ? `≈ ${dollars(r.perHour)}/hour` : 'after the workers\' next heartbeat');
  rate.title = 'The S3 requests the workers sent per second between their last two heartbeats, from the counters in them (as qo tui shows them), '
    + 'and what an hour at that rate costs at AWS S3 Standard list prices ($0.005 per 1,000 PUT or LIST, $0.0004 per 1,000 GET, DELETE free). '
    + 'This page\'s own requests are not counted.';
  $('#counts').replaceChildren(
    ...COUNTED.map((status) => card(status, `${atLeast}${fmt(st.by_status?.[status])}`, status,
      status === 'pending' ? `${fmt(st.delayed)} delayed or in backoff` : status === 'failed' ? 'dead letters'
        : status === 'waiting' ? 'for their parents to end' : 'holding a lease')),
    card('oldest', st.oldest_pending_age_seconds > 0 ? short(st.oldest_pending_age_seconds * 1000) : '-', 'oldest pending',
      st.oldest_pending_age_seconds > 0 ? 'of an available task' : 'nothing pending'),
    card('workers', fmt(w.active), 'workers active', `${fmt(w.stale)} stale · ${fmt(w.dead)} dead`), rate);
  const unserved = (st.unserved || []).map((u) => `${u.type}: ${fmt(u.pending)} pending, ${u.reason}`);
  $('#partial').textContent = [st.partial ? 'Counts are lower bounds: an index holds more entries than one refresh reads.' : '',
    unserved.length ? `Nothing runs ${unserved.join('; ')}.` : ''].filter(Boolean).join(' ');
}

// The chart's drawing box (SVG user units); the page scales it to its width.
const CHART = { w: 600, h: 120, left: 40, top: 8, bottom: 22 };

function renderChart(clock) {
  // The chart ends with the later of the page's minute and the stats'
  // (the page's estimate of the server clock may trail it by a moment).
  const now = new Date(Math.max(clock.getTime(), Date.parse(state.stats?.at) || 0));
  const series = chartSeries(state.history, now.getTime());
  const b = bars(series, CHART.w, CHART.h);
  const x0 = CHART.left;
  const y0 = CHART.top;
  const hhmm = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const grid = [b.top, Number.isInteger(b.top / 2) ? b.top / 2 : null, 0].filter((v) => v != null).map((v) => {
    const y = y0 + CHART.h - (v / b.top) * CHART.h;
    return [s('line', { class: 'grid', x1: x0, x2: x0 + CHART.w, y1: y, y2: y }),
      s('text', { class: 'axis', x: x0 - 4, y: y + 4, 'text-anchor': 'end' }, fmt(v))];
  });
  const last = now.getTime() - (now.getTime() % MINUTE_MS);
  const xlabels = [[0, '60 min ago'], [30, '30 min ago'], [59, hhmm(last)]].map(([i, label]) => s('text', {
    class: 'axis', x: x0 + i * b.step + b.step / 2, y: y0 + CHART.h + 16, 'text-anchor': i === 0 ? 'start' : i === 59 ? 'end' : 'middle',
  }, label));
  const unknown = b.unknown.map((u) => s('rect', { class: 'unknown', x: x0 + u.x, y: y0, width: u.w, height: CHART.h },
    s('title', {}, 'not seen yet: the stats hold the last hour from the monitor\'s rollup (15 minutes from an older qo serve), and the page keeps what it saw since it opened')));
  const columns = b.bars.map((bar) => s('g', { class: 'minute' },
    s('title', {}, `${hhmm(bar.start)}: ${fmt(bar.completed)} completed, ${fmt(bar.failed)} failed attempts`),
    // A transparent full-height rect makes the whole minute hoverable.
    s('rect', { class: 'hover', x: x0 + bar.x, y: y0, width: bar.w, height: CHART.h }),
    bar.c ? s('rect', { class: 'completed', x: x0 + bar.x, y: y0 + bar.c.y, width: bar.w, height: bar.c.h }) : null,
    bar.f ? s('rect', { class: 'failed', x: x0 + bar.x, y: y0 + bar.f.y, width: bar.w, height: bar.f.h }) : null));
  $('#chart').replaceChildren(s('svg', {
    viewBox: `0 0 ${CHART.left + CHART.w + 4} ${CHART.top + CHART.h + CHART.bottom}`, role: 'img',
    'aria-label': `Tasks completed and failed per minute over the last hour: ${series.totals.completed} completed, ${series.totals.failed} failed`,
  }, grid, xlabels, unknown, columns));
  const { completed, failed, minutes } = series.totals;
  const rate = completed + failed > 0 ? ` (${((100 * failed) / (completed + failed)).toFixed(1)}% of attempts, retries included)` : '';
  const day = (state.stats?.last_day || []).reduce((a, m) => ({ c: a.c + (m.completed || 0), f: a.f + (m.failed || 0) }), { c: 0, f: 0 });
  $('#chart-legend').replaceChildren(
    h('span', { class: 'key completed' }, `completed ${fmt(completed)}`), ' ',
    h('span', { class: 'key failed' }, `failed attempts ${fmt(failed)}${rate}`), ' ',
    h('span', { class: 'dim' }, minutes ? `over the ${minutes} minute${minutes === 1 ? '' : 's'} seen; ${(completed / minutes).toFixed(1)}/min completed` : 'no minute seen yet'),
    state.stats?.last_day?.length ? h('span', { class: 'dim' }, ` · last ${state.stats.last_day.length} h: ${fmt(day.c)} completed, ${fmt(day.f)} failed attempts`) : '');
}

// renderShardMap draws one cell per shard with its backlog (pending and
// running), marked when it holds failed tasks, as qo tui's overview does;
// a cell opens the shard's tasks.
function renderShardMap(st) {
  const cells = state.shards.map((shard) => {
    const c = st.by_shard?.[shard] || {};
    const backlog = (c.pending || 0) + (c.running || 0);
    const cls = c.failed ? 'has-failed' : c.running ? 'has-running' : backlog ? 'has-pending' : 'empty';
    return h('button', {
      class: `shard ${cls}`, 'data-shard': shard, title: `shard ${shard}: ${fmt(c.pending)} pending, ${fmt(c.running)} running, ${fmt(c.failed)} failed`,
      onclick: () => { state.filter.shard = shard; $('#shard').value = shard; go('tasks'); },
    }, backlog > 99 ? '99+' : backlog ? String(backlog) : c.failed ? '!' : '·');
  });
  const map = $('#shardmap');
  map.style.setProperty('--cols', String(Math.min(16, state.shards.length || 1)));
  map.replaceChildren(...cells);
  const top = Object.entries(st.by_shard || {}).map(([shard, c]) => [shard, c, (c.pending || 0) + (c.running || 0) + (c.failed || 0)])
    .filter(([, , n]) => n > 0).sort((a, b) => b[2] - a[2] || a[0].localeCompare(b[0])).slice(0, 4);
  $('#busiest').textContent = top.length
    ? `busiest: ${top.map(([shard, c]) => `${shard} p${c.pending || 0} r${c.running || 0} f${c.failed || 0}`).join(' · ')}` : 'every shard is empty';
}

// renderTypes: one row per task type with tasks in the indexes, a pause
// switch or a fleet-wide limit, with its limit and its own pause toggle.
function renderTypes(st) {
  const c = state.control || {};
  const pausedTypes = c.paused_types || {};
  const limits = c.limits || {};
  const types = [...new Set([...Object.keys(st.by_type || {}), ...Object.keys(pausedTypes), ...Object.keys(limits)])].sort();
  const rows = types.map((type) => {
    const n = st.by_type?.[type] || {};
    const own = Object.hasOwn(pausedTypes, type);
    const age = st.oldest_pending_age_seconds_by_type?.[type];
    const state_ = own ? `paused${pausedTypes[type].reason ? ` (${pausedTypes[type].reason})` : ''}` : c.paused ? 'paused (whole queue)' : 'active';
    return h('tr', { class: 'type', 'data-type': type },
      h('td', { class: 'mono', title: type }, type), h('td', { class: 'num pending' }, fmt(n.pending)),
      h('td', { class: 'num running' }, fmt(n.running)),
      // A type's failed count opens its dead letters (where they can be
      // replayed or archived together).
      h('td', { class: 'num failed' }, n.failed ? h('a', { href: navFragment(state.cfg, { view: 'dead', type }), title: `the dead letters of ${type}` }, fmt(n.failed)) : fmt(n.failed)),
      h('td', { class: 'oldest' }, age >= 0 ? short(age * 1000) : '-'),
      h('td', { class: 'limit' }, limitText(limits[type]) || '-'),
      h('td', { class: `pause-state ${own || c.paused ? 'warn' : 'dim'}` }, state_),
      h('td', {}, h('button', {
        class: 'toggle', 'aria-label': `${own ? 'resume' : 'pause'} type ${type}`, disabled: Boolean(c.error) || readOnly(),
        title: readOnly() ? READ_ONLY : '',
        onclick: () => togglePause(type, own),
      }, own ? 'Resume' : 'Pause')));
  });
  $('#types').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 8, class: 'dim' }, 'no task waits, runs or failed'))]));
  const all = $('#pause-all');
  all.textContent = c.paused ? 'Resume the whole queue' : 'Pause the whole queue';
  all.disabled = Boolean(c.error) || readOnly();
  all.title = readOnly() ? READ_ONLY : '';
}

// togglePause pauses or resumes a type (the whole queue when type is
// empty) with the same switch as qo pause and qo resume, after a
// confirmation that says what it does.
async function togglePause(type, paused) {
  const what = type ? `type ${type}` : 'the whole queue';
  const question = paused ? `Resume ${what}? Workers start claiming ${type ? 'its' : 'all'} tasks again.`
    : `Pause ${what}? Workers stop claiming ${type ? 'its' : 'any'} tasks; running ones finish, and submits still queue.`;
  if (!confirm(question)) return;
  if (await action(() => state.backend.setPause(paused ? 'resume' : 'pause', type, 'from the web UI'))) {
    state.flash = `${paused ? 'resumed' : 'paused'} ${what}`;
  }
}

// action runs an operator action and reloads the view when it succeeded.
// A refused action's error stays until the next timed refresh rather than
// being wiped at once by the reload.
async function action(fn) {
  let ok = false;
  await guard(async () => {
    await fn();
    ok = true;
  });
  if (ok) await refresh();
  return ok;
}

const COLUMNS = ['id', 'type', 'priority', 'status', 'attempt', 'updated', 'next / lease'];

// renderTasks draws the list (a page of tasks or the dead letters, with a
// box to check each, or search results) and the selected task's detail.
// The dead letters say what each task died of.
function renderTasks(now) {
  const dead = state.view === 'dead';
  const boxes = checkable();
  const tasks = shownTasks();
  const busy = Boolean(state.bulk?.running);
  const columns = dead ? [...COLUMNS, 'last error'] : COLUMNS;
  $('#tasks-head').replaceChildren(h('tr', {},
    boxes ? h('th', { class: 'check' }, h('input', {
      type: 'checkbox', id: 'check-all', 'aria-label': 'check every task on this page', disabled: busy || !tasks.length,
      checked: tasks.length > 0 && tasks.every((t) => state.checked.has(t.id)), onchange: (e) => checkAll(e.target.checked),
    })) : null,
    columns.map((c) => h('th', {}, c))));
  const rows = tasks.map((t) => h('tr', {
    class: `row ${t.id === state.selected ? 'sel' : ''}`, 'data-id': t.id, onclick: () => select(t.id),
  },
  boxes ? h('td', { class: 'check', onclick: (e) => e.stopPropagation() }, h('input', {
    type: 'checkbox', 'aria-label': `check task ${t.id}`, checked: state.checked.has(t.id), disabled: busy,
    onchange: (e) => check(t.id, e.target.checked),
  })) : null,
  h('td', { class: 'mono', title: t.id }, shortID(t.id)), h('td', {}, t.task_type),
  h('td', {}, h('span', { class: `prio ${priorityOf(t)}` }, priorityOf(t))),
  h('td', {}, h('span', { class: `st ${t.status}` }, t.status)), h('td', { class: 'num' }, t.attempt),
  h('td', {}, ago(t.updated_at, now)), h('td', { 'data-countdown': t.id }, countdown(t, now)),
  dead ? h('td', { class: 'last-error', title: t.last_error || '' }, oneLine(t.last_error || '-')) : null));
  const empty = state.view === 'search' ? (state.search?.done ? 'nothing found' : '') : dead ? 'no dead letters on this page' : 'no tasks on this page';
  $('#tasks').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: columns.length + (boxes ? 1 : 0), class: 'dim' }, empty))]));
  $('#more').disabled = !state.next;
  $('#prev').disabled = state.page === 0;
  // Finished tasks are listed from a creation window (pending, running and
  // failed ones from their indexes, whatever their age).
  $('#page').textContent = `page ${state.page + 1}${state.since ? ` · created since ${new Date(state.since).toLocaleString()}` : ''}`;
  if (boxes) renderBulk();
  if (state.view === 'search') renderSearchInfo();
  renderDetail(now);
}

// oneLine folds an error onto one short line (the cell's title has it all).
const oneLine = (s) => {
  const one = String(s).replace(/\s+/g, ' ').trim();
  return one.length > 160 ? `${one.slice(0, 159)}…` : one;
};

function check(id, on) {
  if (on) state.checked.add(id);
  else state.checked.delete(id);
  renderTasks(state.backend.now());
}

function checkAll(on) {
  for (const t of state.tasks) {
    if (on) state.checked.add(t.id);
    else state.checked.delete(t.id);
  }
  renderTasks(state.backend.now());
}

// ---- bulk actions on the task lists -------------------------------------------

// renderTypeMenu fills the dead letters' type filter from the counts (the
// types with failed tasks) and the page, rebuilt only when that changes
// (a refresh must not close a menu the operator has open).
function renderTypeMenu() {
  const counts = state.stats?.by_type || {};
  const types = new Set([...Object.keys(counts).filter((t) => counts[t].failed), ...state.tasks.map((t) => t.task_type), state.filter.type].filter(Boolean));
  const opts = [['', 'all types'], ...[...types].sort().map((t) => [t, counts[t]?.failed ? `${t} (${fmt(counts[t].failed)})` : t])];
  const sel = $('#typef');
  const key = JSON.stringify(opts);
  if (sel.dataset.key !== key) {
    sel.replaceChildren(...opts.map(([v, label]) => h('option', { value: v }, label)));
    sel.dataset.key = key;
  }
  sel.value = state.filter.type;
}

// renderBulk: the bar above the task lists: the checked tasks (any state:
// each action skips, saying why, the tasks it does not apply to), and
// every task of the filter: of the type chosen for the dead letters, of
// the status and shard chosen for the task list.
function renderBulk() {
  const dead = state.view === 'dead';
  if (dead) renderTypeMenu();
  const n = state.checked.size;
  const busy = Boolean(state.bulk?.running);
  $('#bulk-checked').textContent = `${fmt(n)} checked`;
  for (const op of BULK_BUTTON_OPS) $(`#bulk-${op}-checked`).disabled = busy || !n;
  $('#bulk-cancel-checked').hidden = dead; // dead letters are failed: cancel applies to none
  const type = state.filter.type;
  const counted = state.stats?.by_type?.[type]?.failed;
  if (dead) {
    $('#bulk-type-label').textContent = type
      ? `every failed task of type ${type}${counted ? ` (${fmt(counted)} counted)` : ''}:` : 'choose a type to replay or archive all its failed tasks';
  } else {
    $('#bulk-type-label').textContent = `every task in this filter (${filterWords()}):`;
  }
  for (const op of BULK_BUTTON_OPS) {
    const b = $(`#bulk-${op}-type`);
    b.hidden = dead ? (!type || op === 'cancel') : false;
    b.disabled = busy;
  }
  renderBulkProgress();
}

const BULK_BUTTON_OPS = ['replay', 'archive', 'cancel'];

// filterWords says which tasks the task list's filter selects.
function filterWords() {
  const { status, shard } = state.filter;
  return `${status ? `status ${status}` : 'every status but archived'}${shard ? `, shard ${shard}` : ''}`;
}

// bulkCandidates finds what a bulk action in S3 mode plans from: the
// checked tasks as last read, the dead letters of the chosen type (from
// their keys), or the tasks of the list's filter (read page by page).
async function bulkCandidates(backend, scope) {
  if (scope === 'checked') {
    const candidates = state.tasks.filter((t) => state.checked.has(t.id));
    return { candidates, found: null, partial: false };
  }
  if (state.view === 'dead') return backend.deadOfType(state.filter.type);
  return backend.tasksInFilter(listFilter());
}

// bulkRequest is what the API's bulk action is asked to act on.
function bulkRequest(scope) {
  if (scope === 'checked') return { ids: [...state.checked] };
  const { status, shard, type = '' } = listFilter();
  return { filter: { status: status ? [status] : [], shard, type } };
}

// startBulk plans a bulk action (op on the checked tasks, or on every
// task of the filter) and asks for confirmation, saying how many tasks
// and what it costs in requests. Reading the bucket, the page plans with
// the shared rules; through qo serve, the server's bulk action plans
// (dry_run) and later runs it.
async function startBulk(op, scope) {
  const gen = state.gen;
  const backend = state.backend;
  if (!backend || state.bulk?.running) return;
  if (scope === 'type' && state.view === 'dead' && !state.filter.type) return;
  const n0 = state.checked.size;
  const what = scope === 'checked' ? `the ${fmt(n0)} checked task${n0 === 1 ? '' : 's'}`
    : state.view === 'dead' ? `every failed task of type ${state.filter.type}` : `every task in this filter (${filterWords()})`;
  let plan = null;
  if (scope !== 'checked' || backend.kind === 'API') {
    state.flash = `Finding ${what}…`;
    renderStatus();
  }
  await guard(async () => {
    if (backend.kind === 'API') {
      const req = bulkRequest(scope);
      plan = serverPlan(op, req, await backend.bulk(op, req, true));
    } else {
      const { candidates, found, partial } = await bulkCandidates(backend, scope);
      plan = planBulk({ op, mode: backend.kind, candidates, now: backend.now().toISOString(), found, partial });
    }
    current(gen);
  });
  if (!plan) return;
  state.flash = '';
  renderStatus();
  const verb = op[0].toUpperCase() + op.slice(1);
  const n = plan.items.length;
  $('#bulk-title').textContent = `${verb} ${what}?`;
  $('#bulk-cost').replaceChildren(h('strong', {}, `${fmt(n)} task${n === 1 ? '' : 's'}. Requests: `), plan.summary, h('span', { class: 'dim' }, `; about ${plan.dollars} at S3 Standard prices.`));
  $('#bulk-how').textContent = `Each task gets exactly what ${verb} does to one task (and qo ${op}): it is read, the rule applied, and written back only if it did not change meanwhile `
    + `(If-Match on its ETag). A task that changed and no longer allows it is reported and left as it is.${plan.server ? '' : ` ${BULK_CONCURRENCY} tasks at a time; Stop halts it.`}`;
  $('#bulk-skipped').replaceChildren(...(plan.skipped.length ? [
    h('p', {}, `${fmt(plan.skipped.length)} skipped:`),
    h('ul', { class: 'failures' }, plan.skipped.slice(0, 10).map((sk) => h('li', {}, h('span', { class: 'mono' }, sk.id ? shortID(sk.id) : '-'), `: ${sk.reason}`)),
      plan.skipped.length > 10 ? h('li', { class: 'dim' }, `and ${fmt(plan.skipped.length - 10)} more`) : null),
  ] : []));
  const go_ = $('#bulk-go');
  go_.textContent = `${verb} ${fmt(n)} task${n === 1 ? '' : 's'}`;
  go_.disabled = n === 0;
  state.pendingPlan = plan;
  const dialog = $('#bulk-dialog');
  dialog.returnValue = '';
  dialog.showModal();
  (n ? go_ : $('#bulk-cancel')).focus();
}

// runBulkNow runs a confirmed plan: the page's single action on each task,
// BULK_CONCURRENCY at a time, with its progress shown (or, through qo
// serve, one request for the server's bulk action on the tasks planned);
// then the view reloads.
async function runBulkNow(plan) {
  const gen = state.gen;
  const backend = state.backend;
  const b = {
    op: plan.op, mode: backend.kind, plan, running: true, stop: false, made: null,
    progress: { total: plan.items.length, done: 0, ok: 0, failed: [], skipped: 0, stopped: false, notStarted: 0 },
  };
  state.bulk = b;
  state.flash = '';
  renderViews();
  renderBulk();
  renderTasks(backend.now());
  const before = backend.requests();
  let progress;
  if (plan.server) {
    progress = { ...b.progress };
    try {
      const ans = await backend.bulk(plan.op, plan.server, false);
      const failed = [...(ans.failed || []), ...(ans.skipped || []).filter((s) => /^changed meanwhile/.test(s.reason))];
      Object.assign(progress, { done: plan.items.length, ok: (ans.done || []).length, failed: failed.map((f) => ({ id: f.id, error: f.reason })) });
    } catch (e) {
      Object.assign(progress, { stopped: true, notStarted: plan.items.length, failed: [{ id: '', error: String(e?.message ?? e) }] });
    }
  } else {
    progress = await runBulk(plan.items, (item) => backend.act(plan.op, item.id, state.shardChars), {
      onProgress: (p) => {
        b.progress = p;
        if (state.bulk === b) renderBulkProgress();
      },
      shouldStop: () => b.stop || gen !== state.gen,
    });
  }
  if (gen !== state.gen) return;
  const after = backend.requests();
  b.made = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
  b.progress = progress;
  b.running = false;
  state.checked.clear();
  state.flash = `${plan.op}: ${fmt(progress.ok)} of ${fmt(progress.total)} ${DONE[plan.op]}${progress.failed.length ? `, ${fmt(progress.failed.length)} failed` : ''}${progress.stopped ? ' (stopped)' : ''}`;
  await refresh();
}

const DONE = { replay: 'replayed', archive: 'archived', cancel: 'cancelled' };
const DOING = { replay: 'Replaying', archive: 'Archiving', cancel: 'Cancelling' };

// renderBulkProgress shows a bulk run: n of N, the tasks that failed with
// their error, Stop while it runs, and what it sent once done.
function renderBulkProgress() {
  const box = $('#bulk-progress');
  const b = state.bulk;
  box.hidden = !b || !checkable();
  if (!b) return;
  const p = b.progress;
  const verb = DONE[b.op];
  let head = `${DOING[b.op]}: ${fmt(p.done)} of ${fmt(p.total)} done`;
  if (!b.running) head = p.stopped ? `Stopped: ${fmt(p.done)} of ${fmt(p.total)} done, ${fmt(p.notStarted)} not started` : `Done: ${fmt(p.done)} of ${fmt(p.total)}`;
  box.replaceChildren(
    h('div', { class: 'progress-head' },
      h('strong', { id: 'bulk-status' }, head), h('span', {}, ` · ${fmt(p.ok)} ${verb} · ${fmt(p.failed.length)} failed`),
      b.running
        ? h('button', { id: 'bulk-stop', disabled: b.stop, onclick: () => { b.stop = true; renderBulkProgress(); } }, b.stop ? 'Stopping…' : 'Stop')
        : h('button', { id: 'bulk-close', onclick: () => { state.bulk = null; renderBulkProgress(); } }, 'Close')),
    h('progress', { max: Math.max(p.total, 1), value: p.done, 'aria-label': `${p.done} of ${p.total} done` }),
    b.made ? h('p', { class: 'dim small', id: 'bulk-made' }, `Sent ${formatOps(b.made)}${b.mode === 'API' ? ' to qo serve' : ''} (planned: ${b.plan.summary}).`) : null,
    p.failed.length ? h('ul', { id: 'bulk-failures', class: 'failures' }, p.failed.map((f) => h('li', { 'data-id': f.id },
      h('a', { class: 'mono', href: navFragment(state.cfg, { view: 'tasks', task: f.id }) }, f.id), ': ', h('span', { class: 'error' }, f.error)))) : null);
}

// ---- search -------------------------------------------------------------------

// renderSearchInfo says what was searched, what was found, what the search
// costs (and sent), and what it cannot find.
function renderSearchInfo() {
  const box = $('#search-info');
  const sr = state.search;
  if (!sr) {
    box.replaceChildren(h('p', { class: 'dim' }, 'Press / to search.'));
    return;
  }
  if (sr.q.error) {
    box.replaceChildren(h('p', { class: 'warn', id: 'search-error' }, sr.q.error));
    return;
  }
  const q = sr.q;
  const api = state.backend.kind === 'API';
  const by = q.kind === 'id' ? (q.full ? 'task id' : 'id prefix') : q.kind === 'type' ? 'task type' : 'idempotency key';
  const n = sr.tasks.length;
  let more = '';
  if (sr.more.includes('id')) more = ` (the first ${SEARCH_LIMIT}, oldest first: more match, give more of the id)`;
  else if (sr.more.length) more = ` (the first ${SEARCH_LIMIT} of each status; more are ${sr.more.join(', ')})`;
  const failed = q.kind === 'type' && sr.tasks.some((t) => t.status === 'failed');
  box.replaceChildren(
    h('p', { id: 'search-summary' }, sr.done ? `${fmt(n)} task${n === 1 ? '' : 's'} found by ${by}${more}.` : 'Searching…',
      failed ? [' ', h('a', { href: navFragment(state.cfg, { view: 'dead', type: q.type }) }, `dead letters of ${q.type}`)] : null),
    h('p', { class: 'dim small', id: 'search-cost' }, `Cost: ${searchCost(q, api ? 'API' : 'S3', state.shards)}`,
      sr.made ? `; this search sent ${formatOps(sr.made)}${api ? ' to qo serve' : ''}.` : '.'),
    searchNote(q, n) ? h('p', { class: 'dim small', id: 'search-note' }, searchNote(q, n)) : null);
}

function field(name, value) {
  return h('tr', {}, h('th', {}, name), h('td', {}, value ?? '-'));
}

function renderDetail(now) {
  const box = $('#detail');
  const t = state.detail;
  if (!t || t.id !== state.selected) {
    box.replaceChildren(h('p', { class: 'dim' }, state.view === 'workflow' ? 'Click a step to see its task: fields, data and history.' : 'Select a task to see its fields, data and history.'));
    return;
  }
  // The actions the transition table allows from the task's status.
  const actions = readOnly() ? [h('span', { id: 'act-readonly', class: 'dim small' }, READ_ONLY)]
    : [['replay', 'Replay'], ['archive', 'Archive'], ['cancel', 'Cancel']]
      .filter(([op]) => canAct(op, t.status)).map(([op, label]) => h('button', { id: `act-${op}`, onclick: () => act(op, t) }, label));
  const timeline = state.events.map((e, i) => h('tr', { class: 'version' },
    h('td', {}, h('input', {
      type: 'checkbox', 'aria-label': `compare version ${i + 1}`, checked: state.marks.includes(i),
      onchange: () => mark(i),
    })),
    h('td', {}, `v${i + 1}`), h('td', {}, e.at ? new Date(e.at).toISOString().replace('T', ' ').slice(0, 19) : '-'),
    h('td', {}, e.event, e.task?.actor ? h('span', { class: 'dim small actor' }, ` by ${e.task.actor}`) : ''), h('td', {}, e.status || ''), h('td', { class: 'num' }, e.attempt ?? ''), h('td', {}, e.worker_id || '-'),
    h('td', { class: 'error' }, e.error || '')));
  box.replaceChildren(
    h('h2', { class: 'mono' }, t.id),
    h('div', { class: 'actions' }, actions, h('button', { id: 'copy-id', title: 'copy the full id', onclick: () => copyID(t.id) }, 'Copy id'), h('a', { class: 'permalink', href: navFragment(state.cfg, { view: state.view, task: t.id, search: state.search?.text, type: state.filter.type, workflow: state.workflow }) }, 'link to this task')),
    h('table', { class: 'fields' },
      field('type', t.task_type), field('status', h('span', { class: `st ${t.status}` }, t.status)),
      field('priority', priorityOf(t)), field('shard', t.shard),
      field('attempt', `${t.attempt} (retries ${t.retry_count} of ${t.max_retries})`), field('rev', t.rev),
      field('created', t.created_at), field('updated', `${t.updated_at} (${ago(t.updated_at, now)})`),
      field('available', t.available_at), field('lease expires', t.lease_expires_at), field('worker', t.worker_id || '-'),
      state.progress ? field('progress', h('span', { id: 'progress' }, progressText(state.progress), state.progress.at ? ` (reported ${ago(state.progress.at, now)})` : '')) : null,
      t.expires_at ? field('expires', `${t.expires_at} (${ago(t.expires_at, now)})`) : null,
      field('timeout', `${t.timeout_seconds}s`), field('last event', t.last_event), field('idempotency key', t.idempotency_key || '-'),
      t.cancel_requested ? field('cancel', `requested: ${t.cancel_reason || '-'}`) : null,
      t.metadata && typeof t.metadata === 'object' ? field('metadata', Object.keys(t.metadata).sort().map((k) => `${k}=${t.metadata[k]}`).join(' ')) : null,
      t.last_error ? field('last error', h('span', { class: 'error' }, t.last_error)) : null,
      ...workflowFields(t)),
    h('h3', {}, 'Data'), h('div', { id: 'data' }, dataView(t)),
    h('h3', {}, `Timeline (${state.events.length} versions)`, ' ',
      h('button', { id: 'diff-btn', disabled: state.marks.length !== 2, onclick: showDiff }, 'Diff the two checked versions')),
    h('div', { class: 'scroll' }, h('table', { id: 'timeline' }, h('tr', {}, ['', '', 'at', 'event', 'status', 'attempt', 'worker', ''].map((c) => h('th', {}, c))), timeline)),
    h('pre', { id: 'diff', hidden: true }));
}

// taskHref links to another task: in the workflow shown when the page
// shows one, else in the task list.
function taskHref(id) {
  return state.view === 'workflow' ? navFragment(state.cfg, { view: 'workflow', workflow: state.workflow, task: id }) : navFragment(state.cfg, { view: 'tasks', task: id });
}

// workflowFields: what a task of a workflow says of it: the workflow and
// step (a link to the workflow view), its parents with the end recorded
// of each, its children, and the values input_from takes from the
// parents' outputs (from_parents, once each parent completed).
function workflowFields(t) {
  const rep = state.wf?.rep;
  const stepOf = (id) => rep?.steps.find((s) => s.task_id === id)?.name;
  const named = (id) => (stepOf(id) ? `${stepOf(id)} (${shortID(id)})` : shortID(id));
  const out = [];
  if (t.workflow?.id) {
    const name = state.wfNameOf.get(t.workflow.id) || shortID(t.workflow.id);
    out.push(field('workflow', h('a', { id: 'wf-link', href: navFragment(state.cfg, { view: 'workflow', workflow: t.workflow.id, task: t.id }) },
      `workflow ${name} · step ${t.workflow.step}`)));
  }
  if (t.parents?.length) {
    out.push(field('parents', h('ul', { class: 'links', id: 'parents' }, t.parents.map((p) => h('li', { 'data-id': p.id },
      h('a', { class: 'mono', href: taskHref(p.id), title: p.id }, named(p.id)), ' ',
      p.done ? h('span', { class: `st ${p.done}` }, p.done) : h('span', { class: 'dim' }, 'not ended yet'))))));
    if (t.on_parent_failure) out.push(field('if a parent fails', t.on_parent_failure));
  }
  if (t.children?.length) {
    out.push(field('children', h('ul', { class: 'links', id: 'children' }, t.children.map((c) => h('li', { 'data-id': c },
      h('a', { class: 'mono', href: taskHref(c), title: c }, named(c)))))));
  }
  const from = Object.entries(t.input_from || {}).sort(([a], [b]) => a.localeCompare(b));
  if (from.length) {
    out.push(field('input from', h('ul', { class: 'links', id: 'input-from' }, from.map(([f, src]) => {
      const has = Object.hasOwn(t.from_parents || {}, f);
      return h('li', { 'data-field': f }, h('span', { class: 'jkey' }, f), ' = ', h('span', { class: 'mono' }, `${stepOf(src.parent) || shortID(src.parent)}.output${src.path ? `.${src.path}` : ''}`),
        ': ', has ? h('span', { class: 'mono' }, JSON.stringify(t.from_parents[f])) : h('span', { class: 'dim' }, 'not taken yet'));
    }))));
  }
  return out;
}

// dataView shows input and output, loaded from their own objects when they
// were offloaded (with a note saying so), or the error that prevented it.
function dataView(t) {
  const p = state.payloads || {};
  const part = (name, inline, ref) => {
    const note = ref ? h('p', { class: 'dim offloaded' }, `${name} offloaded: ${ref.bytes} bytes in ${ref.key}`) : null;
    if (ref && p.error) return [note, h('p', { class: 'error' }, `${name} not loaded: ${p.error}`)];
    return [note, jsonTree(name, ref ? p[name] : inline)];
  };
  return [...part('input', t.input, t.input_ref), ...part('output', t.output, t.output_ref)];
}

function mark(i) {
  state.marks = state.marks.includes(i) ? state.marks.filter((m) => m !== i) : [...state.marks, i].slice(-2);
  renderDetail(state.backend.now());
}

function showDiff() {
  const [a, b] = [...state.marks].sort((x, y) => x - y);
  const text = (e) => (e.task ? `${JSON.stringify(e.task, null, 2)}\n` : `(${e.event})\n`);
  const pre = $('#diff');
  pre.replaceChildren(h('div', {}, `--- v${a + 1} ${state.events[a].event}`), h('div', {}, `+++ v${b + 1} ${state.events[b].event}`),
    ...diffLines(text(state.events[a]), text(state.events[b])).flatMap((part) => part.value.replace(/\n$/, '').split('\n').map((line) => {
      const sign = part.added ? '+' : part.removed ? '-' : ' ';
      return h('div', { class: part.added ? 'add' : part.removed ? 'del' : '' }, `${sign} ${line}`);
    })));
  pre.hidden = false;
}

// copyID puts a task's full id on the clipboard: the lists show its end
// only (the short id), which every command and search takes too, but a
// script or a ticket wants all of it.
async function copyID(id) {
  try {
    await navigator.clipboard.writeText(id);
    state.flash = `copied ${id}`;
  } catch (err) {
    // No clipboard (a page not served over HTTPS or localhost): select it.
    const range = document.createRange();
    range.selectNodeContents($('#detail h2'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    state.flash = `select and copy the id (the browser refused the clipboard: ${err.message})`;
  }
  render();
}

async function select(id) {
  const gen = state.gen;
  state.selected = id;
  state.marks = [];
  writeAddress(true);
  await guard(() => loadDetail(id));
  if (gen === state.gen) render();
}

async function act(op, t) {
  // A waiting or pending task that ends tells its children (a running one
  // does when its worker stops).
  const children = op === 'cancel' && t.status !== 'running' && t.children?.length
    ? ` Its ${fmt(t.children.length)} ${t.children.length === 1 ? 'child follows' : 'children follow'} their "if a parent fails" rule (cancel by default).` : '';
  if (!confirm(`${op[0].toUpperCase()}${op.slice(1)} task ${t.id} (${t.task_type}, ${t.status})?${children}`)) return;
  await action(async () => {
    const next = await state.backend.act(op, t.id, state.shardChars);
    state.flash = `${op}: task ${t.id} is now ${next.status}`;
  });
}

// ---- workflows ------------------------------------------------------------------

const NODE = { nodeW: 188, nodeH: 60 };

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// stepState is what a step's box says of its status.
function stepState(st) {
  if (!st.status) return 'missing';
  if (st.status === 'waiting' && st.waiting_for) return `waiting · after ${st.waiting_for}`;
  if (st.status === 'running' || st.status === 'failed') return `${st.status} · attempt ${st.attempt}`;
  return st.status;
}

// stepNote is a step's tooltip and note: why it waits, failed, was
// cancelled, or cannot be read.
function stepNote(st) {
  return [st.problem, st.last_error && `last error: ${st.last_error}`, st.cancel_reason && `cancelled: ${st.cancel_reason}`,
    st.status === 'waiting' && st.waiting_for && `waiting for ${st.waiting_for}`].filter(Boolean).join(' · ');
}

// renderWorkflow shows the workflow chosen (header, actions, graph and
// steps), or the list of workflow names when none is.
function renderWorkflow(now) {
  $('#wf-list').hidden = Boolean(state.workflow);
  $('#wf-box').hidden = !state.workflow;
  if (!state.workflow) {
    renderWorkflowNames(now);
    return;
  }
  $('#wf-all').href = navFragment(state.cfg, { view: 'workflow' });
  const wf = state.wf?.ref === state.workflow ? state.wf : null;
  if (!wf) {
    $('#wf-head').replaceChildren(h('p', { class: 'dim' }, `Reading workflow ${state.workflow}…`));
    for (const id of ['#wf-graph', '#wf-steps', '#wf-cost']) $(id).replaceChildren();
    $('#wf-cancel').disabled = true;
    renderDetail(now);
    return;
  }
  const rep = wf.rep;
  const counts = Object.entries(rep.counts || {}).sort(([a], [b]) => STATUSES.indexOf(a) - STATUSES.indexOf(b)).map(([st, n]) => `${n} ${st}`);
  const missing = rep.steps.filter((st) => !st.status).length;
  if (missing) counts.push(`${missing} missing`);
  $('#wf-head').replaceChildren(
    h('h2', {}, rep.name ? `Workflow ${rep.name}` : 'Workflow', ' ', h('span', { class: `st ${rep.status}`, id: 'wf-status' }, rep.status)),
    h('p', { class: 'facts' },
      h('span', {}, 'id ', h('span', { class: 'mono', id: 'wf-id' }, rep.id)),
      h('span', { id: 'wf-counts' }, `${rep.steps.length} step${rep.steps.length === 1 ? '' : 's'}: ${counts.join(', ')}`),
      h('span', {}, `created ${rep.created_at ? `${new Date(rep.created_at).toLocaleString()} (${ago(rep.created_at, now)})` : '-'}`),
      h('span', {}, `ended ${rep.ended_at ? `${new Date(rep.ended_at).toLocaleString()} (${ago(rep.ended_at, now)})` : '-'}`),
      rep.idempotency_key ? h('span', { class: 'dim' }, `idempotency key ${rep.idempotency_key}`) : null));
  const open = stepsToCancel(rep).flat();
  $('#wf-cancel').disabled = open.length === 0 || readOnly();
  $('#wf-cancel').title = readOnly() ? READ_ONLY : open.length ? `cancel the ${open.length} step(s) that have not ended` : 'every step has ended';
  const api = state.backend.kind === 'API';
  const byName = workflowRef(state.workflow) !== rep.id;
  $('#wf-cost').textContent = `Each refresh: ${api ? '1 GET to qo serve, which makes ' : ''}${rep.steps.length + 1 + (byName ? 1 : 0)} GET `
    + `(1 per step, +1 for the record${byName ? ', +1 for the name' : ''})${wf.made ? `; the last sent ${formatOps(wf.made)}${api ? ' to qo serve' : ''}` : ''}.`;
  renderGraph(rep);
  $('#wf-steps').replaceChildren(...rep.steps.map((st) => h('tr', { class: 'wf-step', 'data-step': st.name },
    h('td', {}, h('a', { href: navFragment(state.cfg, { view: 'workflow', workflow: state.workflow, task: st.task_id }), title: st.task_id }, st.name)),
    h('td', {}, st.task_type), h('td', {}, h('span', { class: `st ${st.status || 'incomplete'}` }, st.status || 'missing')),
    h('td', { class: st.last_error || st.problem ? 'error' : 'dim' }, stepNote(st) || '-'),
    h('td', {}, stepActions(st).includes('replay') && st.status && !readOnly() ? h('button', { class: 'wf-replay', 'data-replay': st.name, onclick: () => replayStep(st) }, 'Replay') : null))));
  renderDetail(now);
}

// renderGraph draws the steps as boxes in columns by depth and an arrow
// per "after", as inline SVG built element by element (no markup parsed).
function renderGraph(rep) {
  const L = layout(rep, NODE);
  const mid = (e) => e.x1 + (e.x2 - e.x1) / 2;
  const statusOf = new Map(rep.steps.map((st) => [st.name, st.status || 'missing']));
  const nodes = L.nodes.map((n) => {
    const st = n.step;
    const cls = st.status || 'missing';
    const note = stepNote(st);
    const g = s('g', {
      class: `step ${cls}${st.task_id === state.selected ? ' sel' : ''}`, 'data-step': st.name, 'data-status': cls, transform: `translate(${n.x},${n.y})`,
      tabindex: 0, role: 'button', 'aria-label': `step ${st.name} (${st.task_type}): ${stepState(st)}${note ? `; ${note}` : ''}`,
    },
    s('title', {}, `${st.name} (${st.task_type}): ${stepState(st)}${note ? `\n${note}` : ''}`),
    s('rect', { width: L.nodeW, height: L.nodeH, rx: 6 }),
    s('text', { class: 'name', x: 9, y: 18 }, clip(st.name, 24)),
    s('text', { class: 'type', x: 9, y: 35 }, clip(st.task_type || '', 27)),
    s('text', { class: 'state', x: 9, y: 52 }, clip(stepState(st), 27)));
    if (st.task_id && st.status) {
      g.addEventListener('click', () => select(st.task_id));
      g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(st.task_id); } });
    }
    return g;
  });
  const edges = L.edges.map((e) => s('path', {
    class: `edge ${statusOf.get(e.from)}`, 'data-from': e.from, 'data-to': e.to, 'marker-end': 'url(#wf-arrow)',
    d: `M${e.x1},${e.y1} C${mid(e)},${e.y1} ${mid(e)},${e.y2} ${e.x2 - 2},${e.y2}`,
  }));
  const ended = rep.steps.filter((st) => TERMINAL.includes(st.status)).length;
  $('#wf-graph').replaceChildren(s('svg', {
    class: 'wf-graph', width: L.width, height: L.height, viewBox: `0 0 ${L.width} ${L.height}`, role: 'group',
    'aria-label': `the ${rep.steps.length} steps of the workflow, ${ended} ended`,
  },
  s('defs', {}, s('marker', { id: 'wf-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    s('path', { class: 'arrowhead', d: 'M0,0 L10,5 L0,10 z' }))),
  edges, nodes));
}

// renderWorkflowNames lists each workflow name with its latest workflow.
function renderWorkflowNames(now) {
  const r = state.wfNames;
  const api = state.backend.kind === 'API';
  const n = r?.workflows.length ?? 0;
  $('#wf-names-info').textContent = r ? `${fmt(n)} workflow name${n === 1 ? '' : 's'}${r.more ? ' (the first 1,000)' : ''}; `
    + `each refresh: ${api ? '1 GET to qo serve, which makes ' : ''}1 LIST + 1 GET per name. A workflow without a name opens by its id.` : 'Reading the workflow names…';
  const rows = (r?.workflows || []).slice().sort((a, b) => a.name.localeCompare(b.name)).map((w) => h('tr', { class: 'wf-name', 'data-name': w.name },
    h('td', {}, h('a', { href: navFragment(state.cfg, { view: 'workflow', workflow: w.name }) }, w.name)),
    h('td', { class: 'mono', title: w.id }, h('a', { href: navFragment(state.cfg, { view: 'workflow', workflow: w.id }) }, shortID(w.id))),
    h('td', {}, ago(w.created_at, now))));
  $('#wf-names').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 3, class: 'dim' }, r ? 'no named workflows (qo submit --workflow FILE, with a "name")' : ''))]));
}

// replayStep replays one step (the single-task replay), after a
// confirmation; its children cancelled because of it wait again.
async function replayStep(st) {
  if (!confirm(`Replay step ${st.name} (task ${st.task_id}, ${st.status})? Its children that it stopped wait for it again.`)) return;
  await action(async () => {
    const next = await state.backend.act('replay', st.task_id, state.shardChars);
    state.flash = `replay: step ${st.name} is now ${next.status}`;
  });
}

// cancelRest cancels every step that has not ended, after a confirmation
// naming them (running ones are asked to stop).
async function cancelRest() {
  const rep = state.wf?.rep;
  if (!rep) return;
  const open = stepsToCancel(rep).flat();
  if (!open.length) return;
  const running = open.filter((st) => st.status === 'running').length;
  const what = `${open.length} step${open.length === 1 ? '' : 's'} (${open.map((st) => st.name).slice(0, 8).join(', ')}${open.length > 8 ? ', …' : ''})`;
  if (!confirm(`Cancel the rest of workflow ${rep.name || rep.id}? ${what} that ${open.length === 1 ? 'has' : 'have'} not ended ${open.length === 1 ? 'is' : 'are'} cancelled, children first${running ? `; ${running} running ${running === 1 ? 'is' : 'are'} asked to stop` : ''}.`)) return;
  const ref = state.workflow;
  await action(async () => {
    const r = await state.backend.cancelWorkflow(ref, 'from the web UI');
    state.flash = `cancelled ${r.cancelled} step${r.cancelled === 1 ? '' : 's'} of workflow ${rep.name || rep.id}`;
  });
}

function renderWorkers(now) {
  const rows = state.workers.map((w) => {
    const st = health(w.last_heartbeat, now.toISOString(), w.dead_after_seconds);
    return h('tr', { class: 'worker' },
      h('td', { class: 'mono' }, w.worker_id), h('td', {}, h('span', { class: `health ${st}` }, st)),
      h('td', { class: 'num' }, (w.current_tasks || []).length), h('td', { class: 'num' }, w.tasks_completed),
      h('td', { class: 'num' }, w.tasks_failed), h('td', {}, ago(w.last_heartbeat, now)), h('td', {}, ago(w.started_at, now)),
      h('td', {}, (w.shards || []).length ? w.shards.join(',') : 'all'), h('td', {}, `${w.host || '-'} pid ${w.pid ?? '-'}`));
  });
  $('#workers').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 9, class: 'dim' }, 'no workers registered'))]));
}

function renderSchedules(now) {
  const rows = state.schedules.map((s) => h('tr', { class: 'schedule' },
    h('td', { class: 'mono' }, s.name), h('td', { class: 'mono' }, s.cron), h('td', {}, s.timezone),
    h('td', {}, s.task?.task_type), h('td', {}, s.enabled ? 'enabled' : 'disabled'),
    // next_due comes from the HTTP API, which evaluates the cron fields;
    // reading the bucket directly, the page does not.
    h('td', {}, s.next_due ? ago(s.next_due, now) : '-'),
    h('td', {}, s.last_due ? ago(s.last_due, now) : '-'), h('td', { class: 'mono', title: s.last_task_id || '' }, s.last_task_id ? shortID(s.last_task_id) : '-'),
    h('td', { class: 'num' }, s.skipped || 0), h('td', { class: 'actions' }, scheduleButtons(s))));
  $('#schedules').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 10, class: 'dim' }, 'no schedules (qo schedule create)'))]));
}

// scheduleButtons are a schedule's actions, as qo schedule offers them:
// enable or disable, trigger (submit a run now), delete; each asks first.
// Reading the bucket directly the page does not write schedules (their
// rules live in qo): it names the command instead.
function scheduleButtons(s) {
  const backend = state.backend;
  if (readOnly()) return h('span', { class: 'dim small', title: READ_ONLY }, 'read-only');
  if (!backend?.scheduleAction) {
    return h('span', { class: 'dim small', title: 'open the page through qo serve to act here' }, `qo schedule ${s.enabled ? 'disable' : 'enable'}|trigger|delete ${s.name}`);
  }
  const act = (op, question) => async () => {
    if (!window.confirm(question)) return;
    const ok = await action(() => backend.scheduleAction(op, s.name));
    if (ok) state.flash = `${op === 'delete' ? 'deleted' : `${op}${op.endsWith('e') ? 'd' : 'ed'}`} schedule ${s.name}`;
    renderStatus();
  };
  return [
    s.enabled
      ? h('button', { class: 'small', 'data-op': 'disable', onclick: act('disable', `Disable schedule ${s.name}? It submits nothing until enabled.`) }, 'Disable')
      : h('button', { class: 'small', 'data-op': 'enable', onclick: act('enable', `Enable schedule ${s.name}? It submits its next due run.`) }, 'Enable'),
    h('button', { class: 'small', 'data-op': 'trigger', onclick: act('trigger', `Trigger schedule ${s.name} now? It submits one run at once.`) }, 'Trigger'),
    h('button', { class: 'small', 'data-op': 'delete', onclick: act('delete', `Delete schedule ${s.name}? Tasks it submitted stay.`) }, 'Delete'),
  ];
}

// ---- wiring -----------------------------------------------------------------

// go shows a view (and a task in it), puts it in the address bar and loads
// it. Leaving a view forgets its selected task and list page.
// A search (text) or the dead letters' type, when given, replace the
// current ones; the type filter lasts while the dead letters are shown.
function go(view, { task = '', push = true, search, type, workflow } = {}) {
  if (!PAGES.includes(view) || !state.backend) return;
  const changed = view !== state.view;
  let reset = changed;
  if (search !== undefined && search !== (state.search?.text ?? '')) {
    setSearch(search);
    reset = true;
  }
  if (view === 'search' && !state.search) return;
  if (changed && type === undefined) type = '';
  if (type !== undefined && type !== state.filter.type) {
    state.filter.type = type;
    reset = true;
  }
  if (changed && workflow === undefined) workflow = '';
  if (workflow !== undefined && workflow !== state.workflow) {
    state.workflow = workflow;
    state.wf = null;
    reset = true;
  }
  if (reset || task !== (state.selected || '')) {
    state.selected = task || null;
    state.marks = [];
  }
  if (reset) {
    state.cursors = [''];
    state.page = 0;
    state.malformed = [];
    state.checked.clear();
  }
  state.view = view;
  writeAddress(push);
  render();
  refresh();
}

for (const v of VIEWS) $(`#tab-${v}`).addEventListener('click', () => go(v, v === 'workflow' ? { workflow: '' } : {}));
$('#wf-cancel').addEventListener('click', cancelRest);
$('#wf-open').addEventListener('submit', (e) => {
  e.preventDefault();
  const ref = workflowRef($('#wf-ref').value.trim());
  if (ref) go('workflow', { workflow: ref });
  else state.flash = 'give a workflow id or name (letters, digits and _ . : -, at most 64)';
  renderStatus();
});
$('#pause-all').addEventListener('click', () => togglePause('', Boolean(state.control?.paused)));
$('#refresh-now').addEventListener('click', refresh);
$('#interval').addEventListener('change', (e) => setRefresh(Number(e.target.value)));
// A filter change drops the checked tasks: an action never reaches tasks
// the list no longer shows.
$('#shard').addEventListener('change', (e) => { state.filter.shard = e.target.value; state.cursors = ['']; state.page = 0; state.checked.clear(); refresh(); });
$('#statusf').addEventListener('change', (e) => { state.filter.status = e.target.value; state.cursors = ['']; state.page = 0; state.checked.clear(); refresh(); });
$('#more').addEventListener('click', () => { state.cursors[state.page + 1] = state.next; state.page++; refresh(); });
$('#prev').addEventListener('click', () => { state.page = Math.max(0, state.page - 1); refresh(); });
$('#typef').addEventListener('change', (e) => go('dead', { type: e.target.value, push: false }));
for (const op of BULK_BUTTON_OPS) {
  $(`#bulk-${op}-checked`).addEventListener('click', () => startBulk(op, 'checked'));
  $(`#bulk-${op}-type`).addEventListener('click', () => startBulk(op, 'type'));
}
$('#bulk-dialog').addEventListener('close', () => {
  const plan = state.pendingPlan;
  state.pendingPlan = null;
  if ($('#bulk-dialog').returnValue === 'go' && plan && state.backend) runBulkNow(plan);
});

// The search box: Enter shows the results (a single task found opens in
// the detail); a search that cannot be run says why in the search view.
$('#search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  if (!state.backend) return;
  const text = $('#search').value.trim();
  if (!text) return;
  $('#search').blur();
  setSearch(text);
  if (state.view === 'search') state.selected = null;
  go('search', { search: state.search.text });
});
$('#search').addEventListener('keydown', (e) => { if (e.key === 'Escape') e.target.blur(); });

// Keyboard: 1-6 or g then o, t, d, w, s, f open the views; / goes to the
// search box; r refreshes. Keys typed into a field or with a modifier, or
// while a dialog is open, are left alone.
const KEY_VIEWS = { o: 'overview', t: 'tasks', d: 'dead', w: 'workers', s: 'schedules', f: 'workflow' };
let gPressed = 0;
document.addEventListener('keydown', (e) => {
  if (!state.backend || e.ctrlKey || e.metaKey || e.altKey || e.target.closest?.('input, select, textarea, [contenteditable]')) return;
  if (document.querySelector('dialog[open]')) return;
  const afterG = gPressed && Date.now() - gPressed < 1500;
  gPressed = 0;
  if (e.key === '/') {
    e.preventDefault();
    $('#search').focus();
    $('#search').select();
    return;
  }
  let view = '';
  if (afterG) view = KEY_VIEWS[e.key] || '';
  else if (/^[1-9]$/.test(e.key)) view = VIEWS[Number(e.key) - 1] || '';
  if (view) {
    e.preventDefault();
    go(view);
  } else if (e.key === 'g') {
    gPressed = Date.now();
  } else if (e.key === 'r' && !afterG) {
    refresh();
  }
});

// A fragment change is either a move within the page (a pasted deep link
// to the same queue, the back button) or a second link opened in this tab:
// the browser does not load the page again but fires hashchange. A second
// link's settings and credentials replace the current ones, and its
// credentials leave the address bar as the first link's did. (pushState and
// replaceState fire no hashchange; a fragment naming no bucket or API and
// nothing to show changes nothing.)
window.addEventListener('hashchange', () => {
  const { cfg, nav } = readFragment();
  if (state.backend && isNavigation(cfg, state.cfg)) {
    if (nav.view || nav.task) {
      go(nav.view, {
        task: nav.task, push: false, search: nav.view === 'search' ? nav.search : undefined, type: nav.view === 'dead' ? nav.type : undefined,
        workflow: nav.view === 'workflow' ? nav.workflow : undefined,
      });
    } else writeAddress(false);
    return;
  }
  if (cfg.bucket || cfg.api) openLink(cfg, nav);
  else if (!state.backend && (nav.view || nav.task)) state.pendingNav = nav; // shown once connected
});

setRefresh(Number($('#interval').value));
const first = readFragment();
openLink(first.cfg, first.nav);
