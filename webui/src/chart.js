// The overview's throughput chart, as data: no DOM here, so the numbers
// are tested in node (test/chart.test.js) and app.js only draws them.
//
// The stats hold the last 15 minutes (the workers' heartbeats carry no
// more); the page keeps every minute it has seen, up to an hour, so the
// chart fills up while it stays open. Minutes it never saw are unknown,
// drawn as such, never as zero.

export const MINUTE_MS = 60000;
/** CHART_MINUTES is how far back the chart goes. */
export const CHART_MINUTES = 60;

/**
 * mergeRecent adds a stats answer's per-minute counts (recent: [{start,
 * completed, failed}]) to history (a Map from minute start in ms to
 * {completed, failed}), keeping the larger count of each minute: a minute's
 * counts only grow while it lasts, and a worker that left since an earlier
 * answer takes its counts with it. Minutes older than keepMinutes before
 * the newest are dropped. Returns history.
 */
export function mergeRecent(history, recent, keepMinutes = CHART_MINUTES) {
  let newest = -Infinity;
  for (const m of recent || []) {
    const start = Date.parse(m.start);
    if (Number.isNaN(start)) continue;
    const at = start - (start % MINUTE_MS);
    const had = history.get(at);
    history.set(at, {
      completed: Math.max(had?.completed ?? 0, m.completed || 0),
      failed: Math.max(had?.failed ?? 0, m.failed || 0),
    });
    newest = Math.max(newest, at);
  }
  if (newest > -Infinity) {
    for (const at of history.keys()) if (at <= newest - keepMinutes * MINUTE_MS) history.delete(at);
  }
  return history;
}

/**
 * chartSeries lays history out as the minutes minutes ending with the
 * minute of nowMs, oldest first: {start, completed, failed} for a minute
 * seen, null for one never seen. totals sums the minutes seen; max is the
 * largest stacked (completed + failed) minute.
 */
export function chartSeries(history, nowMs, minutes = CHART_MINUTES) {
  const last = nowMs - (nowMs % MINUTE_MS);
  const points = [];
  const totals = { completed: 0, failed: 0, minutes: 0 };
  let max = 0;
  for (let i = minutes - 1; i >= 0; i--) {
    const start = last - i * MINUTE_MS;
    const m = history.get(start);
    if (!m) {
      points.push(null);
      continue;
    }
    points.push({ start, completed: m.completed, failed: m.failed });
    totals.completed += m.completed;
    totals.failed += m.failed;
    totals.minutes++;
    max = Math.max(max, m.completed + m.failed);
  }
  return { points, totals, max };
}

/** niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten (at least 1). */
export function niceMax(max) {
  if (!(max > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const f of [1, 2, 5, 10]) if (f * p >= max) return f * p;
  return 10 * p;
}

/**
 * bars turns a series into drawing coordinates in a width x height box:
 * per minute seen, a completed bar with the failed bar stacked on it, and
 * the runs of unknown minutes as {x, w} spans. Bars of zero height are
 * left out; coordinates are rounded to tenths so the SVG stays small.
 */
export function bars(series, width, height) {
  const top = niceMax(series.max);
  const n = series.points.length || 1;
  const step = width / n;
  const gap = Math.min(1, step / 4);
  const r = (v) => Math.round(v * 10) / 10;
  const out = { top, step: r(step), bars: [], unknown: [] };
  series.points.forEach((p, i) => {
    const x = i * step;
    if (!p) {
      const prev = out.unknown.at(-1);
      if (prev && prev.end === i) {
        prev.end = i + 1;
        prev.w = r((i + 1) * step - prev.x);
      } else {
        out.unknown.push({ x: r(x), w: r(step), end: i + 1 });
      }
      return;
    }
    const hc = (p.completed / top) * height;
    const hf = (p.failed / top) * height;
    const bar = { i, start: p.start, completed: p.completed, failed: p.failed, x: r(x + gap / 2), w: r(step - gap) };
    if (hc > 0) bar.c = { y: r(height - hc), h: r(hc) };
    if (hf > 0) bar.f = { y: r(height - hc - hf), h: r(hf) };
    out.bars.push(bar);
  });
  for (const u of out.unknown) delete u.end;
  return out;
}
