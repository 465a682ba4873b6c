// The page's shell: the connection (the link, its credentials), the refresh
// loop, the status line, the tabs and the router (go, the address bar,
// the keyboard). What each view shows is its screen's (views/).

import { S3Backend, ApiBackend, INDEXED } from './backend.js';
import { h, $, short, countdown } from './dom.js';
import { readLink, canConnect, navFragment, isNavigation, VIEWS, PAGES } from './link.js';
import { STATUSES, LIST_WINDOW_MS } from './queue.js';
import { fresh, state, Stale, current, readOnly } from './state.js';
import { overview } from './views/overview.js';
import { schedules } from './views/schedules.js';
import { setSearch, checkable, shownTasks, tasks, search } from './views/tasks.js';
import { workers } from './views/workers.js';
import { workflow } from './views/workflow.js';

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
export function writeAddress(push) {
  const frag = navFragment(state.cfg, { view: state.view, task: state.selected || '', search: state.search?.text || '', type: state.filter.type, workflow: state.workflow });
  if (location.hash === frag) return;
  if (push) history.pushState(null, '', frag);
  else history.replaceState(null, '', location.pathname + location.search + frag);
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
export async function guard(fn) {
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

// SCREENS are the page's views by name, each a module of views/ with the
// same shape: load(gen, backend) reads what the view shows into state
// (current(gen) drops a read the page moved on from), render(now) draws
// it, and wire() hooks up its controls once. The task list and the dead
// letters are one screen (tasks.js), the search results drawn the same
// way; the task detail renders inside the lists and the workflow view
// (detail.js).
const SCREENS = { overview, tasks, dead: tasks, search, workers, schedules, workflow };

// screen is the screen of a view; any other name is the workers'.
function screen(view) {
  return Object.hasOwn(SCREENS, view) ? SCREENS[view] : workers;
}

// refresh loads what the current view shows. One load runs at a time: a
// refresh asked for meanwhile (another view chosen, the timer) runs once
// the current one ends, so a slow bucket never piles requests up.
export async function refresh() {
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
    await screen(state.view).load(gen, backend);
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
export function renderStatus() {
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
export function renderViews() {
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

export function render() {
  const readOnly = Boolean(state.backend?.readOnly);
  document.body.classList.toggle('readonly', readOnly);
  $('#readonly-note').hidden = !readOnly;
  renderViews();
  renderPaused();
  const now = state.backend.now();
  $('#malformed').textContent = state.malformed?.length
    ? `${state.malformed.length} malformed object(s) skipped, e.g. ${state.malformed[0].key}: ${state.malformed[0].error}` : '';
  screen(state.view).render(now);
  renderStatus();
}

// action runs an operator action and reloads the view when it succeeded.
// A refused action's error stays until the next timed refresh rather than
// being wiped at once by the reload.
export async function action(fn) {
  let ok = false;
  await guard(async () => {
    await fn();
    ok = true;
  });
  if (ok) await refresh();
  return ok;
}

// ---- routing ----------------------------------------------------------------

// go shows a view (and a task in it), puts it in the address bar and loads
// it. Leaving a view forgets its selected task and list page.
// A search (text) or the dead letters' type, when given, replace the
// current ones; the type filter lasts while the dead letters are shown.
export function go(view, { task = '', push = true, search, type, workflow } = {}) {
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

// boot wires the page and opens the link it was loaded with. Each control
// is wired once, in the order the page's sections come.
export function boot() {
  $('#login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    connect(Object.fromEntries([...f.entries()].filter(([, v]) => v)), state.pendingNav || {});
  });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden || !state.refreshSeconds || !state.backend) return;
    if (!state.refreshedAt || Date.now() - state.refreshedAt >= state.refreshSeconds * 1000) refresh();
  });
  for (const v of VIEWS) $(`#tab-${v}`).addEventListener('click', () => go(v, v === 'workflow' ? { workflow: '' } : {}));
  workflow.wire();
  overview.wire();
  $('#refresh-now').addEventListener('click', refresh);
  $('#interval').addEventListener('change', (e) => setRefresh(Number(e.target.value)));
  tasks.wire();
  document.addEventListener('keydown', onKey);
  window.addEventListener('hashchange', onHashChange);
  setRefresh(Number($('#interval').value));
  const first = readFragment();
  openLink(first.cfg, first.nav);
}

// Keyboard: 1-6 or g then o, t, d, w, s, f open the views; / goes to the
// search box; r refreshes. Keys typed into a field or with a modifier, or
// while a dialog is open, are left alone.
const KEY_VIEWS = { o: 'overview', t: 'tasks', d: 'dead', w: 'workers', s: 'schedules', f: 'workflow' };
let gPressed = 0;

function onKey(e) {
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
}

// A fragment change is either a move within the page (a pasted deep link
// to the same queue, the back button) or a second link opened in this tab:
// the browser does not load the page again but fires hashchange. A second
// link's settings and credentials replace the current ones, and its
// credentials leave the address bar as the first link's did. (pushState and
// replaceState fire no hashchange; a fragment naming no bucket or API and
// nothing to show changes nothing.)
function onHashChange() {
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
}
