// The rules every part of a key passes in the page, run on the cases the
// Go rules answered (webui/testdata/keyparts.json, written by go test
// ./webui), and the key builders refusing a part that breaks them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  validPart, part, KeyPartError, taskKey, readyKey, leaseKey, deadKey, indexKeys, decodeTask, workerKey, payloadKey,
} from '../src/queue.js';
import { workflowKey, workflowNameKey } from '../src/workflow.js';
import { S3 } from '../src/s3.js';

const cases = JSON.parse(readFileSync(new URL('../testdata/keyparts.json', import.meta.url)));

test('each key part is accepted exactly where the Go rules accept it', () => {
  assert.ok(cases.length > 100);
  for (const c of cases) {
    assert.equal(validPart(c.kind, c.value), c.ok, `${c.kind} ${JSON.stringify(c.value)}`);
    if (c.ok) assert.equal(part(c.kind, c.value), c.value);
    else assert.throws(() => part(c.kind, c.value), KeyPartError);
  }
});

const ID = '0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b';
const LEASE = '6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f';
const task = (over = {}) => ({
  format: 1, id: ID, shard: '0', task_type: 'email', status: 'running', priority: 'normal', available_at: '2030-01-01T00:00:00Z',
  lease_expires_at: '2030-01-01T00:01:00Z', lease_id: LEASE, worker_id: 'w1', completed_at: '2030-01-01T00:02:00Z', ...over,
});

test('the key builders refuse a part that breaks its rules, naming it', () => {
  assert.equal(taskKey('0', ID), `tasks/0/${ID}.json`);
  assert.throws(() => taskKey('0', '0/../queue.json'), /refused: "0\/..\/queue.json" is not a task id/);
  assert.throws(() => taskKey('1', ID), /is not a shard/, 'a shard that is not the id\'s');
  assert.throws(() => taskKey('0/..', ID), KeyPartError);
  for (const [field, value] of [['worker_id', 'w/../../../queue.json'], ['lease_id', '../x'], ['task_type', '..'], ['id', `../${ID}`], ['shard', '..']]) {
    const t = task({ [field]: value });
    assert.throws(() => leaseKey(t), KeyPartError, `lease key with ${field} ${value}`);
    assert.throws(() => indexKeys(t), KeyPartError);
    if (field !== 'worker_id' && field !== 'lease_id') {
      assert.throws(() => readyKey(t), KeyPartError, `ready key with ${field}`);
      assert.throws(() => deadKey(t), KeyPartError, `dead key with ${field}`);
    }
    if (field === 'id' || field === 'shard') assert.throws(() => indexKeys({ ...t, status: 'waiting' }), KeyPartError, `waiting key with ${field}`);
  }
  assert.throws(() => workerKey('..'), KeyPartError);
  assert.throws(() => workflowKey('0/../queue.json', 1), KeyPartError);
  assert.throws(() => workflowNameKey('../../queue'), KeyPartError);
  assert.equal(workflowNameKey('nightly'), 'workflow-names/nightly.json');
});

test('decodeTask refuses what qo\'s DecodeTask refuses: parts that would build other keys', () => {
  const key = `tasks/0/${ID}.json`;
  assert.equal(decodeTask(key, JSON.stringify(task())).id, ID);
  for (const [over, want] of [
    [{ worker_id: 'w/../queue.json' }, /bad worker id/], [{ lease_id: 'lease-1' }, /bad lease id/], [{ task_type: 'a/b' }, /bad task type/],
    [{ children: ['0/../queue.json'] }, /bad child id/], [{ parents: [{ id: '..' }] }, /bad parent id/], [{ children: 'x' }, /not a list/],
    [{ priority: 'urgent' }, /unknown priority/],
  ]) {
    assert.throws(() => decodeTask(key, JSON.stringify(task(over))), want, JSON.stringify(over));
  }
  // The planted case: the id and the key spelt the same way, both resolving elsewhere.
  const evil = task({ id: '0/../queue.json' });
  assert.throws(() => decodeTask('tasks/0/0/../queue.json.json', JSON.stringify(evil)), /bad task id/);
});

test('an offloaded payload is read only at the key qo writes for it', () => {
  const t = task();
  assert.equal(payloadKey(t, { key: `data/0/${ID}/input.json` }, 'input'), `data/0/${ID}/input.json`);
  assert.equal(payloadKey(t, { key: `data/0/${ID}/output-${LEASE}.json` }, 'output'), `data/0/${ID}/output-${LEASE}.json`);
  for (const [key, what] of [['queue.json', 'input'], [`data/0/${ID}/../../../queue.json`, 'input'], [`data/0/${ID}/output-x/../y.json`, 'output'], [`data/0/${ID}/input.json`, 'output']]) {
    assert.throws(() => payloadKey(t, { key }, what), /refused/, key);
  }
});

test('the S3 client sends nothing for a key with a dot or empty segment', async () => {
  const s3 = new S3({ endpoint: 'http://127.0.0.1:1', bucket: 'b', accessKeyId: 'a', secretAccessKey: 's' });
  let sent = 0;
  s3.client.fetch = async () => {
    sent++;
    return new Response(null, { status: 204 });
  };
  for (const key of ['ready/0/x/../../../queue.json', 'tasks/./x', 'tasks//x', '../other-bucket/x']) {
    await assert.rejects(s3.del(key), /refused: the key/, key);
    await assert.rejects(s3.get(key), /refused: the key/, key);
  }
  assert.equal(sent, 0);
  await s3.del(`tasks/0/${ID}.json`);
  assert.equal(sent, 1);
});
