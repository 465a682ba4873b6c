// The page's S3 backend against an in-memory bucket that counts requests:
// listings cost what they show, never the bucket's history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { S3Backend } from '../src/backend.js';
import { shardOf, shortID, idFloor, taskKey, readyKey, readyShardHop, deadKey, parseIndexKey, LAYOUT_VERSION } from '../src/queue.js';

// v7 makes a time-ordered id of millisecond ms; n varies its random part.
function v7(ms, n) {
  const h = ms.toString(16).padStart(12, '0');
  const r = n.toString(16).padStart(15, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${r.slice(0, 3)}-8${r.slice(3, 6)}-${r.slice(3, 15)}`;
}

class FakeS3 {
  constructor(now) {
    this.objects = new Map();
    this.counts = { list: 0, get: 0, put: 0, del: 0 };
    this.clock = now;
  }
  now() { return new Date(this.clock); }
  async list(prefix, { startAfter = '', maxKeys = 1000 } = {}) {
    this.counts.list++;
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix) && k > startAfter).sort();
    return { keys: keys.slice(0, maxKeys).map((key) => ({ key })), next: keys.length > maxKeys ? 'more' : '' };
  }
  async get(key) {
    this.counts.get++;
    return this.objects.has(key) ? { text: this.objects.get(key), etag: `"${key}"` } : null;
  }
  async put(key, text) { this.counts.put++; this.objects.set(key, text); }
  async del(key) { this.counts.del++; this.objects.delete(key); }
}

const NOW = Date.parse('2030-01-02T03:04:05Z');

function task(id, status, ms) {
  const at = new Date(ms).toISOString();
  return {
    format: 1, id, task_type: 'job', shard: shardOf(id, 1), status, available_at: at, created_at: at, updated_at: at,
    completed_at: ['completed', 'failed'].includes(status) ? at : null, priority: 'normal', attempt: 1, rev: 3,
  };
}

// bucket holds the same live tasks and `history` finished tasks created
// ten days ago.
function bucket(history) {
  const s3 = new FakeS3(NOW);
  s3.objects.set('queue.json', JSON.stringify({ format: LAYOUT_VERSION, shard_chars: 1 }));
  const add = (t) => {
    s3.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
    if (t.status === 'pending') s3.objects.set(readyKey(t), '');
    if (t.status === 'failed') s3.objects.set(deadKey(t), '');
  };
  for (let i = 0; i < 3; i++) add(task(v7(NOW - 60000, i), 'pending', NOW - 60000));
  for (let i = 0; i < 2; i++) add(task(v7(NOW - 120000, 100 + i), 'failed', NOW - 120000));
  for (let i = 0; i < 4; i++) add(task(v7(NOW - 3600000, 200 + i), 'completed', NOW - 3600000));
  for (let i = 0; i < history; i++) add(task(v7(NOW - 10 * 86400000 - i, 1000 + i), 'completed', NOW - 10 * 86400000));
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  return { be, s3 };
}

test('ids: shards, short ids and the window floor follow the Go rules', () => {
  const id = v7(NOW, 0xabc);
  assert.equal(shardOf(id, 1), id.slice(-1));
  assert.equal(shardOf(id, 2), id.slice(-2));
  assert.equal(shardOf('3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8', 1), '3', 'random ids keep their first characters');
  assert.equal(shortID(id), id.slice(-8));
  assert.equal(shortID('3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8'), '3f2a1b4c');
  assert.ok(idFloor(NOW) <= id && id < idFloor(NOW + 1));
  assert.deepEqual(parseIndexKey(`ready/job/c/0000000000001~normal~${id}`), { shard: 'c', id });
  assert.equal(parseIndexKey(`ready/job/0/0000000000001~normal~${id}`), null, 'an entry in a shard that is not its id\'s');
  assert.equal(parseIndexKey(`ready/j b/c/0000000000001~normal~${id}`), null, 'a bad type');
  assert.equal(parseIndexKey(`ready/c/0000000000001~job~normal~${id}`), null, 'a key of layout 3');
  assert.equal(parseIndexKey(`ready/0/0000000000001/job/normal/${id}`), null, 'a key of layout 2');
  assert.equal(parseIndexKey('ready/1700000000000/0/job/normal/x'), null);
});

test('readyShardHop: past another shard\'s entries of a type, to the shard\'s, else past the type', () => {
  const id = v7(NOW, 0xabc);
  assert.equal(readyShardHop(`ready/job/c/0000000000001~normal~${id}`, 'c'), `ready/job/c/0000000000001~normal~${id}`, 'in the shard: on after the key');
  assert.equal(readyShardHop('ready/job/3/x', 'c'), 'ready/job/c/');
  assert.equal(readyShardHop('ready/job/d/x', 'c'), 'ready/job/~/');
  assert.equal(readyShardHop('ready/job/~/', 'c'), 'ready/job/~/', 'never backwards');
  assert.equal(readyShardHop('ready/job', 'c'), 'ready/job');
});

test('pending tasks of one shard: every type\'s other shards are hopped past, not paged through', async () => {
  const { be, s3 } = bucket(0);
  await be.shards();
  const add = (t) => {
    s3.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
    s3.objects.set(readyKey(t), '');
  };
  const mine = [];
  for (const [k, type] of ['a', 'job', 'z'].entries()) {
    for (let i = 0; i < 3000; i++) {
      const t = { ...task(v7(NOW - 60000, 16 * (10000 * (k + 1) + i) + (i % 15)), 'pending', NOW - 60000), task_type: type }; // shards 0..e
      add(t);
    }
    const t = { ...task(v7(NOW - 60000, 16 * (10000 * (k + 1) + 9000) + 15), 'pending', NOW - 60000), task_type: type };
    add(t);
    mine.push(t.id);
  }
  assert.ok(mine.every((id) => shardOf(id, 1) === 'f'));
  const before = s3.counts.list;
  const page = await be.listTasks({ status: 'pending', shard: 'f' });
  assert.deepEqual(page.tasks.map((t) => t.id).sort(), [...mine].sort());
  assert.ok(s3.counts.list - before <= 6, `at most two LISTs per type, not one per 1,000 keys of its other shards: ${s3.counts.list - before}`);
});

test('a queue of the older key layout is refused, naming qo migrate', async () => {
  const { be, s3 } = bucket(0);
  s3.objects.set('queue.json', JSON.stringify({ format: 1, shard_chars: 1 }));
  await assert.rejects(() => be.shards(), /qo migrate/);
});

test('listings cost the same with and without history', async () => {
  const costs = [];
  for (const history of [0, 2000]) {
    const { be, s3 } = bucket(history);
    await be.shards();
    const cost = {};
    for (const status of ['pending', 'failed', 'completed', '']) {
      const before = { ...s3.counts };
      const page = await be.listTasks({ status });
      cost[status || 'all'] = { list: s3.counts.list - before.list, get: s3.counts.get - before.get, shown: page.tasks.length };
    }
    costs.push(cost);
  }
  assert.deepEqual(costs[0], costs[1]);
  assert.deepEqual(costs[0].failed, { list: 1, get: 2, shown: 2 }, 'dead letters: one LIST and a GET per task shown');
  assert.deepEqual(costs[0].pending, { list: 1, get: 3, shown: 3 });
  assert.equal(costs[0].completed.shown, 4, 'the last 24 hours only');
  assert.equal(costs[0].completed.list, 16, 'one LIST per shard');
});

test('actions write the entries of the new state before the task, and remove the old ones after', async () => {
  const { be, s3 } = bucket(0);
  await be.shards();
  const failed = (await be.listTasks({ status: 'failed' })).tasks[0];
  const order = [];
  const put = s3.put.bind(s3);
  s3.put = async (key, text, opts) => { order.push(`put ${key.split('/')[0]}`); return put(key, text, opts); };
  const del = s3.del.bind(s3);
  s3.del = async (key) => { order.push(`del ${key.split('/')[0]}`); return del(key); };
  const next = await be.act('replay', failed.id, 1);
  assert.equal(next.status, 'pending');
  assert.deepEqual(order, ['put ready', 'put tasks', 'del dead']);
  assert.ok(s3.objects.has(readyKey(next)));
  assert.ok(!s3.objects.has(deadKey(failed)));

  // An entry that cannot be written stops the action; the task is untouched.
  const other = (await be.listTasks({ status: 'failed' })).tasks[0];
  s3.put = async (key) => { if (key.startsWith('ready/')) throw new Error('503 Slow Down'); return put(key, ''); };
  await assert.rejects(() => be.act('replay', other.id, 1), /Slow Down/);
  assert.equal(JSON.parse(s3.objects.get(taskKey(other.shard, other.id))).status, 'failed');
});
