// The fleet's request rate and what requests cost, as qo tui computes
// them from the workers' heartbeat counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateMeter, cost, byOp, dollars, per1000 } from '../src/fleet.js';

const counts = (ok, failed = {}) => ({ ok, failed });

test('prices are S3 Standard: PUT and LIST at one rate, GET at another, DELETE free', () => {
  assert.equal(per1000('PUT'), 0.005);
  assert.equal(per1000('LIST'), 0.005);
  assert.equal(per1000('LIST-VERSIONS'), 0.005);
  assert.equal(per1000('GET'), 0.0004);
  assert.equal(per1000('HEAD'), 0.0004);
  assert.equal(per1000('DELETE'), 0);
  assert.equal(cost({ GET: 1000, PUT: 2000, DELETE: 1000 }), 0.0104);
  assert.deepEqual(byOp(counts({ GET: 3, PUT: 2 }, { PUT: 1 })), { GET: 3, PUT: 3 }, 'failed requests are billed too');
});

// A fleet whose counters grow at a known rate (24.5 GET/s in all),
// heartbeating every 10 s at offsets of its own, read at refresh intervals
// that do not line up with the heartbeats.
function fakeFleet(now) {
  const start = Date.parse('2030-01-01T00:00:00Z');
  return [['a', 10, 0], ['b', 5.5, 3300], ['c', 9, 7100]].map(([id, perSec, offset]) => {
    const beat = start + offset + Math.floor((now - start - offset) / 10000) * 10000;
    return { worker_id: id, last_heartbeat: new Date(beat).toISOString(), s3_requests: counts({ GET: Math.round((perSec * (beat - start)) / 1000) }) };
  });
}

test('RateMeter: the rate is right at any refresh interval, not a heartbeat delta over the refresh', () => {
  for (const refresh of [2000, 2500, 5000, 7300]) {
    const m = new RateMeter();
    let now = Date.parse('2030-01-01T00:00:08Z');
    let measured = 0;
    for (let i = 0; i < 60; i++, now += refresh) {
      const r = m.observe(fakeFleet(now), new Date(now).toISOString());
      if (!r || r.workers < 3) continue;
      measured++;
      assert.ok(Math.abs(r.per_second - 24.5) / 24.5 < 0.02, `refresh ${refresh} ms, at ${now}: ${r.per_second}`);
      assert.ok(Math.abs(r.dollars_per_hour - (24.5 * 0.0004 * 3600) / 1000) < 1e-3, r.dollars_per_hour);
    }
    assert.ok(measured > 40, `refresh ${refresh} ms: measured ${measured} times`);
  }
});

test('RateMeter: nothing until two heartbeats; a restarted worker starts again; a dead one adds nothing', () => {
  const m = new RateMeter();
  const w = (at, gets) => ({ worker_id: 'w', last_heartbeat: at, s3_requests: counts({ GET: gets }) });
  assert.equal(m.observe([w('2030-01-01T00:00:00Z', 500)], '2030-01-01T00:00:01Z'), null);
  assert.equal(m.observe([w('2030-01-01T00:00:10Z', 600)], '2030-01-01T00:00:11Z').per_second, 10);
  assert.equal(m.observe([w('2030-01-01T00:00:10Z', 600)], '2030-01-01T00:00:15Z').per_second, 10, 'no heartbeat since: the rate holds');
  assert.equal(m.observe([w('2030-01-01T00:00:20Z', 20)], '2030-01-01T00:00:21Z'), null, 'counters went back: the worker restarted');
  assert.equal(m.observe([w('2030-01-01T00:00:30Z', 120)], '2030-01-01T00:01:00Z'), null, 'a dead worker sends nothing');
});

test('dollars as qo tui writes them', () => {
  assert.equal(dollars(0), '$0');
  assert.equal(dollars(0.00123), '$0.0012');
  assert.equal(dollars(1.5), '$1.50');
  assert.equal(dollars(1234.4), '$1,234');
});
