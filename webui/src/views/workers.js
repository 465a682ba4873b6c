// The workers: the registry, each worker's health and what it runs.
// A screen of the page: load, render and wire (see SCREENS in shell.js).

import { h, $, ago } from '../dom.js';
import { health } from '../queue.js';
import { holdsText } from '../fleet.js';
import { state, current } from '../state.js';

function renderWorkers(now) {
  const rows = state.workers.map((w) => {
    const st = health(w.last_heartbeat, now.toISOString(), w.dead_after_seconds);
    return h('tr', { class: 'worker' },
      h('td', { class: 'mono' }, w.worker_id), h('td', {}, h('span', { class: `health ${st}` }, st)),
      h('td', { class: 'num' }, (w.current_tasks || []).length), h('td', { class: 'num' }, w.tasks_completed),
      h('td', { class: 'num' }, w.tasks_failed), h('td', {}, ago(w.last_heartbeat, now)), h('td', {}, ago(w.started_at, now)),
      h('td', {}, (w.shards || []).length ? w.shards.join(',') : 'all'), h('td', {}, `${w.host || '-'} pid ${w.pid ?? '-'}`),
      h('td', { class: 'small' }, st === 'dead' ? '' : holdsText(w.holds)));
  });
  $('#workers').replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 10, class: 'dim' }, 'no workers registered'))]));
}

async function load(gen, backend) {
  const w = await backend.workers();
  current(gen);
  state.workers = w.workers;
  state.malformed = w.malformed;
}

export const workers = { load, render: renderWorkers, wire() {} };
