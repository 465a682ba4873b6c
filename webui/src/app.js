// qo's dashboard. Everything the page shows comes from the bucket (or qo's
// API) and is rendered as text: task data never reaches innerHTML.
import { diffLines } from 'diff';
import { S3Backend, ApiBackend } from './backend.js';
import { parseFragment, canConnect } from './link.js';
import { STATUSES, health, priorityOf, shortID } from './queue.js';

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
// see link.js). It is read when the page loads and whenever another link
// is opened in the same tab, and removed from the address bar each time;
// credentials live in this page's memory only.
function readFragment() {
  const cfg = parseFragment(location.hash);
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  return cfg;
}

// What the page shows of one bucket (or API); connect starts over from it.
const fresh = () => ({
  shards: [], shardChars: 1,
  filter: { shard: '', status: '' }, cursors: [''], page: 0, tasks: [], next: '', since: '', malformed: [],
  selected: null, detail: null, payloads: null, events: [], marks: [],
  workers: [], schedules: [], control: null, error: '', flash: '',
});

const state = {
  backend: null, cfg: {}, view: 'tasks', refreshTimer: null, tickTimer: null,
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

function connect(cfg) {
  state.gen++;
  Object.assign(state, fresh());
  state.cfg = cfg;
  state.backend = cfg.api ? new ApiBackend({ api: cfg.api, token: cfg.token })
    : new S3Backend({ endpoint: cfg.endpoint, bucket: cfg.bucket, region: cfg.region, accessKeyId: cfg.ak, secretAccessKey: cfg.sk, sessionToken: cfg.st });
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#where').textContent = cfg.api ? `API ${cfg.api}` : `bucket ${cfg.bucket}${cfg.endpoint ? ` at ${cfg.endpoint}` : ''}`;
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
}

function showLogin(message) {
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#login-msg').textContent = message || '';
}

$('#login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  connect(Object.fromEntries([...f.entries()].filter(([, v]) => v)));
});

// openLink connects with a link's settings, or asks for keys when it
// carries none (keeping the endpoint, bucket and region it names).
function openLink(cfg) {
  if (canConnect(cfg)) {
    connect(cfg);
  } else {
    disconnect();
    showLogin(cfg.bucket ? `Enter credentials for bucket ${cfg.bucket}.` : '');
  }
  if (cfg.bucket) {
    const form = $('#login-form');
    form.reset();
    for (const k of ['endpoint', 'bucket', 'region']) if (cfg[k]) form.querySelector(`[name=${k}]`).value = cfg[k];
  }
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
  await refresh();
  if (gen !== state.gen) return;
  tick();
  clearInterval(state.tickTimer);
  state.tickTimer = setInterval(tick, 1000);
}

