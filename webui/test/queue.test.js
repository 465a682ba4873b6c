// The page's queue rules, run on the cases the Go rules produced
// (webui/testdata/cases.json, written by go test ./webui).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { applyOperator, applyControl, pageActor, TransitionError, allowed, indexChanges, decodeTask, health, shards, canAct } from '../src/queue.js';

const cases = JSON.parse(readFileSync(new URL('../testdata/cases.json', import.meta.url)));

// normalize makes two task objects comparable: times as milliseconds.
function normalize(t) {
  const out = {};
  for (const [k, v] of Object.entries(t)) {
    out[k] = typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? Date.parse(v) : v;
  }
  return out;
}

for (const c of cases) {
  test(`shared case: ${c.name}`, () => {
    if (c.error) {
      assert.throws(() => applyOperator(c.base, c.op, c.reason, c.actor, c.now, c.request_id), TransitionError);
      return;
    }
    const got = applyOperator(c.base, c.op, c.reason, c.actor, c.now, c.request_id);
    if (c.want === null) {
      assert.equal(got, null);
      return;
    }
    assert.deepEqual(normalize(got), normalize(c.want));
    assert.deepEqual(indexChanges(c.base, got), { put: c.index_put ?? [], del: c.index_delete ?? [] });
  });
}

test('the page names itself as the actor of its writes, as the Go rules record it', () => {
  assert.equal(pageActor('AKIAIOSFODNN7EXAMPLE', 'ops.example:8080'), 'web UI on ops.example:8080, S3 key AKIA…MPLE');
  assert.equal(pageActor('short', ''), 'web UI, S3 key …', 'a short key is not shown at all');
  const c = cases.find((x) => x.want && x.actor && x.base.actor);
  assert.ok(c, 'a case replaces an earlier operator\'s actor');
  assert.equal(applyOperator(c.base, c.op, c.reason, c.actor, c.now, c.request_id).actor, c.actor);
  assert.equal(applyOperator(c.base, c.op, c.reason, '', c.now, c.request_id).actor, undefined, 'no actor: none recorded');
  const ctl = applyControl(null, 'pause', 'email', 'outage', c.now, 'web UI, S3 key AKIA…MPLE');
  assert.equal(ctl.actor, 'web UI, S3 key AKIA…MPLE');
  assert.equal(applyControl(ctl, 'resume', 'email', '', c.now, '').actor, undefined, 'each version names its own actor');
});

test('the page offers an action exactly where the Go rules take it', () => {
  for (const c of cases) {
    assert.equal(canAct(c.op, c.base.status), !c.error, c.name);
  }
  assert.equal(canAct('requeue', 'pending'), false, 'the page offers no requeue');
});

test('a refusal names the statuses the action applies to', () => {
  const c = cases.find((x) => x.op === 'replay' && x.error && x.base.status === 'pending');
  assert.throws(() => applyOperator(c.base, c.op, c.reason, c.actor, c.now, c.request_id), /only failed, cancelled or expired tasks can be replayed/);
});

test('there are cases of every kind', () => {
  assert.ok(cases.length >= 20);
  assert.ok(cases.some((c) => c.error));
  assert.ok(cases.some((c) => c.want === null && !c.error));
});

test('the lifecycle table', () => {
  assert.ok(allowed('failed', 'replayed', 'pending'));
  assert.ok(!allowed('completed', 'replayed', 'pending'));
});

test('malformed objects are refused with the key named', () => {
  assert.throws(() => decodeTask('tasks/0/x.json', '{"format":1'), /malformed object tasks\/0\/x.json/);
  assert.throws(() => decodeTask('tasks/0/x.json', '{"format":2,"id":"x","status":"pending"}'), /format version 2/);
  assert.throws(() => decodeTask('tasks/0/x.json', '[]'), /not a JSON object/);
});

test('worker health', () => {
  const now = '2030-01-01T00:10:00Z';
  assert.equal(health('2030-01-01T00:09:50Z', now), 'active');
  assert.equal(health('2030-01-01T00:09:40Z', now), 'stale', 'the worker stops its handlers at 15 s');
  assert.equal(health('2030-01-01T00:09:30Z', now), 'dead', 'the monitor takes its tasks back after 22 s');
  assert.equal(health('2030-01-01T00:09:30Z', now, 60), 'active', 'a worker stating a 60 s bound');
  assert.deepEqual(shards(1).slice(0, 3), ['0', '1', '2']);
});
