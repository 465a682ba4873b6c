// The read model's figures the page computes itself when it reads the
// bucket (worker health, the unserved types, the request rate) against
// testdata/readmodel.json, which webui/readmodel_cases_test.go keeps equal
// to what the Go read model (inspect) answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { health, unserved, throughputOf, throughputKey } from '../src/queue.js';
import { RateMeter, holdsText } from '../src/fleet.js';

const cases = JSON.parse(readFileSync(new URL('../testdata/readmodel.json', import.meta.url)));

test('worker health is the monitor\'s liveness rule', () => {
  assert.ok(cases.health.length > 0);
  for (const c of cases.health) {
    assert.equal(health(c.last_heartbeat, c.now, c.dead_after_seconds), c.state, JSON.stringify(c));
  }
});

test('unserved types as inspect.Unserved names them', () => {
  for (const c of cases.unserved) {
    assert.deepEqual(unserved(c.by_type, c.workers, c.control, c.now), c.want, c.name);
  }
});

test('the request rate as inspect.RateMeter measures it', () => {
  for (const c of cases.rate) {
    const m = new RateMeter();
    for (const r of c.reads) {
      const got = m.observe(r.workers, r.now);
      if (r.want === null) {
        assert.equal(got, null, `${c.name} at ${r.now}`);
        continue;
      }
      assert.ok(got, `${c.name} at ${r.now}: no rate`);
      assert.ok(Math.abs(got.per_second - r.want.per_second) < 1e-9, `${c.name} at ${r.now}: ${got.per_second} != ${r.want.per_second}`);
      assert.ok(Math.abs(got.dollars_per_hour - r.want.dollars_per_hour) < 1e-9);
      assert.equal(got.workers, r.want.workers);
      assert.equal(got.waiting, r.want.waiting);
    }
  }
});

test('throughput from the rollup and the heartbeats as inspect.ThroughputOf merges them', () => {
  const norm = (ms) => ms.map((m) => ({ start: Date.parse(m.start), completed: m.completed, failed: m.failed }));
  for (const c of cases.throughput) {
    const got = throughputOf(c.hours, c.workers, Date.parse(c.now), c.want.recent.length);
    for (const w of ['recent', 'last_hour', 'last_day']) assert.deepEqual(norm(got[w]), norm(c.want[w]), `${c.name}: ${w}`);
  }
  assert.equal(throughputKey(Date.parse('2030-01-01T12:59:59Z')), 'monitor/throughput/2030-01-01T12.json');
});

test('a worker\'s holds of the fleet-wide limits as view.HoldsText renders them', () => {
  assert.ok(cases.holds.length > 0);
  for (const c of cases.holds) assert.equal(holdsText(c.holds), c.want, JSON.stringify(c.holds));
});
