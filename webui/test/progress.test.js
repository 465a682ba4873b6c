// A running task's progress: read from its holder's registry entry with one
// GET (queue/doc.go, "Progress"), shown only when it follows the rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { S3Backend, ApiBackend } from '../src/backend.js';
import { progressOf, progressText, workerKey, KeyPartError } from '../src/queue.js';

const ID = '3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8';
const running = { id: ID, status: 'running', worker_id: 'w-1', attempt: 2 };
const record = (p) => ({ format: 1, worker_id: 'w-1', progress: { [ID]: p } });
const good = { attempt: 2, fraction: 0.42, message: 'resized 42 of 100', at: '2030-01-02T03:04:05Z' };

test('progressOf keeps a report of the running attempt that follows the rules', () => {
  assert.deepEqual(progressOf(running, record(good)), good);
  assert.equal(progressText(good), '42% resized 42 of 100');
  assert.equal(progressText({ fraction: 1, message: '' }), '100%');
  for (const [name, t, r] of [
    ['not running', { ...running, status: 'completed' }, record(good)],
    ['another worker', { ...running, worker_id: 'w-2' }, record(good)],
    ['an earlier attempt', running, record({ ...good, attempt: 1 })],
    ['fraction over 1', running, record({ ...good, fraction: 1.5 })],
    ['fraction not a number', running, record({ ...good, fraction: '0.5' })],
    ['escape sequence', running, record({ ...good, message: '\u001b]0;pwned\u0007' })],
    ['newline', running, record({ ...good, message: 'a\nb' })],
    ['too long', running, record({ ...good, message: 'é'.repeat(101) })],
    ['no report', running, { format: 1, worker_id: 'w-1' }],
  ]) assert.equal(progressOf(t, r), null, name);
});

test('workerKey refuses ids qo would not write', () => {
  assert.equal(workerKey('w-1'), 'workers/w-1.json');
  for (const bad of ['', '..', 'a/b', 'a b', 'x'.repeat(129), null]) assert.throws(() => workerKey(bad), KeyPartError, String(bad));
});

test('the S3 backend reads the progress with one GET of the holder entry', async () => {
  const objects = new Map([['workers/w-1.json', JSON.stringify(record(good))], ['workers/w-bad.json', '{not json']]);
  const s3 = { gets: 0, async get(key) { this.gets++; return objects.has(key) ? { text: objects.get(key), etag: '"e"' } : null; } };
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  assert.deepEqual(await be.taskProgress(running), good);
  assert.equal(s3.gets, 1);
  assert.equal(await be.taskProgress({ ...running, status: 'pending' }), null);
  assert.equal(await be.taskProgress({ ...running, worker_id: '../queue' }), null);
  assert.equal(s3.gets, 1, 'no GET for a task not running or a worker id qo would not write');
  assert.equal(await be.taskProgress({ ...running, worker_id: 'w-bad' }), null, 'a malformed entry shows no progress');
  assert.equal(await be.taskProgress({ ...running, worker_id: 'w-gone' }), null);
});

test('the API backend takes the progress GET /api/tasks/{id} carries', async () => {
  const be = Object.create(ApiBackend.prototype);
  assert.deepEqual(await be.taskProgress({ ...running, progress: good }), good);
  assert.equal(await be.taskProgress(running), null);
});
