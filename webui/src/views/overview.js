// The overview: the live counts, the last hour's throughput, the shards,
// the task types with their pause switches and limits.
// A screen of the page: load, render and wire (see SCREENS in shell.js).

import { mergeRecent, chartSeries, bars, MINUTE_MS } from '../chart.js';
import { h, s, $, short, fmt } from '../dom.js';
import { dollars } from '../fleet.js';
import { navFragment } from '../link.js';
import { COUNTED, limitsText } from '../queue.js';
import { action, go } from '../shell.js';
import { state, current, readOnly, READ_ONLY } from '../state.js';

// takeStats keeps a stats answer: the chart's minutes (the last hour, from
// the monitor's rollup and the heartbeats) and the fleet's request rate.
export function takeStats(st) {
  state.stats = st;
  mergeRecent(state.history, st.last_hour?.length ? st.last_hour : st.recent);
  // The rate comes with the answer (inspect.RateMeter, or RateMeter in
  // the backend reading the bucket): measured between heartbeats.
  if (st.request_rate) state.fleet = { perSec: st.request_rate.per_second, perHour: st.request_rate.dollars_per_hour };
}

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
// switch or a fleet-wide or per-key limit, with its limits and its own
// pause toggle.
function renderTypes(st) {
  const c = state.control || {};
  const pausedTypes = c.paused_types || {};
  const limits = c.limits || {};
  const keyLimits = c.key_limits || {};
  const types = [...new Set([...Object.keys(st.by_type || {}), ...Object.keys(pausedTypes), ...Object.keys(limits), ...Object.keys(keyLimits)])].sort();
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
      h('td', { class: 'limit' }, limitsText(limits[type], keyLimits[type]) || '-'),
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

async function load(gen, backend) {
  const st = await backend.stats();
  current(gen);
  takeStats(st);
  state.malformed = st.malformed || [];
}

// wire hooks up the whole queue's pause switch.
function wire() {
  $('#pause-all').addEventListener('click', () => togglePause('', Boolean(state.control?.paused)));
}

export const overview = { load, render: renderOverview, wire };
