// The task lists: a page of tasks (by shard and status), the dead letters
// (by type), and the search results; the bulk actions on them.
// A screen of the page: load, render and wire (see SCREENS in shell.js).

import { planBulk, runBulk, formatOps, serverPlan, BULK_CONCURRENCY } from '../bulk.js';
import { h, $, ago, countdown, fmt, oneLine } from '../dom.js';
import { navFragment } from '../link.js';
import { priorityOf, shortID } from '../queue.js';
import { parseSearch, searchCost, searchNote, SEARCH_LIMIT } from '../search.js';
import { writeAddress, guard, refresh, renderStatus, renderViews, go } from '../shell.js';
import { state, current, readOnly } from '../state.js';
import { loadDetail, renderDetail, select } from './detail.js';
import { takeStats } from './overview.js';

// setSearch sets the search box's query (the text typed, or a link's):
// parsed, or the reason it cannot be searched for.
export function setSearch(text) {
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

// listFilter is the filter the list shown reads with: the dead letters
// are the failed tasks (of a type), the task list any status.
function listFilter() {
  return state.view === 'dead' ? { shard: state.filter.shard, status: 'failed', type: state.filter.type } : { shard: state.filter.shard, status: state.filter.status };
}

// checkable: the list shown has boxes to check tasks for a bulk action
// (none under a read-only link).
export function checkable() {
  return (state.view === 'tasks' || state.view === 'dead') && !readOnly();
}

// shownTasks are the tasks the list shows: a page, or search results.
export function shownTasks() {
  return state.view === 'search' ? state.search?.tasks || [] : state.tasks;
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

// loadList reads a page of the task list or the dead letters, and the
// selected task.
async function loadList(gen, backend) {
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
}

// loadSearch runs the search, and reads the selected task.
async function loadSearch(gen, backend) {
  await runSearch(gen, backend);
  if (state.selected) await loadDetail(state.selected);
}

// wire hooks up the lists' filters, paging, bulk buttons and the search box.
function wire() {
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
}

// The task list and the dead letters are one screen; the search results
// another, drawn the same way (its box is wired with the lists).
export const tasks = { load: loadList, render: renderTasks, wire };
export const search = { load: loadSearch, render: renderTasks, wire() {} };
