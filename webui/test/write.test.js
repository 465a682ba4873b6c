// The page's task write (S3Backend.act) through its real S3 client, on a
// bucket behind a fake fetch that loses answers: the index rule of
// queue/doc.go ("Index entries are written first") and the request_id
// rule ("rev, attempt and request_id") as queue's apply keeps them.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { S3Backend } from '../src/backend.js';
import { taskKey, readyKey, deadKey, indexKeys, TransitionError, LAYOUT_VERSION, FORMAT_VERSION } from '../src/queue.js';

// The page parses S3's XML errors with the browser's DOMParser; node has
// none, and the error's code is all the page reads of it.
globalThis.DOMParser ??= class {
  parseFromString(text) {
    return { getElementsByTagName: (name) => [...text.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => ({ textContent: m[1] })) };
  }
};

const ENDPOINT = 'http://s3.test';
const BUCKET = 'b';

// FakeBucket answers the page's requests as S3 does (conditional PUTs on
// ETags, MinIO's 404 on If-Match of a missing key) and logs them.
// fault(req) may break one: it returns what happens to it:
//   'lost'      the request is applied, then the connection drops;
//   'unsent'    the connection drops before the request arrives;
//   500         the request is applied, then the server answers 500;
//   a function  run before the request (another writer), then it goes on.
class FakeBucket {
  constructor() {
    this.objects = new Map();
    this.n = 0;
    this.log = [];
    this.fault = () => null;
    this.fetch = this.fetch.bind(this);
  }
  set(key, text) {
    this.objects.set(key, { text, etag: `"${++this.n}"` });
  }
  text(key) {
    return this.objects.get(key)?.text;
  }
  async fetch(request) {
    const url = new URL(request.url);
    const key = decodeURIComponent(url.pathname.slice(`/${BUCKET}/`.length));
    const req = { method: request.method, key, ifMatch: request.headers.get('If-Match'), body: request.method === 'PUT' ? await request.text() : null };
    this.log.push(req);
    let what = this.fault(req);
    if (typeof what === 'function') {
      what();
      what = null;
    }
    if (what === 'unsent') throw new TypeError('fetch failed');
    const res = this.apply(req);
    if (what === 'lost') throw new TypeError('fetch failed');
    if (what === 500) return error(500, 'InternalError');
    return res;
  }
  apply({ method, key, ifMatch, body }) {
    const obj = this.objects.get(key);
    if (method === 'GET') return obj ? new Response(obj.text, { headers: { ETag: obj.etag } }) : error(404, 'NoSuchKey');
    if (method === 'DELETE') {
      this.objects.delete(key);
      return new Response(null, { status: 204 });
    }
    if (ifMatch && !obj) return error(404, 'NoSuchKey');
    if (ifMatch && obj.etag !== ifMatch) return error(412, 'PreconditionFailed');
    this.set(key, body);
    return new Response(null, { headers: { ETag: this.objects.get(key).etag } });
  }
  // sent lists the requests of one method, by key.
  sent(method, prefix = '') {
    return this.log.filter((r) => r.method === method && r.key.startsWith(prefix)).map((r) => r.key);
  }
}

function error(status, code) {
  return new Response(`<?xml version="1.0"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`, { status });
}

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

const ID = '01b8e094-9888-7452-88d1-4c4bc71a45dc';
const T0 = '2030-01-02T03:04:05.000Z';

// failedTask is a dead letter, with its dead-letter entry.
function failedTask(over = {}) {
  return {
    format: FORMAT_VERSION, id: ID, task_type: 'job', shard: 'c', status: 'failed', priority: 'normal', available_at: T0, created_at: T0,
    updated_at: T0, completed_at: T0, last_error: 'boom', rev: 3, request_id: 'base-request', attempt: 1, retry_count: 3, max_retries: 3,
    worker_id: 'w1', lease_id: '', lease_expires_at: null, last_event: 'failed', ...over,
  };
}

