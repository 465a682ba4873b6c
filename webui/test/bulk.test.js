// Bulk actions on dead letters: the plan (which tasks, what it costs,
// what is skipped and why) and the run (bounded concurrency, progress,
// failures with their error, stop), with the page's own single action.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planBulk, runBulk, actionRequests, deadEntryTask, describeFailure, formatOps, serverPlan, BULK_CONCURRENCY, BULK_MAX_IDS, BULK_FILTER_PAGES } from '../src/bulk.js';
import { S3Backend } from '../src/backend.js';
import { deadKey, readyKey, indexEntry, taskKey, shardOf, TransitionError } from '../src/queue.js';

const NOW = '2030-01-02T03:04:05.000Z';

function v7(ms, n) {
  const h = ms.toString(16).padStart(12, '0');
  const r = n.toString(16).padStart(15, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${r.slice(0, 3)}-8${r.slice(3, 6)}-${r.slice(3, 15)}`;
}

function failed(n, extra = {}) {
  const id = v7(Date.parse(NOW) - 60000, n);
  const at = new Date(Date.parse(NOW) - 30000).toISOString();
  return {
    format: 1, id, task_type: 'email', shard: shardOf(id, 1), status: 'failed', priority: 'normal', available_at: at, created_at: at,
    updated_at: at, completed_at: at, rev: 4, attempt: 3, retry_count: 3, worker_id: 'w1', lease_id: '', lease_expires_at: null, last_error: 'smtp: 550', ...extra,
  };
}

test('the cost of one action is what the single action writes', () => {
  assert.deepEqual(actionRequests(failed(1), 'replay', 'S3', NOW), { s3: { GET: 1, PUT: 2, DELETE: 1 } }, 'the task, its ready entry; the dead entry removed');
  assert.deepEqual(actionRequests(failed(1), 'archive', 'S3', NOW), { s3: { GET: 1, PUT: 1, DELETE: 1 } }, 'the task; the dead entry removed');
  assert.deepEqual(actionRequests(failed(1), 'replay', 'API', NOW), { api: { POST: 1 }, s3: { GET: 1, PUT: 2, DELETE: 1 } });
  assert.throws(() => actionRequests(failed(1, { status: 'pending' }), 'replay', 'S3', NOW), TransitionError);
});

test('replay 50 failed tasks: 50 GET + 100 PUT, in both modes', () => {
  const tasks = Array.from({ length: 50 }, (_, i) => failed(i));
  const s3 = planBulk({ op: 'replay', mode: 'S3', candidates: tasks, now: NOW });
  assert.equal(s3.items.length, 50);
  assert.deepEqual(s3.skipped, []);
  assert.equal(s3.summary, 'replay 50 tasks: 50 GET + 100 PUT + 50 DELETE');
  assert.equal(s3.dollars, '$0.0005', '100 PUT at $0.005 and 50 GET at $0.0004 per 1,000');
  const api = planBulk({ op: 'replay', mode: 'API', candidates: tasks, now: NOW });
  assert.equal(api.summary, 'replay 50 tasks: 50 POST to qo serve, which makes 50 GET + 100 PUT + 50 DELETE');
  const archive = planBulk({ op: 'archive', mode: 'S3', candidates: tasks.slice(0, 3), now: NOW });
  assert.equal(archive.summary, 'archive 3 tasks: 3 GET + 3 PUT + 3 DELETE');
});

test('cancel applies to any state the rule allows: pending and running cancelled, ended ones skipped', () => {
  const at = new Date(Date.parse(NOW) - 30000).toISOString();
  const pending = failed(1, { status: 'pending', completed_at: null, attempt: 0, retry_count: 0, worker_id: '', last_error: '' });
  const running = failed(2, { status: 'running', completed_at: null, lease_id: '5f0c1e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b', lease_expires_at: at, worker_id: 'w1' });
  const plan = planBulk({ op: 'cancel', mode: 'S3', candidates: [pending, running, failed(3)], now: NOW });
  assert.deepEqual(plan.items.map((i) => i.id), [pending.id, running.id]);
  assert.deepEqual(plan.skipped.map((s) => s.reason), ['it is failed: only waiting, pending or running tasks can be cancelled']);
  assert.equal(plan.summary, 'cancel 2 tasks: 2 GET + 2 PUT + 1 DELETE', 'a pending task loses its ready entry; a running one keeps its lease until its worker stops');
  const again = planBulk({ op: 'cancel', mode: 'S3', candidates: [{ ...running, cancel_requested: true }], now: NOW });
  assert.deepEqual(again.skipped.map((s) => s.reason), ['cancel would change nothing']);
});

test('a plan made by qo serve runs on the ids it planned', () => {
  const ans = { op: 'cancel', dry_run: true, done: ['a', 'b'], skipped: [{ id: 'c', status: 'completed', reason: 'completed: only waiting, pending or running tasks can be cancelled' }], failed: [], plan: 'cancel 2 tasks: 2 PUT + 2 DELETE (finding them took 1 LIST + 3 GET)', dollars: 0.00002 };
  const plan = serverPlan('cancel', { filter: { status: ['pending'] } }, ans);
  assert.deepEqual(plan.items, [{ id: 'a' }, { id: 'b' }]);
  assert.deepEqual(plan.server, { ids: ['a', 'b'] });
  assert.equal(plan.summary, '1 POST to qo serve, which plans: cancel 2 tasks: 2 PUT + 2 DELETE (finding them took 1 LIST + 3 GET)');
  assert.equal(plan.dollars, '$0.0000');
  assert.deepEqual(plan.skipped, [{ id: 'c', reason: ans.skipped[0].reason }]);
  const many = serverPlan('cancel', { filter: { status: ['pending'] } }, { ...ans, done: Array.from({ length: BULK_MAX_IDS + 1 }, (_, i) => `t${i}`) });
  assert.deepEqual(many.server, { filter: { status: ['pending'] } }, 'too many ids for one body: the filter again');
});

test('every failed task of a type: planned from the dead-letter keys alone', () => {
  const tasks = Array.from({ length: 3 }, (_, i) => failed(i));
  const entries = tasks.map((t) => deadEntryTask({ ...indexEntry(deadKey(t)), key: deadKey(t) }));
  assert.deepEqual(entries.map((e) => [e.id, e.status, e.task_type, e.completed_at]), tasks.map((t) => [t.id, 'failed', 'email', t.completed_at]));
  const plan = planBulk({ op: 'replay', mode: 'S3', candidates: entries, now: NOW, found: { s3: { LIST: 1 } } });
  assert.equal(plan.summary, 'replay 3 tasks: 3 GET + 6 PUT + 3 DELETE; finding them took 1 LIST');
  const partial = planBulk({ op: 'replay', mode: 'API', candidates: tasks, now: NOW, found: { api: { GET: 1 }, s3: { GET: 3 }, note: 'and its LISTs' }, partial: true });
  assert.match(partial.summary, /finding them took 1 GET to qo serve \(it made 3 GET and its LISTs\), and stopped before the end/);
});

test('the plan skips, saying why: not failed any more, listed twice', () => {
  const a = failed(1);
  const plan = planBulk({ op: 'replay', mode: 'S3', candidates: [a, a, failed(2, { status: 'pending', completed_at: null }), failed(3)], now: NOW });
  assert.deepEqual(plan.items.map((i) => i.id), [a.id, failed(3).id]);
  assert.deepEqual(plan.skipped.map((s) => s.reason), ['listed twice: acted on once', 'it is pending: only failed, cancelled or expired tasks can be replayed']);
  assert.equal(plan.summary, 'replay 2 tasks: 2 GET + 4 PUT + 2 DELETE');
  assert.equal(planBulk({ op: 'replay', mode: 'S3', candidates: [], now: NOW }).summary, 'replay 0 tasks: no request');
  assert.throws(() => planBulk({ op: 'requeue', mode: 'S3', candidates: [], now: NOW }), /unknown bulk action/);
  assert.equal(formatOps({ DELETE: 1, GET: 2, POST: 3 }), '3 POST + 2 GET + 1 DELETE');
});

test('runBulk: bounded concurrency, every item once, failures with their error', async () => {
  const items = Array.from({ length: 23 }, (_, i) => ({ id: `t${i}` }));
  let inFlight = 0;
  let most = 0;
  const seen = [];
  const reports = [];
  const progress = await runBulk(items, async (item) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, item.id.length));
    inFlight--;
    seen.push(item.id);
    if (item.id === 't7') throw new TransitionError('pending', 'replayed', 'pending', 'only failed, cancelled or expired tasks can be replayed');
    if (item.id === 't9') throw new Error('S3 503 SlowDown: reduce your request rate');
  }, { onProgress: (p) => reports.push(p.done) });
  assert.equal(most, BULK_CONCURRENCY);
  assert.deepEqual([...seen].sort(), items.map((i) => i.id).sort());
  assert.equal(progress.done, 23);
  assert.equal(progress.ok, 21);
  assert.deepEqual(progress.failed.map((f) => f.id), ['t7', 't9']);
  assert.match(progress.failed[0].error, /^changed meanwhile \(now pending\): left as it is/);
  assert.equal(progress.failed[1].error, 'S3 503 SlowDown: reduce your request rate');
  assert.deepEqual(reports, Array.from({ length: 23 }, (_, i) => i + 1), 'a report after each task');
  assert.equal(progress.stopped, false);
});

test('runBulk stops starting tasks once asked; those under way finish', async () => {
  const items = Array.from({ length: 40 }, (_, i) => ({ id: `t${i}` }));
  let stop = false;
  let started = 0;
  const progress = await runBulk(items, async () => {
    started++;
    await new Promise((r) => setTimeout(r, 1));
    if (started >= 10) stop = true;
  }, { concurrency: 3, shouldStop: () => stop });
  assert.equal(progress.stopped, true);
  assert.equal(progress.done, started, 'every task started finished');
  assert.ok(started >= 10 && started <= 12, `${started} started`);
  assert.equal(progress.notStarted, 40 - started);
});

test('describeFailure: an API refusal of a changed task', () => {
  assert.match(describeFailure(new Error('replay: invalid transition: pending -replayed-> pending: only failed, cancelled or expired tasks can be replayed')), /^changed meanwhile \(now pending\)/);
  assert.match(describeFailure(new Error('archive: invalid transition pending -> archived (event "archived"): only completed, failed, cancelled or expired tasks can be archived')),
    /^changed meanwhile \(now pending\): left as it is/, 'the Go wording, through qo serve');
  assert.equal(describeFailure(new Error('boom')), 'boom');
});

// The run uses the page's single action: the same conditional write, and
// a task that changed underneath is reported, not forced.
class FakeS3 {
  constructor() {
    this.objects = new Map();
    this.etags = new Map();
    this.n = 0;
    this.requests = { GET: 0, PUT: 0, DELETE: 0 };
  }
  now() { return new Date(NOW); }
  async get(key) {
    this.requests.GET++;
    return this.objects.has(key) ? { text: this.objects.get(key), etag: this.etags.get(key) } : null;
  }
  async put(key, text, { ifMatch } = {}) {
    this.requests.PUT++;
    if (ifMatch && this.etags.get(key) !== ifMatch) throw Object.assign(new Error('S3 412 PreconditionFailed'), { status: 412 });
    this.objects.set(key, text);
    this.etags.set(key, `"${++this.n}"`);
  }
  async del(key) {
    this.requests.DELETE++;
    this.objects.delete(key);
  }
  store(t) {
    this.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
    this.etags.set(taskKey(t.shard, t.id), `"${++this.n}"`);
    this.objects.set(deadKey(t), '');
  }
}

test('a bulk replay through the single action: the planned requests, and a task changed underneath is reported', async () => {
  const s3 = new FakeS3();
  const tasks = Array.from({ length: 12 }, (_, i) => failed(i));
  for (const t of tasks) s3.store(t);
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  const plan = planBulk({ op: 'replay', mode: 'S3', candidates: tasks, now: NOW });
  // Another operator replays one of them after the plan was made.
  const changed = tasks[5];
  await be.act('replay', changed.id, 1);
  const before = { ...s3.requests };
  const progress = await runBulk(plan.items, (item) => be.act('replay', item.id, 1));
  assert.equal(progress.ok, 11);
  assert.deepEqual(progress.failed.map((f) => f.id), [changed.id]);
  assert.match(progress.failed[0].error, /changed meanwhile \(now pending\)/);
  const made = Object.fromEntries(Object.entries(s3.requests).map(([op, n]) => [op, n - before[op]]));
  assert.deepEqual(made, { GET: 12, PUT: 22, DELETE: 11 }, 'the plan for 11 (2 PUT + 1 DELETE each), plus the GET of the changed one');
  for (const t of tasks) {
    const now = JSON.parse(s3.objects.get(taskKey(t.shard, t.id)));
    assert.equal(now.status, 'pending');
    assert.ok(s3.objects.has(readyKey(now)));
    assert.ok(!s3.objects.has(deadKey(t)));
  }
  assert.equal(JSON.parse(s3.objects.get(taskKey(changed.shard, changed.id))).rev, changed.rev + 1, 'written once, by the other operator');
});

test('every task of a filter: read page by page as the list does, at most BULK_FILTER_PAGES, with what it cost', async () => {
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = { requests: { LIST: 0, GET: 0 } };
  const asked = [];
  const pages = (last) => async ({ status, shard, cursor }) => {
    asked.push({ status, shard, cursor });
    be.s3.requests.LIST++;
    be.s3.requests.GET += 2;
    const n = Number(cursor || 0);
    return { tasks: [{ id: `a${n}` }, { id: `b${n}` }], next_cursor: n < last ? String(n + 1) : '' };
  };
  be.listTasks = pages(2);
  const small = await be.tasksInFilter({ status: 'pending', shard: '3' });
  assert.deepEqual(small.candidates.map((t) => t.id), ['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
  assert.deepEqual(asked, [{ status: 'pending', shard: '3', cursor: '' }, { status: 'pending', shard: '3', cursor: '1' }, { status: 'pending', shard: '3', cursor: '2' }]);
  assert.deepEqual(small.found, { s3: { LIST: 3, GET: 6 } });
  assert.equal(small.partial, false);
  be.listTasks = pages(1000);
  const big = await be.tasksInFilter({ status: 'pending' });
  assert.equal(big.candidates.length, 2 * BULK_FILTER_PAGES);
  assert.equal(big.partial, true, 'it stopped before the end: the plan says so');
});
