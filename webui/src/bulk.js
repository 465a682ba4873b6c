// Bulk actions on tasks in any state: which tasks, what it costs, what is
// skipped and why (planBulk), and running the same single-task action on
// each with bounded concurrency, a progress report and a stop (runBulk).
// No DOM and no requests here (test/bulk.test.js): the action itself is
// the page's single-task one (backend.act), the conditional write qo
// replay and qo archive make.
import { applyOperator, indexChanges, TransitionError, FORMAT_VERSION, MAX_MS } from './queue.js';
import { cost, dollars } from './fleet.js';

/** BULK_OPS are the actions a bulk run can take. */
export const BULK_OPS = ['replay', 'archive', 'cancel'];
/** BULK_CONCURRENCY is how many tasks a bulk run acts on at once. */
export const BULK_CONCURRENCY = 4;
/** BULK_SCAN_PAGES bounds the LISTs of the dead-letter index a plan by type reads (1,000 keys each). */
export const BULK_SCAN_PAGES = 10;
/** BULK_FILTER_PAGES bounds the list pages a plan of every task in a filter reads. */
export const BULK_FILTER_PAGES = 40;
/** BULK_MAX_IDS bounds the ids one request to qo serve names (its body limit is 1 MiB). */
export const BULK_MAX_IDS = 20000;

/**
 * serverPlan is a plan made by qo serve (POST /api/tasks/bulk with
 * dry_run): the shape planBulk returns, plus server, the request that
 * runs it (the ids planned, or the filter when they are too many).
 */
export function serverPlan(op, req, ans) {
  const items = (ans.done || []).map((id) => ({ id }));
  const server = items.length <= BULK_MAX_IDS ? { ids: items.map((i) => i.id) } : req;
  return {
    op, mode: 'API', items, server, skipped: (ans.skipped || []).map((s) => ({ id: s.id, reason: s.reason })),
    summary: `1 POST to qo serve, which plans: ${ans.plan}`, dollars: dollars(ans.dollars || 0), partial: Boolean(ans.partial),
  };
}

/**
 * deadEntryTask is what a dead-letter key says of its task ({index:
 * 'dead', shard, type, id} from queue.indexEntry, plus the key): a failed
 * task of that type that failed at the time the key holds. Enough to
 * apply an action's rule for the plan; the run reads the task itself.
 */
export function deadEntryTask(entry) {
  const ms = MAX_MS - Number(entry.key.split('/')[1]);
  const at = new Date(ms).toISOString();
  return {
    format: FORMAT_VERSION, id: entry.id, shard: entry.shard, task_type: entry.type, status: 'failed', priority: 'normal',
    available_at: at, created_at: at, updated_at: at, completed_at: at, rev: 1, worker_id: '', lease_id: '', lease_expires_at: null,
  };
}

/**
 * actionRequests is what one action on task costs, from what the page's
 * single action does (backend.act): reading the bucket, a GET of the task,
 * a PUT of each index entry the new state needs, the PUT of the task (If-
 * Match), a DELETE of each entry of the old state; through qo serve, one
 * POST, and qo serve makes the same S3 requests (queue.Replay and
 * queue.Archive). It throws a TransitionError when the rule refuses the
 * action, and returns null when the action would change nothing.
 */
export function actionRequests(task, op, mode, now) {
  const next = applyOperator(task, op, 'from the web UI', '', now, 'plan');
  if (!next) return null;
  const idx = indexChanges(task, next);
  const s3 = { GET: 1, PUT: idx.put.length + 1, DELETE: idx.del.length };
  return mode === 'API' ? { api: { POST: 1 }, s3 } : { s3 };
}

const add = (sum, ops) => {
  for (const [op, n] of Object.entries(ops || {})) sum[op] = (sum[op] || 0) + n;
  return sum;
};

