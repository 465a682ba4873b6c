// Task keys (queue/doc.go, "Task keys"): a keyed task's ready entry lies in
// its key's section of the partition, "-{key}/", which the page reads and
// writes as qo does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readyKey, indexEntry, parseIndexKey, decodeTask } from '../src/queue.js';

const id = '0197a3b2-6c1d-7e2f-8a3b-4c5d6e7f8a9b';
const task = { id, shard: 'b', task_type: 'sync', priority: 'normal', available_at: '2026-01-02T03:04:05.000Z', status: 'pending' };

test('a keyed task\'s ready entry carries its key, and reads back', () => {
  const plain = readyKey(task);
  assert.equal(plain, `ready/sync/b/1767323045000~normal~${id}`);
  const keyed = readyKey({ ...task, key: 'customer-42' });
  assert.equal(keyed, `ready/sync/b/-customer-42/1767323045000~normal~${id}`);
  assert.equal(indexEntry(keyed).key, 'customer-42');
  assert.equal(indexEntry(keyed).id, id);
  assert.equal(indexEntry(plain).key, undefined);
  assert.deepEqual(parseIndexKey(keyed), { shard: 'b', id });
  const name = `1767323045000~normal~${id}`;
  // Layout 4's form (the key as a fourth field) is a stray qo converts.
  for (const bad of [`${plain}~customer-42`, `${plain}~`, `ready/sync/b/-/${name}`, `ready/sync/b/-a b/${name}`, `ready/sync/b/x/${name}`, `ready/sync/b/-k/${name}~k`]) {
    assert.equal(indexEntry(bad), null, bad);
    assert.equal(parseIndexKey(bad), null, bad);
  }
  assert.throws(() => readyKey({ ...task, key: 'a/b' }));
});

test('a task object with a bad key is refused', () => {
  const key = `tasks/b/${id}.json`;
  assert.equal(decodeTask(key, JSON.stringify({ format: 1, ...task, key: 'customer-42' })).key, 'customer-42');
  assert.throws(() => decodeTask(key, JSON.stringify({ format: 1, ...task, key: '../x' })), /bad task key/);
});