async function refresh() {
  const gen = state.gen;
  const backend = state.backend;
  if (!backend) return;
  await guard(async () => {
    if (state.view === 'tasks') {
      const page = await backend.listTasks({ ...state.filter, cursor: state.cursors[state.page] });
      current(gen);
      state.tasks = page.tasks;
      state.next = page.next_cursor;
      state.since = page.since || '';
      state.malformed = page.malformed || [];
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
  });
  if (gen !== state.gen) return;
  $('#refreshed').textContent = `refreshed ${new Date().toLocaleTimeString()}`;
  render();
}

async function loadDetail(id) {
  const gen = state.gen;
  const backend = state.backend;
  const { task } = await backend.getTask(id, state.shardChars);
  // An offloaded payload that cannot be read is shown as an error in its
  // place; the rest of the detail still renders.
  const payloads = await backend.payloads(task).catch((e) => ({ error: e.message }));
  const events = await backend.history(task);
  current(gen);
  // A load for a task no longer selected (the operator clicked another
  // meanwhile) must not replace the newer one.
  if (state.selected !== id) return;
  Object.assign(state, { detail: task, payloads, events });
}

function setRefresh(seconds) {
  clearInterval(state.refreshTimer);
  state.refreshTimer = seconds > 0 ? setInterval(refresh, seconds * 1000) : null;
}

// tick moves the countdowns and the credential expiry every second.
function tick() {
  if (!state.backend) return;
  const now = state.backend.now();
  for (const el of document.querySelectorAll('[data-countdown]')) {
    const t = state.tasks.find((x) => x.id === el.dataset.countdown);
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

function renderStatus() {
  const el = $('#status');
  el.textContent = state.error ? `Error: ${state.error}` : state.flash;
  el.className = state.error ? 'error' : 'ok';
}

function renderFilters() {
  const shard = $('#shard');
  shard.replaceChildren(h('option', { value: '' }, 'all shards'), ...state.shards.map((s) => h('option', { value: s }, `shard ${s}`)));
  const status = $('#statusf');
  status.replaceChildren(h('option', { value: '' }, 'all but archived (last 24 h)'),
    ...STATUSES.map((s) => h('option', { value: s }, ['pending', 'running', 'failed'].includes(s) ? s : `${s} (last 24 h)`)));
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

function render() {
  for (const v of ['tasks', 'workers', 'schedules']) {
    $(`#tab-${v}`).classList.toggle('on', state.view === v);
    $(`#${v}-view`).hidden = state.view !== v;
  }
  renderPaused();
  const now = state.backend.now();
  $('#malformed').textContent = state.malformed?.length
    ? `${state.malformed.length} malformed object(s) skipped, e.g. ${state.malformed[0].key}: ${state.malformed[0].error}` : '';
  if (state.view === 'tasks') renderTasks(now);
  else if (state.view === 'schedules') renderSchedules(now);
  else renderWorkers(now);
  renderStatus();
}

function renderTasks(now) {
  const rows = state.tasks.map((t) => h('tr', {
    class: `row ${t.id === state.selected ? 'sel' : ''}`, 'data-id': t.id, onclick: () => select(t.id),
  },
  h('td', { class: 'mono', title: t.id }, shortID(t.id)), h('td', {}, t.task_type),
  h('td', {}, h('span', { class: `prio ${priorityOf(t)}` }, priorityOf(t))),
  h('td', {}, h('span', { class: `st ${t.status}` }, t.status)), h('td', { class: 'num' }, t.attempt),
  h('td', {}, ago(t.updated_at, now)), h('td', { 'data-countdown': t.id }, countdown(t, now))));
  $('#tasks').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 7, class: 'dim' }, 'no tasks on this page'))]));
  $('#more').disabled = !state.next;
  $('#prev').disabled = state.page === 0;
  // Finished tasks are listed from a creation window (pending, running and
  // failed ones from their indexes, whatever their age).
  $('#page').textContent = `page ${state.page + 1}${state.since ? ` · created since ${new Date(state.since).toLocaleString()}` : ''}`;
  renderDetail(now);
}

function field(name, value) {
  return h('tr', {}, h('th', {}, name), h('td', {}, value ?? '-'));
}

