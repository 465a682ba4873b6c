// Cancelling a parent from the page tells its children as queue.Cancel
// does, on the Go-written case of testdata/cancel.json: the same objects
// before, the same tasks and index entries after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { S3Backend } from '../src/backend.js';
import { taskKey, recordEnd, recordEnds, hasEdges, decides, edgeKey, parseEdgeKey, LAYOUT_VERSION, READY_PREFIX, LEASES_PREFIX, WAITING_PREFIX, DEAD_PREFIX, EDGES_PREFIX } from '../src/queue.js';

const c = JSON.parse(readFileSync(new URL('../testdata/cancel.json', import.meta.url)));

// FakeS3 is a bucket in memory at the case's time: conditional PUTs
// compare ETags, as S3 does.
class FakeS3 {
  constructor(now) {
    this.objects = new Map();
    this.etags = new Map();
    this.n = 0;
    this.clock = now;
  }
  now() { return new Date(this.clock); }
  async get(key) {
    return this.objects.has(key) ? { text: this.objects.get(key), etag: this.etags.get(key) } : null;
  }
  async put(key, text, { ifMatch } = {}) {
    if (ifMatch && this.etags.get(key) !== ifMatch) throw Object.assign(new Error('412 PreconditionFailed'), { status: 412 });
    this.objects.set(key, text);
    this.etags.set(key, `"${++this.n}"`);
    return this.etags.get(key);
  }
  async del(key) {
    this.objects.delete(key);
    this.etags.delete(key);
  }
  async list(prefix, { token = '', maxKeys = 1000 } = {}) {
    const all = [...this.objects.keys()].filter((k) => k.startsWith(prefix) && k > token).sort();
    const keys = all.slice(0, maxKeys);
    return { keys: keys.map((key) => ({ key })), next: all.length > maxKeys ? keys[keys.length - 1] : '' };
  }
}

function bucket() {
  const s3 = new FakeS3(c.now);
  s3.objects.set('queue.json', JSON.stringify({ format: LAYOUT_VERSION, shard_chars: 1 }));
  for (const t of c.before) s3.put(taskKey(t.shard, t.id), JSON.stringify(t));
  for (const k of c.index_before) s3.put(k, '');
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  return { be, s3 };
}

// comparable makes a task comparable with Go's: times as milliseconds, the
// request id (random) left out.
function comparable(t) {
  const out = {};
  for (const [k, v] of Object.entries(t)) {
    if (k === 'request_id') continue;
    out[k] = typeof v === 'string' && /^\d{4}-\d\d-\d\dT/.test(v) ? Date.parse(v) : v;
  }
  return out;
}

test('cancelling a parent records its end on its children, which follow on_parent_failure, as queue.Cancel does', async () => {
  const { be, s3 } = bucket();
  await be.shards();
  be.actor = c.actor;
  const next = await be.act('cancel', c.parent, 1, c.reason);
  assert.equal(next.actor, c.actor, 'the write names who made it');
  assert.equal(next.status, 'cancelled');
  c.after.forEach((want, i) => {
    const got = JSON.parse(s3.objects.get(taskKey(want.shard, want.id)));
    assert.deepEqual(comparable(got), comparable(want), c.names[i]);
    const before = c.before[i];
    if (got.rev === before.rev) assert.equal(got.request_id, before.request_id, `${c.names[i]}: not written`);
    else assert.notEqual(got.request_id, before.request_id, `${c.names[i]}: a fresh request id`);
  });
  const index = [...s3.objects.keys()].filter((k) => [READY_PREFIX, LEASES_PREFIX, WAITING_PREFIX, DEAD_PREFIX, EDGES_PREFIX].some((p) => k.startsWith(p))).sort();
  assert.deepEqual(index, c.index_after);
});