/** formatOps writes requests by kind: "50 GET + 100 PUT + 50 DELETE". */
export function formatOps(ops) {
  const order = ['POST', 'LIST', 'GET', 'PUT', 'DELETE'];
  const parts = Object.entries(ops).filter(([, n]) => n > 0)
    .sort(([a], [b]) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  return parts.length ? parts.map(([op, n]) => `${n} ${op}`).join(' + ') : 'no request';
}

/**
 * planBulk plans a bulk action: op on candidates, each a task as last read
 * (a checked selection) or as its dead-letter key tells it (deadEntryTask,
 * for every failed task of a type), in mode 'S3' or 'API' at time now
 * (ISO). It keeps each task once and skips, saying why, those the rule
 * refuses (no longer failed, say) and those it would not change. found is
 * what finding the candidates cost ({s3: {LIST: n}}; through qo serve also
 * api, its requests, and note, what else it made), for the summary; partial says the listing stopped
 * before the end. It returns {op, mode, items, skipped, perTask, s3, api,
 * summary, dollars}.
 */
export function planBulk({ op, mode, candidates, now, found = null, partial = false }) {
  if (!BULK_OPS.includes(op)) throw new Error(`unknown bulk action ${op}`);
  const items = [];
  const skipped = [];
  const seen = new Set();
  const s3 = {};
  const api = {};
  for (const t of candidates) {
    if (seen.has(t.id)) {
      skipped.push({ id: t.id, reason: 'listed twice: acted on once' });
      continue;
    }
    seen.add(t.id);
    let req;
    try {
      req = actionRequests(t, op, mode, now);
    } catch (e) {
      if (!(e instanceof TransitionError)) throw e;
      skipped.push({ id: t.id, reason: `it is ${t.status}: ${e.message.replace(/^.*: /, '')}` });
      continue;
    }
    if (!req) {
      skipped.push({ id: t.id, reason: `${op} would change nothing` });
      continue;
    }
    items.push({ id: t.id, shard: t.shard, type: t.task_type });
    add(s3, req.s3);
    add(api, req.api);
  }
  const n = items.length;
  const tasks = `${n} task${n === 1 ? '' : 's'}`;
  let summary = mode === 'API'
    ? `${op} ${tasks}: ${formatOps(api)} to qo serve, which makes ${formatOps(s3)}`
    : `${op} ${tasks}: ${formatOps(s3)}`;
  const total = add(add({}, s3), found?.s3);
  if (found) {
    const how = mode === 'API' ? `${formatOps(found.api)} to qo serve (it made ${formatOps(found.s3)}${found.note ? ` ${found.note}` : ''})` : formatOps(found.s3);
    summary += `; finding them took ${how}${partial ? ', and stopped before the end of the dead letters' : ''}`;
  }
  return { op, mode, items, skipped, s3, api, summary, dollars: dollars(cost(total)), perTask: n ? { ...s3 } : {} };
}

/**
 * describeFailure words an action's error for the progress list: a task
 * that changed underneath and no longer allows the action is reported as
 * such (the write was refused, nothing was forced).
 */
export function describeFailure(err) {
  const msg = String(err?.message ?? err);
  const m = /invalid transition:? (\w+) -/.exec(msg); // the page's rule, or qo serve's
  if (err?.code === 'invalid_transition' || m) return `changed meanwhile${m ? ` (now ${m[1]})` : ''}: left as it is (${msg})`;
  return msg;
}

/**
 * runBulk calls act(item) for every item, at most concurrency at a time,
 * and reports after each: {total, done, ok, failed: [{id, error}],
 * stopped}. Once shouldStop() says so, no further item starts (those
 * under way finish); stopped then says how many never started.
 */
export async function runBulk(items, act, { concurrency = BULK_CONCURRENCY, onProgress = () => {}, shouldStop = () => false } = {}) {
  const progress = { total: items.length, done: 0, ok: 0, failed: [], stopped: false, notStarted: 0 };
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      if (shouldStop()) {
        progress.stopped = true;
        return;
      }
      const item = items[next++];
      try {
        await act(item);
        progress.ok++;
      } catch (e) {
        progress.failed.push({ id: item.id, error: describeFailure(e) });
      }
      progress.done++;
      onProgress(progress);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
  progress.notStarted = items.length - next;
  if (progress.notStarted > 0) progress.stopped = true;
  return progress;
}