function renderDetail(now) {
  const box = $('#detail');
  const t = state.detail;
  if (!t || t.id !== state.selected) {
    box.replaceChildren(h('p', { class: 'dim' }, 'Select a task to see its fields, data and history.'));
    return;
  }
  const actions = [
    ['replay', ['failed', 'cancelled', 'expired'], 'Replay'],
    ['archive', ['completed', 'failed', 'cancelled', 'expired'], 'Archive'],
    ['cancel', ['pending', 'running'], 'Cancel'],
  ].filter(([, from]) => from.includes(t.status)).map(([op, , label]) => h('button', { id: `act-${op}`, onclick: () => act(op, t) }, label));
  const timeline = state.events.map((e, i) => h('tr', { class: 'version' },
    h('td', {}, h('input', {
      type: 'checkbox', 'aria-label': `compare version ${i + 1}`, checked: state.marks.includes(i),
      onchange: () => mark(i),
    })),
    h('td', {}, `v${i + 1}`), h('td', {}, e.at ? new Date(e.at).toISOString().replace('T', ' ').slice(0, 19) : '-'),
    h('td', {}, e.event), h('td', {}, e.status || ''), h('td', { class: 'num' }, e.attempt ?? ''), h('td', {}, e.worker_id || '-'),
    h('td', { class: 'error' }, e.error || '')));
  box.replaceChildren(
    h('h2', { class: 'mono' }, t.id), h('div', { class: 'actions' }, actions),
    h('table', { class: 'fields' },
      field('type', t.task_type), field('status', h('span', { class: `st ${t.status}` }, t.status)),
      field('priority', priorityOf(t)), field('shard', t.shard),
      field('attempt', `${t.attempt} (retries ${t.retry_count} of ${t.max_retries})`), field('rev', t.rev),
      field('created', t.created_at), field('updated', `${t.updated_at} (${ago(t.updated_at, now)})`),
      field('available', t.available_at), field('lease expires', t.lease_expires_at), field('worker', t.worker_id || '-'),
      t.expires_at ? field('expires', `${t.expires_at} (${ago(t.expires_at, now)})`) : null,
      field('timeout', `${t.timeout_seconds}s`), field('last event', t.last_event), field('idempotency key', t.idempotency_key || '-'),
      t.cancel_requested ? field('cancel', `requested: ${t.cancel_reason || '-'}`) : null,
      t.last_error ? field('last error', h('span', { class: 'error' }, t.last_error)) : null),
    h('h3', {}, 'Data'), h('div', { id: 'data' }, dataView(t)),
    h('h3', {}, `Timeline (${state.events.length} versions)`, ' ',
      h('button', { id: 'diff-btn', disabled: state.marks.length !== 2, onclick: showDiff }, 'Diff the two checked versions')),
    h('table', { id: 'timeline' }, h('tr', {}, ['', '', 'at', 'event', 'status', 'attempt', 'worker', ''].map((c) => h('th', {}, c))), timeline),
    h('pre', { id: 'diff', hidden: true }));
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

async function select(id) {
  const gen = state.gen;
  state.selected = id;
  state.marks = [];
  await guard(() => loadDetail(id));
  if (gen === state.gen) render();
}

async function act(op, t) {
  if (!confirm(`${op[0].toUpperCase()}${op.slice(1)} task ${t.id} (${t.task_type}, ${t.status})?`)) return;
  await guard(async () => {
    const next = await state.backend.act(op, t.id, state.shardChars);
    state.flash = `${op}: task ${t.id} is now ${next.status}`;
  });
  await refresh();
}

function renderWorkers(now) {
  const rows = state.workers.map((w) => {
    const st = health(w.last_heartbeat, now.toISOString());
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
    h('td', { class: 'num' }, s.skipped || 0)));
  $('#schedules').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 9, class: 'dim' }, 'no schedules (qo schedule create)'))]));
}

// ---- wiring -----------------------------------------------------------------

$('#tab-tasks').addEventListener('click', () => { state.view = 'tasks'; refresh(); });
$('#tab-workers').addEventListener('click', () => { state.view = 'workers'; refresh(); });
$('#tab-schedules').addEventListener('click', () => { state.view = 'schedules'; refresh(); });
$('#refresh-now').addEventListener('click', refresh);
$('#interval').addEventListener('change', (e) => setRefresh(Number(e.target.value)));
$('#shard').addEventListener('change', (e) => { state.filter.shard = e.target.value; state.cursors = ['']; state.page = 0; refresh(); });
$('#statusf').addEventListener('change', (e) => { state.filter.status = e.target.value; state.cursors = ['']; state.page = 0; refresh(); });
$('#more').addEventListener('click', () => { state.cursors[state.page + 1] = state.next; state.page++; refresh(); });
$('#prev').addEventListener('click', () => { state.page = Math.max(0, state.page - 1); refresh(); });

// A second link opened in this tab is the same page with another fragment:
// the browser does not load the page again but fires hashchange. Its
// settings and credentials replace the current ones, and the fragment
// leaves the address bar as the first one did. (replaceState fires no
// hashchange; a fragment naming no bucket or API is dropped and changes
// nothing.)
window.addEventListener('hashchange', () => {
  if (!location.hash) return;
  const cfg = readFragment();
  if (cfg.bucket || cfg.api) openLink(cfg);
});

openLink(readFragment());
