// Shared helpers of the page's screens: elements built as text (task data
// never reaches innerHTML), durations and counts written out.

// h builds an element; string children become text nodes.
export function h(tag, attrs = {}, ...children) {
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
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) el.setAttribute(k, String(v));
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (sel) => document.querySelector(sel);

export function short(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

export function ago(iso, now) {
  if (!iso) return '-';
  const d = now - Date.parse(iso);
  return d >= -1000 ? `${short(Math.max(d, 0))} ago` : `in ${short(d)}`; // within the clock estimate's error: now
}

// countdown is the live column: time to available_at, or lease left.
export function countdown(t, now) {
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
export function jsonTree(name, value) {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v]) : Object.entries(value);
    const unit = Array.isArray(value) ? 'item' : 'key';
    return h('details', { open: true, class: 'json' },
      h('summary', {}, h('span', { class: 'jkey' }, name), ` ${Array.isArray(value) ? '[' : '{'} ${entries.length} ${unit}${entries.length === 1 ? '' : 's'}`),
      entries.map(([k, v]) => jsonTree(Array.isArray(value) ? k : JSON.stringify(k), v)));
  }
  return h('div', { class: 'json leaf' }, h('span', { class: 'jkey' }, name), ': ', h('span', { class: 'jval' }, JSON.stringify(value)));
}

export const fmt = (n) => Number(n || 0).toLocaleString('en-US');

// oneLine folds an error onto one short line (the cell's title has it all).
export const oneLine = (s) => {
  const one = String(s).replace(/\s+/g, ' ').trim();
  return one.length > 160 ? `${one.slice(0, 159)}…` : one;
};

export function field(name, value) {
  return h('tr', {}, h('th', {}, name), h('td', {}, value ?? '-'));
}

export function clip(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}
