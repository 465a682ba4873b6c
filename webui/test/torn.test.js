// The page's S3 client against a server that tears reads (an old body with
// the ETag of the write that replaced it): as s3store does, a read that
// settles on re-read returns the settled pair, one that does not is a 412
// TornRead, and a healthy server costs no extra request.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { S3, TORN_BACKOFF_MS } from '../src/s3.js';

globalThis.DOMParser ??= class {
  parseFromString(text) {
    return { getElementsByTagName: (name) => [...text.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => ({ textContent: m[1] })) };
  }
};

const md5 = (s) => createHash('md5').update(s).digest('hex');
const whole = (body) => ({ body, etag: `"${md5(body)}"` });
const torn = (old, next) => ({ body: old, etag: `"${md5(next)}"` });
const OPAQUE = `"${'ab'.repeat(16)}"`; // an SSE-KMS-like ETag: not the body's MD5

// server answers GETs of a key with its queued answers in order (the last
// one again once they run out) and PUTs with putETag(body).
function server(answers, putETag = (b) => `"${md5(b)}"`) {
  const s = { gets: 0 };
  globalThis.fetch = async (request) => {
    const key = decodeURIComponent(new URL(request.url).pathname.slice('/b/'.length));
    if (request.method === 'PUT') return new Response('', { headers: { ETag: putETag(await request.text()) } });
    s.gets++;
    const q = answers[key];
    if (!q) return new Response('<Error><Code>NoSuchKey</Code></Error>', { status: 404 });
    const a = q.length > 1 ? q.shift() : q[0];
    return new Response(a.body, { headers: { ETag: a.etag } });
  };
  return s;
}

function client() {
  const c = new S3({ endpoint: 'http://s3.test', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  c.waits = [];
  c.sleep = async (ms) => c.waits.push(ms);
  return c;
}

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

const PENDING = '{"status":"pending","note":"é"}';
const RUNNING = '{"status":"running","note":"é"}';

for (const tc of [
  { name: 'healthy', put: true, reads: [whole(RUNNING)], want: whole(RUNNING), rereads: 0 },
  { name: 'healthy before any put', put: false, reads: [whole(RUNNING)], want: whole(RUNNING), rereads: 0 },
  { name: 'torn once', put: true, reads: [torn(PENDING, RUNNING), whole(RUNNING)], want: whole(RUNNING), rereads: 1 },
  { name: 'torn before any put', put: false, reads: [torn(PENDING, RUNNING), whole(RUNNING)], want: whole(RUNNING), rereads: 1 },
  { name: 'torn throughout', put: true, reads: [torn(PENDING, RUNNING)], torn: true, rereads: 3 },
  { name: 'opaque ETags, learnt from a put', put: true, putETag: () => OPAQUE, reads: [{ body: RUNNING, etag: OPAQUE }], want: { body: RUNNING, etag: OPAQUE }, rereads: 0 },
  { name: 'opaque ETags before any put', put: false, reads: [{ body: RUNNING, etag: OPAQUE }], want: { body: RUNNING, etag: OPAQUE }, rereads: 1 },
]) {
  test(`torn reads: ${tc.name}`, async () => {
    const s = server({ 'tasks/0/t.json': tc.reads }, tc.putETag);
    const c = client();
    if (tc.put) await c.put('workers/w.json', '{"id":"w"}');
    const got = c.get('tasks/0/t.json');
    if (tc.torn) {
      await assert.rejects(got, (e) => e.status === 412 && e.code === 'TornRead' && /tasks\/0\/t\.json/.test(e.message));
    } else {
      assert.deepEqual(await got, { text: tc.want.body, etag: tc.want.etag });
    }
    assert.equal(s.gets, tc.rereads + 1, 'GET requests');
    assert.deepEqual(c.waits, TORN_BACKOFF_MS.slice(0, tc.rereads), 'a backoff before each re-read');
  });
}

test('torn reads: two objects with the same mismatch make ETags opaque until a put says otherwise', async () => {
  const opaque = { body: '{}', etag: OPAQUE };
  const s = server({ a: [opaque], b: [opaque], c: [opaque], d: [torn('old', 'new'), whole('new')] });
  const c = client();
  await c.get('a');
  await c.get('b');
  assert.equal(s.gets, 4);
  await c.get('c');
  assert.equal(s.gets, 5, 'no re-read once the ETags are known not to be MD5s');
  await c.put('e', 'e');
  assert.deepEqual(await c.get('d'), { text: 'new', etag: whole('new').etag });
  assert.equal(s.gets, 7);
});

