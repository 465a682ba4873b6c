// The search box: what it understands, what each search costs, and the
// searches against an in-memory bucket that counts requests: the cost is
// that of what is shown, the same beside any amount of history.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseSearch, idPrefix, idShards, searchCost, searchNote, SEARCH_LIMIT } from '../src/search.js';
import { S3Backend } from '../src/backend.js';
import { idempotencyKey, shards, shardOf, taskKey, readyKey, deadKey, leaseKey, LAYOUT_VERSION } from '../src/queue.js';

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

test('parseSearch: ids and their beginnings, types, idempotency keys', () => {
  assert.deepEqual(parseSearch(ID), { kind: 'id', prefix: ID, full: true, text: ID });
  assert.deepEqual(parseSearch(` ${ID.toUpperCase()} `), { kind: 'id', prefix: ID, full: true, text: ID }, 'case and spaces do not matter');
  assert.deepEqual(parseSearch('0190a1b2c3d4'), { kind: 'id', prefix: '0190a1b2-c3d4', full: false, text: '0190a1b2-c3d4' }, 'dashes are optional');
  assert.deepEqual(parseSearch('id:0190'), { kind: 'id', prefix: '0190', full: false, text: '0190' });
  assert.deepEqual(parseSearch('email'), { kind: 'type', type: 'email', text: 'type:email' }, 'a name that is not hex is a type');
  assert.deepEqual(parseSearch('type:add'), { kind: 'type', type: 'add', text: 'type:add' }, 'type: for a hex-looking name');
  assert.equal(parseSearch('add').kind, 'id');
  assert.deepEqual(parseSearch('key:email/order 42/confirm'), { kind: 'key', type: 'email', key: 'order 42/confirm', text: 'key:email/order 42/confirm' },
    'the key runs from the first slash: types hold none');
  assert.deepEqual(parseSearch('KEY:report.monthly/2030-01'), { kind: 'key', type: 'report.monthly', key: '2030-01', text: 'key:report.monthly/2030-01' });
  for (const bad of ['', '   ', 'id:xyz', 'key:email', 'key:/k', 'key:a b/k', 'two words', `key:t/${'k'.repeat(257)}`, `${ID}0`]) {
    assert.ok(parseSearch(bad).error, `${JSON.stringify(bad)} is refused`);
  }
});

test('idPrefix and the shards a prefix is looked for in', () => {
  assert.deepEqual(idPrefix('0190A1B2C3D47E5F8A9B0C1D2E3F4A5B'), { prefix: ID, hex: ID.replace(/-/g, '') });
  assert.equal(idPrefix('g'), null);
  const all = shards(1);
  assert.deepEqual(idShards('0190a1b2', all), all, 'a time-ordered id: its shard is its end, unknown');
  assert.deepEqual(idShards('0190a1b2-c3d4-7e5f', all), all);
  assert.deepEqual(idShards('3f2a1b4c-5d6e-4f70', all), ['3'], 'a random id: its first characters');
  assert.deepEqual(idShards('3f2a1b4c-5d6e-4f70', shards(2)), ['3f']);
  assert.deepEqual(idShards(ID, all), ['b'], 'a full id: queue.ShardOf');
});

test('searchCost says what each search costs, in both modes', () => {
  const all = shards(1);
  assert.equal(searchCost(parseSearch(ID), 'S3', all), '1 GET');
  assert.equal(searchCost(parseSearch('0190'), 'S3', all),
    `16 LIST (one per shard) + 1 GET per task shown (at most ${SEARCH_LIMIT}); when no id starts with it, 5 LIST for the ids ending with it (the short ids of the lists)`);
  assert.match(searchCost(parseSearch('0190'), 'S3', shards(2)), /^256 LIST/);
  assert.equal(searchCost(parseSearch('key:email/k'), 'S3', all), "2 GET (the key's marker, then its task)");
  assert.match(searchCost(parseSearch('type:email'), 'S3', all), /ready, lease and dead-letter indexes/);
  assert.equal(searchCost(parseSearch('key:email/k'), 'API', all), '1 request to qo serve (it makes 2 GET)');
  assert.match(searchCost(parseSearch('type:email'), 'API', all), /^3 requests to qo serve/);
  assert.match(searchNote(parseSearch('type:email'), 3), /finished and waiting tasks are not found/);
  assert.match(searchNote(parseSearch('a1b2c3d4'), 0), /ends with it/, 'a short id found nowhere: where it was looked for');
  assert.equal(searchNote(parseSearch('a1b2c3d4'), 1), '');
});

