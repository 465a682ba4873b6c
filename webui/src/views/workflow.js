// The workflow view: one workflow's steps as a graph and a table, with
// the task detail of the step chosen; or the list of workflow names.
// A screen of the page: load, render and wire (see SCREENS in shell.js).

import { stepsToCancel } from '../backend.js';
import { formatOps } from '../bulk.js';
import { h, s, $, ago, fmt, clip } from '../dom.js';
import { navFragment, workflowRef } from '../link.js';
import { STATUSES, TERMINAL, shortID } from '../queue.js';
import { renderStatus, action, go } from '../shell.js';
import { state, current, readOnly, READ_ONLY } from '../state.js';
import { layout, stepActions } from '../workflow.js';
import { loadDetail, renderDetail, select } from './detail.js';

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

const NODE = { nodeW: 188, nodeH: 60 };

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

async function load(gen, backend) {
  await loadWorkflow(gen, backend);
  if (state.selected) await loadDetail(state.selected);
}

// wire hooks up the workflow view's cancel button and its open box.
function wire() {
  $('#wf-cancel').addEventListener('click', cancelRest);
  $('#wf-open').addEventListener('submit', (e) => {
    e.preventDefault();
    const ref = workflowRef($('#wf-ref').value.trim());
    if (ref) go('workflow', { workflow: ref });
    else state.flash = 'give a workflow id or name (letters, digits and _ . : -, at most 64)';
    renderStatus();
  });
}

export const workflow = { load, render: renderWorkflow, wire };
