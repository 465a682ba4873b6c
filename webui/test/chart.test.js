// The overview's throughput chart as numbers: the stats' per-minute counts
// kept across refreshes, laid out over the last hour, and drawn as bars.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeRecent, chartSeries, niceMax, bars, MINUTE_MS } from '../src/chart.js';

const NOW = Date.parse('2030-01-02T03:04:35Z'); // 35 s into minute 03:04
const MIN = NOW - (NOW % MINUTE_MS);

// recent is a stats answer's list: n minutes ending with the minute of at.
function recent(at, counts) {
  const last = at - (at % MINUTE_MS);
  return counts.map(([completed, failed], i) => ({
    start: new Date(last - (counts.length - 1 - i) * MINUTE_MS).toISOString(), completed, failed,
  }));
}

test('an empty history is an hour of unknown minutes, drawn as one unknown span', () => {
  const s = chartSeries(new Map(), NOW);
  assert.equal(s.points.length, 60);
  assert.ok(s.points.every((p) => p === null));
  assert.deepEqual(s.totals, { completed: 0, failed: 0, minutes: 0 });
  assert.equal(s.max, 0);
  const b = bars(s, 600, 100);
  assert.equal(b.top, 1);
  assert.deepEqual(b.bars, []);
  assert.deepEqual(b.unknown, [{ x: 0, w: 600 }]);
});

test('fifteen minutes seen fill the end of the hour; the rest is unknown, not zero', () => {
  const counts = Array.from({ length: 15 }, (_, i) => [i, i % 5 === 0 ? 1 : 0]);
  const h = mergeRecent(new Map(), recent(NOW, counts));
  const s = chartSeries(h, NOW);
  assert.equal(s.points.filter(Boolean).length, 15);
  assert.ok(s.points.slice(0, 45).every((p) => p === null));
  assert.deepEqual(s.points.at(-1), { start: MIN, completed: 14, failed: 0 });
  assert.deepEqual(s.points[45], { start: MIN - 14 * MINUTE_MS, completed: 0, failed: 1 });
  assert.deepEqual(s.totals, { completed: 105, failed: 3, minutes: 15 });
  assert.equal(s.max, 14);
  const b = bars(s, 600, 100);
  assert.equal(b.top, 20);
  assert.deepEqual(b.unknown, [{ x: 0, w: 450 }]);
  assert.equal(b.bars.length, 15, 'one per minute seen, zero minutes included');
  const last = b.bars.at(-1);
  assert.deepEqual(last.c, { y: 30, h: 70 });
  assert.equal(last.f, undefined, 'no failed bar in a minute without failures');
  assert.equal(b.bars[0].c, undefined, 'a minute seen with nothing done has no bar, and is not unknown');
  assert.deepEqual(b.bars[0].f, { y: 95, h: 5 });
});

test('failures stack on completions in the same minute', () => {
  const h = mergeRecent(new Map(), recent(NOW, [[6, 4]]));
  const b = bars(chartSeries(h, NOW), 600, 100);
  assert.equal(b.top, 10);
  assert.deepEqual(b.bars[0].c, { y: 40, h: 60 });
  assert.deepEqual(b.bars[0].f, { y: 0, h: 40 }, 'the failed bar sits on top of the completed one');
});

test('refreshes keep what they saw: an hour fills up, a minute keeps its largest count, older minutes go', () => {
  const h = new Map();
  mergeRecent(h, recent(NOW - 40 * MINUTE_MS, Array(15).fill([2, 0])));
  mergeRecent(h, recent(NOW, [[5, 1], [3, 0]]));
  mergeRecent(h, recent(NOW, [[4, 2], [1, 0]])); // a worker left: its counts vanish from later answers
  let s = chartSeries(h, NOW);
  assert.equal(s.points.filter(Boolean).length, 17);
  assert.deepEqual(s.points.at(-1), { start: MIN, completed: 3, failed: 0 });
  assert.deepEqual(s.points.at(-2), { start: MIN - MINUTE_MS, completed: 5, failed: 2 });
  // The minutes between the two answers were never seen.
  assert.equal(s.points.at(-3), null);
  const b = bars(s, 600, 100);
  assert.equal(b.unknown.length, 2, 'before the first answer, and the gap between the answers');

  // Half an hour later the early minutes have left the hour.
  const later = NOW + 30 * MINUTE_MS;
  mergeRecent(h, recent(later, [[1, 0]]));
  assert.ok([...h.keys()].every((at) => at > later - 60 * MINUTE_MS));
  s = chartSeries(h, later);
  assert.equal(s.points.length, 60);
  assert.deepEqual(s.points.at(-1), { start: later - (later % MINUTE_MS), completed: 1, failed: 0 });
});

test('bad minutes are skipped', () => {
  const h = mergeRecent(new Map(), [{ start: 'yesterday', completed: 3 }, { start: new Date(MIN).toISOString() }]);
  assert.deepEqual([...h.entries()], [[MIN, { completed: 0, failed: 0 }]]);
  assert.equal(mergeRecent(h, undefined), h);
});

test('niceMax', () => {
  const cases = [[0, 1], [0.5, 1], [1, 1], [2, 2], [3, 5], [7, 10], [10, 10], [11, 20], [140, 200], [501, 1000]];
  for (const [max, want] of cases) assert.equal(niceMax(max), want, String(max));
});
