// The overview's numbers when the page reads the bucket itself: counts
// from the index keys (as GET /api/stats), and the pause switches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countStats, indexEntry, applyControl, readyKey, leaseKey, deadKey, shardOf, validType } from '../src/queue.js';

const NOW = new Date('2030-01-02T03:04:05Z');
const ids = ['0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a51', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a52', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a53',
  '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5a', '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'];

function task(id, type, status, extra = {}) {
  return { id, shard: shardOf(id, 1), task_type: type, status, priority: 'normal', ...extra };
}
const at = (ms) => new Date(NOW.getTime() + ms).toISOString();

test('counts by status, shard and type from the index keys, with the oldest pending task per type', () => {
  const ready = [
    readyKey(task(ids[0], 'email', 'pending', { available_at: at(-90000) })),
    readyKey(task(ids[1], 'email', 'pending', { available_at: at(-30000), priority: 'high' })),
    readyKey(task(ids[2], 'resize', 'pending', { available_at: at(-10000), priority: 'low' })),
    readyKey(task(ids[3], 'resize', 'pending', { available_at: at(3600000) })), // delayed
    'ready/zz/not-a-key',
  ];
  const leases = [leaseKey(task(ids[4], 'resize', 'running', { lease_expires_at: at(60000), lease_id: ids[0], worker_id: 'w1' }))];
  const dead = [deadKey(task(ids[0], 'email', 'failed', { completed_at: at(-5000) }))];
  const workers = [
    { format: 1, worker_id: 'w1', last_heartbeat: at(-1000), recent: [{ start: at(-65000), completed: 2, failed: 1 }, { start: at(-3600000), completed: 99 }] },
    { format: 1, worker_id: 'w2', last_heartbeat: at(-600000), recent: [{ start: at(-65000), completed: 1, failed: 0 }] },
  ];
  const st = countStats({ ready, leases, dead, workers, now: NOW });
  assert.equal(st.total, 6);
  assert.deepEqual(st.counted, ['waiting', 'pending', 'running', 'failed']);
  assert.equal(st.by_status.waiting, 0);
  assert.equal(st.by_status.pending, 4);
  assert.equal(st.by_status.running, 1);
  assert.equal(st.by_status.failed, 1);
  assert.equal(st.by_status.completed, undefined, 'finished tasks are not counted: absent, not 0');
  assert.deepEqual(st.by_type, { email: { pending: 2, failed: 1 }, resize: { pending: 2, running: 1 } });
  assert.equal(Object.values(st.by_shard).reduce((n, m) => n + Object.values(m).reduce((a, b) => a + b, 0), 0), 6);
  assert.deepEqual(st.by_shard[ids[3].slice(-1)], { pending: 1 });
  assert.equal(st.delayed, 1);
  assert.equal(st.oldest_pending_age_seconds, 90);
  assert.deepEqual(st.oldest_pending_age_seconds_by_type, { email: 90, resize: 10 },
    'the priority offset of the ready key is undone; the delayed task is not waiting yet');
  assert.equal(st.recent.length, 15);
  assert.equal(st.recent.at(-1).start, '2030-01-02T03:04:00.000Z');
  assert.deepEqual(st.recent.at(-2), { start: '2030-01-02T03:03:00.000Z', completed: 3, failed: 1 }, 'summed over the workers');
  assert.equal(st.recent.reduce((n, m) => n + m.completed, 0), 3, 'minutes out of the window are left out');
  assert.deepEqual(st.workers, { active: 1, stale: 0, dead: 1 });
  assert.equal(st.partial, false);
});

test('waiting tasks count by shard only: their entries name no type', () => {
  const waiting = [`waiting/${shardOf(ids[0], 1)}/${ids[0]}`, `waiting/${shardOf(ids[3], 1)}/${ids[3]}`, `waiting/0/${ids[1]}`, 'waiting/x/y'];
  const st = countStats({ waiting, now: NOW });
  assert.equal(st.by_status.waiting, 2, 'an entry in the wrong shard, or malformed, is skipped');
  assert.equal(st.total, 2);
  assert.deepEqual(st.by_type, {});
  assert.deepEqual(st.by_shard[shardOf(ids[0], 1)], { waiting: 1 });
  assert.deepEqual(st.by_shard[shardOf(ids[3], 1)], { waiting: 1 });
});

test('an empty queue', () => {
  const st = countStats({ now: NOW, partial: true });
  assert.equal(st.total, 0);
  assert.equal(st.oldest_pending_age_seconds, 0);
  assert.deepEqual(st.by_type, {});
  assert.ok(st.recent.every((m) => m.completed === 0 && m.failed === 0));
  assert.equal(st.partial, true);
});

test('indexEntry refuses what queue.Parse*Key refuses', () => {
  const good = readyKey(task(ids[0], 'email', 'pending', { available_at: at(0) }));
  assert.equal(indexEntry(good).type, 'email');
  assert.equal(indexEntry(good).shard, ids[0].slice(-1));
  assert.equal(indexEntry(good.replace('ready/email/', 'ready/a b/')), null, 'bad type');
  assert.equal(indexEntry(good.replace(`/email/${ids[0].slice(-1)}/`, '/email/0/')), null, 'shard does not match the id');
  assert.equal(indexEntry(good.replace('~normal~', '~urgent~')), null, 'bad priority');
  assert.equal(indexEntry(good.replaceAll('~', '/')), null, 'a key of layout 2');
  const [, , shard, name] = good.split('/');
  const [rank, ...rest] = name.split('~');
  assert.equal(indexEntry(`ready/${shard}/${[rank, 'email', ...rest].join('~')}`), null, 'a key of layout 3');
  assert.equal(indexEntry(`${good}~x~y`), null, 'a field too many (one more is a task key)');
  assert.equal(indexEntry('dead/1/2/3'), null);
  assert.ok(validType('send_email.v2:eu-1'));
  for (const bad of ['', '..', 'a/b', 'a b', 'x'.repeat(65), '<script>']) assert.ok(!validType(bad), bad);
});

test('pause and resume follow queue.Pause and queue.Resume', () => {
  const t0 = '2030-01-02T03:04:05.000Z';
  const c1 = applyControl(null, 'pause', 'email', 'provider outage', t0);
  assert.deepEqual(c1.paused_types, { email: { at: t0, reason: 'provider outage' } });
  assert.equal(c1.format, 1);
  assert.equal(c1.rev, 1);
  assert.equal(c1.paused, false);
  assert.equal(applyControl(c1, 'pause', 'email', 'again', t0), null, 'pausing a paused type changes nothing');
  const c2 = applyControl(c1, 'pause', '', 'deploy', t0);
  assert.equal(c2.paused, true);
  assert.equal(c2.reason, 'deploy');
  assert.equal(c2.rev, 2);
  const c3 = applyControl(c2, 'resume', '', '', t0);
  assert.equal(c3.paused, false);
  assert.deepEqual(Object.keys(c3.paused_types), ['email'], 'resuming the queue leaves the paused types paused');
  const c4 = applyControl(c3, 'resume', 'email', '', t0);
  assert.deepEqual(c4.paused_types, {});
  assert.equal(applyControl(c4, 'resume', 'email', '', t0), null);
  assert.equal(c1.paused_types.email.reason, 'provider outage', 'the base is not changed');
  assert.throws(() => applyControl(c4, 'pause', 'a/b', '', t0), /bad task type/);
  assert.throws(() => applyControl({ format: 2 }, 'pause', 'x', '', t0), /format 2/);
});