async function setup(task) {
  const bucket = new FakeBucket();
  bucket.set('queue.json', JSON.stringify({ format: LAYOUT_VERSION, shard_chars: 1 }));
  bucket.set(taskKey(task.shard, task.id), JSON.stringify(task));
  for (const k of indexKeys(task)) bucket.set(k, '');
  globalThis.fetch = bucket.fetch;
  const be = new S3Backend({ endpoint: ENDPOINT, bucket: BUCKET, region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  await be.shards();
  bucket.log = [];
  return { be, bucket, key: taskKey(task.shard, task.id) };
}

const stored = (bucket, key) => JSON.parse(bucket.text(key));

test('a task write whose answer is lost, and whose re-read fails too, leaves every index entry in place', async () => {
  const base = failedTask();
  const { be, bucket, key } = await setup(base);
  let taskPuts = 0;
  bucket.fault = (r) => {
    if (r.method === 'PUT' && r.key === key) return ++taskPuts === 1 ? 'lost' : null;
    if (r.method === 'GET' && r.key === key && taskPuts > 0) return 'unsent';
    return null;
  };
  await assert.rejects(() => be.act('replay', ID, 1), /outcome unknown/);
  const now = stored(bucket, key);
  assert.equal(now.status, 'pending', 'the write landed');
  assert.ok(bucket.objects.has(readyKey(now)), 'the pending task keeps its ready entry');
  assert.ok(bucket.objects.has(deadKey(base)), 'and the old entry stays until the outcome is known');
  assert.deepEqual(bucket.sent('DELETE'), [], 'nothing is deleted');
  assert.equal(taskPuts, 1, 'nor written again');
});

test('a task write answered 5xx after it landed succeeds once the re-read shows its request id', async () => {
  const base = failedTask();
  const { be, bucket, key } = await setup(base);
  // The 500 is retried by the signing client: its retry finds the ETag
  // changed (412), as an SDK retry of a PUT that committed does.
  let taskPuts = 0;
  bucket.fault = (r) => (r.method === 'PUT' && r.key === key && ++taskPuts === 1 ? 500 : null);
  const next = await be.act('replay', ID, 1);
  assert.equal(taskPuts, 2, 'the client sent it again and got 412');
  assert.equal(next.status, 'pending');
  const now = stored(bucket, key);
  assert.equal(now.request_id, next.request_id);
  assert.equal(now.rev, base.rev + 1, 'written once');
  assert.ok(bucket.objects.has(readyKey(now)), 'the new entry stays');
  assert.ok(!bucket.objects.has(deadKey(base)), 'the old one is deleted');
  assert.deepEqual(bucket.sent('DELETE'), [deadKey(base)]);
});

test('a task write that did not arrive is sent again with the same request id', async () => {
  const base = failedTask();
  const { be, bucket, key } = await setup(base);
  let taskPuts = 0;
  bucket.fault = (r) => (r.method === 'PUT' && r.key === key && ++taskPuts === 1 ? 'unsent' : null);
  const next = await be.act('replay', ID, 1);
  const bodies = bucket.log.filter((r) => r.method === 'PUT' && r.key === key).map((r) => JSON.parse(r.body).request_id);
  assert.deepEqual(bodies, [next.request_id, next.request_id]);
  assert.equal(stored(bucket, key).rev, base.rev + 1);
  assert.ok(bucket.objects.has(readyKey(next)));
  assert.ok(!bucket.objects.has(deadKey(base)));
});

test('a task write refused because another writer won deletes the entries it wrote, except those the current version needs', async () => {
  // A child cancelled because its parent failed: replaying it makes it
  // wait (waiting/{shard}/{id}). Meanwhile the parent's replay made it
  // wait already (queue's rewait), with its own request id: the same
  // entry, which the current version needs.
  const P = '01b8e094-9888-7d93-ae38-c4d254308af2';
  const base = failedTask({
    status: 'cancelled', last_event: 'cancelled', last_error: '', cancel_requested: true, cancel_requested_at: T0,
    cancel_reason: `parent ${P} failed`, parents: [{ id: P, done: 'failed' }], on_parent_failure: 'cancel',
  });
  const { be, bucket, key } = await setup(base);
  const other = { ...structuredClone(base), status: 'waiting', parents: [{ id: P }], cancel_requested: false, cancel_requested_at: null, cancel_reason: '', completed_at: null, rev: base.rev + 1, request_id: 'other-writer', last_event: 'replayed' };
  const waitingKey = indexKeys(other)[0];
  let raced = false;
  bucket.fault = (r) => {
    if (r.method !== 'PUT' || r.key !== key || raced) return null;
    raced = true;
    return () => bucket.set(key, JSON.stringify(other)); // the entry is there already: written by this call
  };
  await assert.rejects(() => be.act('replay', ID, 1), TransitionError, 'a waiting task is not replayed');
  assert.equal(stored(bucket, key).request_id, 'other-writer');
  assert.ok(bucket.objects.has(waitingKey), 'the waiting task keeps its waiting entry');
  assert.deepEqual(bucket.sent('DELETE'), []);

  // Another writer archived a dead letter: the ready entry this call
  // wrote for its replay is deleted again.
  const dead = failedTask();
  const s = await setup(dead);
  const archived = { ...dead, status: 'archived', rev: dead.rev + 1, request_id: 'other-writer', last_event: 'archived' };
  raced = false;
  s.bucket.fault = (r) => {
    if (r.method !== 'PUT' || r.key !== s.key || raced) return null;
    raced = true;
    return () => {
      s.bucket.set(s.key, JSON.stringify(archived));
      s.bucket.objects.delete(deadKey(dead));
    };
  };
  await assert.rejects(() => s.be.act('replay', ID, 1), TransitionError);
  const ready = s.bucket.sent('PUT', 'ready/');
  assert.equal(ready.length, 1);
  assert.deepEqual(s.bucket.sent('DELETE'), ready, 'the entry it wrote, deleted');
  assert.ok(![...s.bucket.objects.keys()].some((k) => k.startsWith('ready/')));
});