test('idempotencyKey is queue.IdempotencyKey (cases from the Go function)', async () => {
  const cases = JSON.parse(readFileSync(new URL('../testdata/idempotency.json', import.meta.url)));
  assert.ok(cases.length >= 4);
  for (const c of cases) assert.equal(await idempotencyKey(c.type, c.key), c.marker, JSON.stringify(c));
});

// ---- the searches, on a bucket ------------------------------------------

class FakeS3 {
  constructor(now) {
    this.objects = new Map();
    this.counts = { LIST: 0, GET: 0 };
    this.clock = now;
  }
  now() { return new Date(this.clock); }
  async list(prefix, { startAfter = '', maxKeys = 1000 } = {}) {
    this.counts.LIST++;
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix) && k > startAfter).sort();
    return { keys: keys.slice(0, maxKeys).map((key) => ({ key })), next: keys.length > maxKeys ? 'more' : '' };
  }
  async get(key) {
    this.counts.GET++;
    return this.objects.has(key) ? { text: this.objects.get(key), etag: `"${key}"` } : null;
  }
}

const NOW = Date.parse('2030-01-02T03:04:05Z');

function v7(ms, n) {
  const h = ms.toString(16).padStart(12, '0');
  const r = n.toString(16).padStart(15, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${r.slice(0, 3)}-8${r.slice(3, 6)}-${r.slice(3, 15)}`;
}

function task(id, type, status, ms, extra = {}) {
  const at = new Date(ms).toISOString();
  return {
    format: 1, id, task_type: type, shard: shardOf(id, 1), status, available_at: at, created_at: at, updated_at: at,
    completed_at: status === 'failed' ? at : null, priority: 'normal', attempt: 1, rev: 2, idempotency_key: '', ...extra,
  };
}

// bucket: live tasks of two types, a keyed task, and `history` finished
// tasks of every type, created over the ten days before.
async function bucket(history) {
  const s3 = new FakeS3(NOW);
  s3.objects.set('queue.json', JSON.stringify({ format: LAYOUT_VERSION, shard_chars: 1 }));
  const add = (t) => {
    s3.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
    if (t.status === 'pending') s3.objects.set(readyKey(t), '');
    if (t.status === 'running') s3.objects.set(leaseKey(t), '');
    if (t.status === 'failed') s3.objects.set(deadKey(t), '');
  };
  const live = [];
  for (let i = 0; i < 4; i++) live.push(task(v7(NOW - 60000, i), i % 2 ? 'email' : 'resize', 'pending', NOW - 60000));
  live.push(task(v7(NOW - 50000, 10), 'email', 'running', NOW - 50000, { lease_id: v7(NOW, 99), worker_id: 'w1', lease_expires_at: new Date(NOW + 60000).toISOString() }));
  for (let i = 0; i < 3; i++) live.push(task(v7(NOW - 120000, 20 + i), 'email', 'failed', NOW - 120000 + i));
  const keyed = task(v7(NOW - 30000, 30), 'email', 'pending', NOW - 30000, { idempotency_key: 'order-42' });
  live.push(keyed);
  s3.objects.set(await idempotencyKey('email', 'order-42'), JSON.stringify({ format: 1, task_id: keyed.id, task_type: 'email', idempotency_key: 'order-42' }));
  for (const t of live) add(t);
  for (let i = 0; i < history; i++) add(task(v7(NOW - 10 * 86400000 + i * 1000, 1000 + i), i % 2 ? 'email' : 'resize', 'completed', NOW - 10 * 86400000));
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  await be.shards();
  return { be, s3, live, keyed };
}

test('searches find what they should and cost what they show, with or without history', async () => {
  const costs = [];
  for (const history of [0, 3000]) {
    const { be, s3, live, keyed } = await bucket(history);
    const run = async (text) => {
      const before = { ...s3.counts };
      const r = await be.search(parseSearch(text));
      return { ids: r.tasks.map((t) => t.id), more: r.more, LIST: s3.counts.LIST - before.LIST, GET: s3.counts.GET - before.GET };
    };
    const failed = live.filter((t) => t.status === 'failed');
    const got = {
      full: await run(failed[0].id),
      prefix: await run(failed[0].id.slice(0, 13)),
      type: await run('type:email'),
      key: await run('key:email/order-42'),
      missingKey: await run('key:resize/order-42'),
      tail: await run(failed[0].id.slice(-8)),
    };
    assert.deepEqual(got.full.ids, [failed[0].id]);
    assert.deepEqual(got.prefix.ids, failed.map((t) => t.id).sort(), 'the three created in the same millisecond, oldest first');
    assert.deepEqual(new Set(got.type.ids), new Set(live.filter((t) => t.task_type === 'email').map((t) => t.id)), 'pending, running and failed');
    assert.deepEqual(got.key.ids, [keyed.id]);
    assert.deepEqual(got.missingKey.ids, [], 'a key belongs to its type');
    assert.deepEqual(got.tail.ids, [failed[0].id], 'the short id a list shows (the end of the id) finds its task, in its shard');
    costs.push(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, `${v.LIST} LIST + ${v.GET} GET`])));
  }
  assert.deepEqual(costs[0], costs[1], 'history changes nothing');
  assert.deepEqual(costs[0], {
    full: '0 LIST + 1 GET', prefix: '16 LIST + 3 GET', type: '3 LIST + 7 GET', key: '0 LIST + 2 GET', missingKey: '0 LIST + 1 GET', tail: '21 LIST + 1 GET',
  });
});

test('a prefix shows at most SEARCH_LIMIT tasks and says there are more', async () => {
  const { be, s3 } = await bucket(0);
  for (let i = 0; i < 30; i++) {
    const t = task(v7(NOW - 5000, 500 + i), 'bulk', 'completed', NOW - 5000);
    s3.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
  }
  const r = await be.search(parseSearch(v7(NOW - 5000, 0).slice(0, 13)));
  assert.equal(r.tasks.length, SEARCH_LIMIT);
  assert.deepEqual(r.more, ['id']);
  assert.deepEqual(r.tasks.map((t) => t.id), r.tasks.map((t) => t.id).sort(), 'oldest first');
});

test('a type search and the dead letters of a type read only the keys naming it', async () => {
  const { be, s3 } = await bucket(0);
  // 2,500 dead letters of another type, newer: the email ones come after them.
  for (let i = 0; i < 2500; i++) s3.objects.set(deadKey(task(v7(NOW - 1000, 5000 + i), 'resize', 'failed', NOW - 1000)), '');
  const before = { ...s3.counts };
  const page = await be.listTasks({ status: 'failed', type: 'email' });
  assert.equal(page.tasks.length, 3);
  assert.equal(page.next_cursor, '');
  assert.deepEqual({ LIST: s3.counts.LIST - before.LIST, GET: s3.counts.GET - before.GET }, { LIST: 3, GET: 3 }, 'a LIST per 1,000 keys, a GET per task shown');
  const dead = await be.deadOfType('email');
  assert.equal(dead.candidates.length, 3);
  assert.deepEqual(dead.found, { s3: { LIST: 3 } });
  assert.equal(dead.partial, false);
  assert.deepEqual(new Set(dead.candidates.map((t) => t.status)), new Set(['failed']));
});
