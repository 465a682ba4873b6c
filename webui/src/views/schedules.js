// The schedules: each cron schedule with its next and last run, and its
// actions (through qo serve).
// A screen of the page: load, render and wire (see SCREENS in shell.js).

import { h, $, ago } from '../dom.js';
import { shortID } from '../queue.js';
import { renderStatus, action } from '../shell.js';
import { state, current, readOnly, READ_ONLY } from '../state.js';

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

async function load(gen, backend) {
  const s = await backend.schedules();
  current(gen);
  state.schedules = s.schedules;
  state.malformed = s.malformed;
}

export const schedules = { load, render: renderSchedules, wire() {} };
