// The fleet's request rate and what requests cost, as qo tui computes
// them from the workers' heartbeat counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fleetRate, cost, byOp, dollars, per1000 } from '../src/fleet.js';

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

test('fleetRate sums each worker\'s increase over the time between two answers', () => {
  const prev = { at: '2030-01-01T00:00:00Z', worker_requests: { a: counts({ GET: 100, LIST: 50 }), b: counts({ PUT: 10 }), gone: counts({ GET: 1e6 }) } };
  const cur = { at: '2030-01-01T00:00:10Z', worker_requests: { a: counts({ GET: 300, LIST: 60 }), b: counts({ PUT: 30 }, { PUT: 5 }), fresh: counts({ GET: 1e6 }) } };
  const r = fleetRate(prev, cur);
  assert.deepEqual(r.requests, { GET: 200, LIST: 10, PUT: 25 }, 'a worker seen once (new, or gone) adds nothing, as in qo tui');
  assert.equal(r.perSec, 23.5);
  assert.equal(r.seconds, 10);
  // (200 x 0.0004 + 35 x 0.005) / 1000 per 10 s, times 360.
  assert.ok(Math.abs(r.perHour - 0.0918) < 1e-9, r.perHour);
});

test('fleetRate needs two answers, the second newer', () => {
  const a = { at: '2030-01-01T00:00:00Z', worker_requests: {} };
  assert.equal(fleetRate(null, a), null);
  assert.equal(fleetRate(a, a), null, 'qo serve answered from its cache');
  assert.deepEqual(fleetRate(a, { at: '2030-01-01T00:00:05Z', worker_requests: {} }).perSec, 0, 'no worker: no request');
  const w = { at: a.at, worker_requests: { w: counts({ GET: 500 }) } };
  assert.equal(fleetRate(w, { ...w, at: '2030-01-01T00:00:05Z' }), null, 'no heartbeat since: the interval joins the next');
  assert.equal(fleetRate(w, { ...w, at: '2030-01-01T00:01:00Z' }).perSec, 0, 'a minute without any: no requests');
  const restarted = fleetRate({ at: a.at, worker_requests: { w: counts({ GET: 500 }) } }, { at: '2030-01-01T00:00:05Z', worker_requests: { w: counts({ GET: 20 }) } });
  assert.equal(restarted.perSec, 4, 'a worker whose counters went back restarted: it counts from zero');
});

test('dollars as qo tui writes them', () => {
  assert.equal(dollars(0), '$0');
  assert.equal(dollars(0.00123), '$0.0012');
  assert.equal(dollars(1.5), '$1.50');
  assert.equal(dollars(1234.4), '$1,234');
});