test('recordEnd writes nothing on a child that is not waiting, does not list the parent or knows its end', () => {
  const parent = c.after[0];
  const at = new Date(c.now);
  const waiting = c.before.find((t, i) => c.names[i].startsWith('A:'));
  assert.equal(recordEnd(waiting, parent, at, 'r').status, 'cancelled');
  assert.equal(recordEnd({ ...waiting, status: 'cancelled' }, parent, at, 'r'), null);
  assert.equal(recordEnd({ ...waiting, parents: [{ id: c.before[1].id }] }, parent, at, 'r'), null);
  assert.equal(recordEnd({ ...waiting, parents: [{ id: parent.id, done: 'cancelled' }] }, parent, at, 'r'), null);
  assert.throws(() => recordEnd(waiting, c.before[0], at, 'r'), /did not end/);
});

test('edge keys: the page reads the ones qo writes and refuses others', () => {
  const [child, parent] = [c.before[2].id, c.before[0].id];
  assert.deepEqual(parseEdgeKey(edgeKey(child, parent, 'completed')), { child, parent, status: 'completed' });
  for (const bad of [`${EDGES_PREFIX}${child}/${parent}/archived`, `${EDGES_PREFIX}${child}/${parent}/running`, `${EDGES_PREFIX}${child}/x/failed`, `${EDGES_PREFIX}${child}/${parent}`, `waiting/${child}/${parent}/failed`]) {
    assert.equal(parseEdgeKey(bad), null, bad);
  }
});

test('recordEnds records several ends in one write, and leaves a child taking values from a completed parent to qo', () => {
  const wide = c.before.find((t, i) => c.names[i].startsWith('W:'));
  const at = new Date(c.now);
  const ends = Object.fromEntries(wide.parents.map((p) => [p.id, 'completed']));
  assert.ok(hasEdges(wide));
  assert.ok(decides(wide, ends));
  assert.ok(!decides(wide, { [wide.parents[1].id]: 'completed' }), 'one end of many decides nothing');
  const next = recordEnds(wide, ends, at, 'r');
  assert.equal(next.status, 'pending');
  assert.equal(next.rev, wide.rev + 1);
  assert.equal(recordEnds(next, ends, at, 'r'), null, 'not waiting any more');
  const taking = { ...wide, input_from: { rows: { parent: wide.parents[1].id, path: 'rows' } } };
  assert.throws(() => recordEnds(taking, ends, at, 'r'), /input_from/);
});

test('viewTask shows a wide child with the ends its edge objects hold, as Go\'s Get does', async () => {
  const { be, s3 } = bucket();
  const wide = c.before.find((t, i) => c.names[i].startsWith('W:'));
  const parent = wide.parents.find((p) => !p.done);
  s3.put(edgeKey(wide.id, parent.id, 'completed'), '');
  const stored = s3.objects.get(taskKey(wide.shard, wide.id));
  let lists = 0;
  const list = s3.list.bind(s3);
  s3.list = (...args) => { lists++; return list(...args); };

  const { task } = await be.viewTask(wide.id, 1);
  assert.equal(task.status, 'waiting');
  assert.equal(task.parents.find((p) => p.id === parent.id).done, 'completed');
  const edged = new Set([...s3.objects.keys()].map(parseEdgeKey).filter((e) => e && e.child === wide.id).map((e) => e.parent));
  for (const p of task.parents) {
    const before = wide.parents.find((q) => q.id === p.id);
    assert.equal(Boolean(p.done), Boolean(before.done) || edged.has(p.id), `parent ${p.id}: done only by the task or an edge object`);
  }
  assert.equal(s3.objects.get(taskKey(wide.shard, wide.id)), stored, 'a read writes nothing');
  assert.equal(lists, 1);

  const narrow = c.before.find((t) => !hasEdges(t));
  const { task: same } = await be.viewTask(narrow.id, 1);
  assert.deepEqual(same, JSON.parse(s3.objects.get(taskKey(narrow.shard, narrow.id))));
  assert.equal(lists, 1, 'no LIST for a task without edges');
});
