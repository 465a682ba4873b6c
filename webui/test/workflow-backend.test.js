// Workflows read and acted on by the page's S3 backend, on an in-memory
// bucket holding the Go-written cases of testdata/workflows.json: the
// report it builds is the one GET /api/workflows/{ref} answers, at 1 GET
// per step (+1 record, +1 by name); "Cancel the rest" cancels children
// before parents; a replay puts the children it cancelled back to waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { S3Backend, forEachLimit, stepsToCancel } from '../src/backend.js';
import { taskKey, indexKeys, rewait, LAYOUT_VERSION } from '../src/queue.js';
import { workflowKey, workflowNameKey } from '../src/workflow.js';

const cases = JSON.parse(readFileSync(new URL('../testdata/workflows.json', import.meta.url)));
const byName = (name) => structuredClone(cases.find((c) => c.name === name));

class FakeS3 {
  constructor() {
    this.objects = new Map();
    this.counts = {};
    this.writes = [];
  }
  now() { return new Date('2030-01-02T03:05:00Z'); }
  count(op) { this.counts[op] = (this.counts[op] || 0) + 1; }
  async list(prefix, { maxKeys = 1000 } = {}) {
    this.count('LIST');
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    return { keys: keys.slice(0, maxKeys).map((key) => ({ key })), next: keys.length > maxKeys ? 'more' : '' };
  }
  async get(key) {
    this.count('GET');
    return this.objects.has(key) ? { text: this.objects.get(key), etag: `"${key}"` } : null;
  }
  async put(key, text) { this.count('PUT'); this.writes.push(key); this.objects.set(key, text); }
  async del(key) { this.count('DELETE'); this.objects.delete(key); }
}

function bucket(c) {
  const s3 = new FakeS3();
  s3.objects.set('queue.json', JSON.stringify({ format: LAYOUT_VERSION, shard_chars: 1 }));
  s3.objects.set(workflowKey(c.workflow.id, 1), JSON.stringify(c.workflow));
  s3.objects.set(workflowNameKey(c.workflow.name), JSON.stringify({ format: 1, name: c.workflow.name, workflow_id: c.workflow.id, created_at: c.workflow.created_at }));
  for (const t of c.tasks) {
    if (!t) continue;
    s3.objects.set(taskKey(t.shard, t.id), JSON.stringify(t));
    for (const k of indexKeys(t)) s3.objects.set(k, '');
  }
  const be = new S3Backend({ endpoint: 'http://127.0.0.1:1', bucket: 'b', region: 'us-east-1', accessKeyId: 'k', secretAccessKey: 's' });
  be.s3 = s3;
  return { be, s3 };
}

test('a workflow by name or id is the report Go makes, at 1 GET per step (+1 record, +1 by name)', async () => {
  for (const c of cases) {
    const { be, s3 } = bucket(c);
    await be.shards();
    // The cases give a missing task's problem as "missing"; the page says
    // what qo's ReadWorkflow says.
    for (const s of c.report.steps) {
      if (s.problem === 'missing') s.problem = `its task does not exist (the submit stopped half-way, or retention expired it); to finish a submit, submit the file again with idempotency key "${c.workflow.idempotency_key}"`;
    }
    s3.counts = {};
    assert.deepEqual(await be.workflow(c.workflow.name), c.report, c.name);
    assert.deepEqual(s3.counts, { GET: c.workflow.steps.length + 2 }, c.name);
    s3.counts = {};
    assert.deepEqual(await be.workflow(c.workflow.id.toUpperCase()), c.report, `${c.name} by id`);
    assert.deepEqual(s3.counts, { GET: c.workflow.steps.length + 1 });
  }
  const { be } = bucket(byName('submitted'));
  await assert.rejects(() => be.workflow('nope'), /no workflow named "nope"/);
  await assert.rejects(() => be.workflow('01b8e094-9888-7651-a176-51f5abc58399'), /workflow 01b8e094-9888-7651-a176-51f5abc58399 not found/);
});

test('the workflow names: one LIST and a GET per name', async () => {
  const { be, s3 } = bucket(byName('submitted'));
  s3.objects.set(workflowNameKey('broken'), '{');
  s3.counts = {};
  const r = await be.workflowNames();
  assert.deepEqual(r.workflows, [{ name: 'etl', id: byName('submitted').workflow.id, created_at: '2030-01-02T03:04:05Z' }]);
  assert.equal(r.malformed.length, 1);
  assert.deepEqual(s3.counts, { LIST: 1, GET: 2 });
});

