// The workflow view's data: the report the page builds from the record and
// the tasks in direct-to-S3 mode must be the one Go builds
// (webui/testdata/workflows.json, written by go test ./webui), and the
// graph's layout must put every step in its column with its edges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  report, layout, depths, endedAs, workflowKey, workflowNameKey, decodeWorkflow, decodeWorkflowName, isWorkflowID, stepActions,
} from '../src/workflow.js';

const cases = JSON.parse(readFileSync(new URL('../testdata/workflows.json', import.meta.url)));

for (const c of cases) {
  test(`report: ${c.name}`, () => {
    const problems = {};
    for (const s of c.report.steps) if (s.problem) problems[s.name] = s.problem;
    assert.deepEqual(report(c.workflow, c.tasks, problems), c.report);
  });
}

test('the cases cover every workflow status but completed', () => {
  const seen = new Set(cases.map((c) => c.report.status));
  for (const s of ['incomplete', 'running', 'failed', 'cancelled']) assert.ok(seen.has(s), s);
});

test('keys are the Go layout', () => {
  const id = '01b8e094-9888-7651-a176-51f5abc58307';
  assert.equal(workflowKey(id, 1), `workflows/7/${id}.json`);
  assert.equal(workflowKey(id, 2), `workflows/07/${id}.json`);
  assert.equal(workflowNameKey('nightly-etl'), 'workflow-names/nightly-etl.json');
  assert.ok(isWorkflowID(id));
  assert.ok(!isWorkflowID('nightly-etl'));
});

test('malformed records and names are refused with the key named', () => {
  assert.throws(() => decodeWorkflow('workflows/7/x.json', '{'), /malformed object workflows\/7\/x.json/);
  assert.throws(() => decodeWorkflow('k', '{"format": 1, "id": "x", "steps": []}'), /not a workflow record/);
  assert.throws(() => decodeWorkflow('k', '{"format": 1, "id": "x", "steps": [{"name": "a", "task_id": "x"}]}'), /bad workflow id "x"/);
  const id = '0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b';
  assert.throws(() => decodeWorkflow('k', `{"format": 1, "id": "${id}", "steps": [{"name": 3}]}`), /a step without name/);
  assert.throws(() => decodeWorkflow('k', `{"format": 1, "id": "${id}", "name": "../x", "steps": [{"name": "a", "task_id": "x"}]}`), /bad workflow name/);
  assert.throws(() => decodeWorkflowName('k', '[]'), /not a workflow name/);
  assert.throws(() => decodeWorkflowName('k', '{"workflow_id": "0/../queue.json"}'), /bad one/);
  assert.equal(decodeWorkflowName('k', `{"workflow_id": "${id}"}`), id);
});

test('depth is the longest path from a root, even in a diamond', () => {
  const steps = [
    { name: 'a' }, { name: 'b', after: ['a'] }, { name: 'c', after: ['b'] }, { name: 'd', after: ['a', 'c'] },
  ];
  assert.deepEqual(depths(steps), [0, 1, 2, 3]);
  assert.deepEqual(depths([{ name: 'x', after: ['y'] }, { name: 'y', after: ['x'] }]).length, 2, 'a cycle does not hang');
});

test('an archived task ended as what it was', () => {
  assert.equal(endedAs({ status: 'archived', last_error: 'boom' }), 'failed');
  assert.equal(endedAs({ status: 'archived', cancel_requested: true }), 'cancelled');
  assert.equal(endedAs({ status: 'archived' }), 'completed');
  assert.equal(endedAs({ status: 'waiting' }), null);
});

test('layout: one column per depth, an edge per parent, nothing overlaps', () => {
  const rep = cases.find((c) => c.name === 'running').report;
  const l = layout(rep, { nodeW: 100, nodeH: 20, gapX: 10, gapY: 5, pad: 0 });
  assert.equal(l.nodes.length, rep.steps.length);
  assert.deepEqual(l.nodes.map((n) => [n.step.name, n.x, n.y]), [
    ['extract', 0, 0], ['clean', 110, 0], ['score', 110, 25], ['load', 220, 0],
  ]);
  assert.deepEqual(l.edges.map((e) => `${e.from}>${e.to}`), ['extract>clean', 'extract>score', 'clean>load', 'score>load']);
  assert.equal(l.width, 320);
  assert.equal(l.height, 45);
  for (const e of l.edges) assert.ok(e.x2 > e.x1, 'edges go left to right');
});

test('a failed, cancelled or expired step can be replayed; others not', () => {
  assert.deepEqual(stepActions({ status: 'failed' }), ['replay']);
  assert.deepEqual(stepActions({ status: 'running' }), []);
});
