// Workflows as data (see queue/doc.go, "Workflows"): the record's keys,
// where the workflow stands from its steps' tasks, and the graph's layout.
// No DOM here: test/workflow.test.js checks the report against the one Go
// makes of the same objects (testdata/workflows.json), and app.js only
// draws it. Through the HTTP API the server sends the same report.

import {
  FORMAT_VERSION, WORKFLOWS_PREFIX, WORKFLOW_NAMES_PREFIX, WORKFLOW_ENDED, canAct, shardOf, endedAs, part, validPart,
} from './queue.js';

export { WORKFLOWS_PREFIX, WORKFLOW_NAMES_PREFIX, endedAs };

/** workflowKey is queue.WorkflowKey: workflows/{shard}/{id}.json. */
export function workflowKey(id, shardChars) {
  return `${WORKFLOWS_PREFIX}${shardOf(part('task_id', id), shardChars)}/${id}.json`;
}

/** workflowNameKey is queue.WorkflowNameKey: a name's latest workflow. */
export function workflowNameKey(name) {
  return `${WORKFLOW_NAMES_PREFIX}${part('workflow_name', name)}.json`;
}

/** parseWorkflowNameKey is the name of a workflow-names/{name}.json key, or null. */
export function parseWorkflowNameKey(key) {
  const name = key.startsWith(WORKFLOW_NAMES_PREFIX) && key.endsWith('.json') ? key.slice(WORKFLOW_NAMES_PREFIX.length, -'.json'.length) : null;
  return name !== null && validPart('workflow_name', name) ? name : null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** isWorkflowID tells an id from a name (names are never UUIDs' shape). */
export function isWorkflowID(ref) {
  return UUID.test(String(ref).toLowerCase());
}

function parse(key, text, what) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`malformed object ${key}: ${e.message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`malformed object ${key}: not ${what}`);
  return v;
}

/** decodeWorkflow checks a workflow record read at key. */
export function decodeWorkflow(key, text) {
  const w = parse(key, text, 'a workflow record');
  if (w.format !== FORMAT_VERSION || typeof w.id !== 'string' || !Array.isArray(w.steps) || w.steps.length === 0) {
    throw new Error(`malformed object ${key}: not a workflow record`);
  }
  if (!validPart('task_id', w.id)) throw new Error(`malformed object ${key}: bad workflow id ${JSON.stringify(w.id)}`);
  if (w.name && !validPart('workflow_name', w.name)) throw new Error(`malformed object ${key}: bad workflow name ${JSON.stringify(w.name)}`);
  for (const s of w.steps) {
    if (!s || typeof s.name !== 'string' || typeof s.task_id !== 'string') throw new Error(`malformed object ${key}: a step without name or task id`);
  }
  return w;
}

/** decodeWorkflowName reads a name pointer: the id of the latest workflow. */
export function decodeWorkflowName(key, text) {
  const n = parse(key, text, 'a workflow name');
  if (!validPart('task_id', n.workflow_id)) throw new Error(`malformed object ${key}: no workflow id, or a bad one`);
  return n.workflow_id;
}

/** depths is Workflow.Depths: 0 for a root, else one more than the deepest parent. */
export function depths(steps) {
  const idx = new Map(steps.map((s, i) => [s.name, i]));
  const depth = steps.map(() => 0);
  const state = steps.map(() => 0); // 0 new, 1 on the path, 2 done
  const visit = (i) => {
    if (state[i] !== 0) return depth[i]; // done, or a cycle in a hand-edited record
    state[i] = 1;
    for (const a of steps[i].after || []) {
      const j = idx.get(a);
      if (j !== undefined) depth[i] = Math.max(depth[i], visit(j) + 1);
    }
    state[i] = 2;
    return depth[i];
  };
  steps.forEach((_, i) => visit(i));
  return depth;
}

/**
 * report is WorkflowView.Report: the workflow w with its steps' tasks
 * (tasks[i] for w.steps[i], null when missing) and the problems by step
 * name, in the shape GET /api/workflows/{ref} answers.
 */
export function report(w, tasks, problems = {}) {
  const counts = {};
  let missing = 0;
  let running = 0;
  let failed = 0;
  let cancelled = 0;
  let endedAt = null;
  for (const t of tasks) {
    if (!t) {
      missing++;
      continue;
    }
    counts[t.status] = (counts[t.status] || 0) + 1;
    const st = endedAs(t);
    if (!st) running++;
    else if (st === 'failed' || st === 'expired') failed++;
    else if (st === 'cancelled') cancelled++;
    if (st && t.completed_at && (!endedAt || Date.parse(t.completed_at) > Date.parse(endedAt))) endedAt = t.completed_at;
  }
  let status = 'completed';
  if (missing) status = 'incomplete';
  else if (running) status = 'running';
  else if (failed) status = 'failed';
  else if (cancelled) status = 'cancelled';
  const depth = depths(w.steps);
  const steps = w.steps.map((s, i) => {
    const t = tasks[i];
    const r = {
      name: s.name, task_type: s.task_type, task_id: s.task_id, after: s.after || [], depth: depth[i],
      status: t ? t.status : '', attempt: t ? t.attempt : 0,
      updated_at: t ? t.updated_at : null, completed_at: t ? t.completed_at : null,
    };
    if (t && t.status === 'waiting') {
      const left = (t.parents || []).filter((p) => !p.done).length;
      r.waiting_for = `${left} of ${(t.parents || []).length} parents`;
    }
    if (t && t.last_error) r.last_error = t.last_error;
    if (t && t.cancel_reason) r.cancel_reason = t.cancel_reason;
    if (problems[s.name]) r.problem = problems[s.name];
    return r;
  });
  // Stable: steps of the same depth keep the file's order.
  steps.sort((a, b) => a.depth - b.depth);
  const out = {
    id: w.id, name: w.name, idempotency_key: w.idempotency_key, status, created_at: w.created_at,
    ended_at: WORKFLOW_ENDED.includes(status) ? endedAt : null, counts, steps,
  };
  if (!out.name) delete out.name;
  return out;
}

/** stepActions says what the workflow view offers on a step: a replay where the task's status allows one. */
export function stepActions(step) {
  return canAct('replay', step.status) ? ['replay'] : [];
}

/**
 * layout places a report's steps for drawing: one column per depth, the
 * steps of a column stacked in report order, and one edge per "after".
 * Sizes are in SVG units. Returns {width, height, nodes: [{step, x, y}],
 * edges: [{from, to, x1, y1, x2, y2}]} (from and to are step names).
 */
export function layout(rep, { nodeW = 168, nodeH = 44, gapX = 56, gapY = 14, pad = 8 } = {}) {
  const columns = [];
  for (const s of rep.steps) (columns[s.depth] ||= []).push(s);
  const at = new Map();
  const nodes = [];
  columns.forEach((col, d) => {
    (col || []).forEach((s, row) => {
      const n = { step: s, x: pad + d * (nodeW + gapX), y: pad + row * (nodeH + gapY) };
      nodes.push(n);
      at.set(s.name, n);
    });
  });
  const edges = [];
  for (const n of nodes) {
    for (const a of n.step.after) {
      const p = at.get(a);
      if (!p) continue;
      edges.push({ from: a, to: n.step.name, x1: p.x + nodeW, y1: p.y + nodeH / 2, x2: n.x, y2: n.y + nodeH / 2 });
    }
  }
  const rows = Math.max(0, ...columns.map((c) => (c ? c.length : 0)));
  return {
    width: pad * 2 + columns.length * nodeW + Math.max(0, columns.length - 1) * gapX,
    height: pad * 2 + rows * nodeH + Math.max(0, rows - 1) * gapY,
    nodeW, nodeH, nodes, edges,
  };
}