test('Cancel the rest cancels the steps that have not ended, children before parents', async () => {
  const c = byName('running'); // extract completed, clean running, score pending, load waiting
  const { be, s3 } = bucket(c);
  await be.shards();
  s3.writes = [];
  assert.deepEqual(await be.cancelWorkflow('etl'), { cancelled: 3 });
  const stepOf = new Map(c.workflow.steps.map((s) => [s.task_id, s.name]));
  const order = s3.writes.filter((k) => k.startsWith('tasks/')).map((k) => stepOf.get(k.split('/')[2].slice(0, -5)));
  assert.equal(order[0], 'load', 'the deepest step first');
  assert.deepEqual(order.slice(1).sort(), ['clean', 'score']);
  const rep = await be.workflow('etl');
  const st = Object.fromEntries(rep.steps.map((s) => [s.name, s.status]));
  assert.deepEqual(st, { extract: 'completed', clean: 'running', score: 'cancelled', load: 'cancelled' }, 'a running step is asked to stop');
  assert.equal(JSON.parse(s3.objects.get(taskKey('0', c.workflow.steps[1].task_id))).cancel_requested, true);
  assert.ok(![...s3.objects.keys()].some((k) => k.startsWith('waiting/') || k.startsWith('ready/')), 'no index entry of a cancelled step is left');
  assert.deepEqual(stepsToCancel(rep).flat().map((s) => s.name), ['clean'], 'only the running one, already asked');
});

test('replaying a failed step puts the child it cancelled back to waiting', async () => {
  const c = byName('a step failed, another runs');
  // The child load was cancelled because score failed.
  const load = c.tasks[3];
  const score = c.tasks[2];
  Object.assign(load, { status: 'cancelled', cancel_requested: true, cancel_reason: `parent ${score.id} failed`, completed_at: '2030-01-02T03:04:30Z', rev: 3 });
  const { be, s3 } = bucket(c);
  await be.shards();
  const next = await be.act('replay', score.id, 1);
  assert.equal(next.status, 'pending');
  const child = JSON.parse(s3.objects.get(taskKey(load.shard, load.id)));
  assert.equal(child.status, 'waiting');
  assert.equal(child.last_event, 'replayed');
  assert.deepEqual(child.parents.map((p) => p.done ?? ''), ['', ''], 'it waits for both again (clean had not ended)');
  assert.ok(s3.objects.has(`waiting/${load.shard}/${load.id}`), 'with its waiting entry');
});

test('rewait leaves alone a child that ended for its own reasons or that another parent still blocks', () => {
  const P = '01b8e094-9888-7d93-ae38-c4d254308af2';
  const Q = '01b8e094-9888-7781-9ec6-2f4f79ae41a0';
  const base = {
    id: '01b8e094-9888-7452-88d1-4c4bc71a45dc', shard: 'c', status: 'cancelled', rev: 5, updated_at: '2030-01-02T03:04:05Z',
    parents: [{ id: P, done: 'failed' }, { id: Q, done: 'completed' }], cancel_reason: `parent ${P} failed`, cancel_requested: true,
    completed_at: '2030-01-02T03:04:05Z', output: null,
  };
  const now = new Date('2030-01-02T03:05:00Z');
  const next = rewait(base, P, now, 'r');
  assert.equal(next.status, 'waiting');
  assert.deepEqual(next.parents, [{ id: P }, { id: Q, done: 'completed' }]);
  assert.equal(next.cancel_reason, '');
  assert.equal(next.rev, 6);
  assert.equal(rewait({ ...base, cancel_reason: 'by hand' }, P, now, 'r'), null, 'cancelled by an operator');
  assert.equal(rewait(base, Q, now, 'r'), null, 'that parent completed');
  assert.equal(rewait({ ...base, status: 'pending' }, P, now, 'r'), null);
  const two = structuredClone(base);
  two.parents[1].done = 'cancelled';
  assert.equal(rewait(two, P, now, 'r'), null, 'another parent still blocks it');
  assert.equal(rewait({ ...two, on_parent_failure: 'run' }, P, now, 'r').status, 'waiting', 'unless it runs whatever its parents did');
});

test('forEachLimit runs every item, never more than the limit at once', async () => {
  let running = 0;
  let most = 0;
  const seen = [];
  await forEachLimit([...Array(40).keys()], 16, async (x, i) => {
    running++;
    most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, 1));
    seen[i] = x;
    running--;
  });
  assert.equal(most, 16);
  assert.deepEqual(seen, [...Array(40).keys()]);
});
