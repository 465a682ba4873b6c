// The task detail: its fields, its place in a workflow, its data and the
// version timeline, and the actions on it. It renders inside the task
// lists and the workflow view.

import { diffLines } from 'diff';
import { h, $, ago, jsonTree, fmt, field } from '../dom.js';
import { navFragment } from '../link.js';
import { priorityOf, shortID, canAct, progressText } from '../queue.js';
import { writeAddress, guard, render, action } from '../shell.js';
import { state, current, readOnly, READ_ONLY } from '../state.js';

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

export async function loadDetail(id) {
  const gen = state.gen;
  const backend = state.backend;
  const { task } = await backend.viewTask(id, state.shardChars);
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

export function renderDetail(now) {
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

export async function select(id) {
  const gen = state.gen;
  state.selected = id;
  state.marks = [];
  writeAddress(true);
  await guard(() => loadDetail(id));
  if (gen === state.gen) render();
}

export async function act(op, t) {
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
