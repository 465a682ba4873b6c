// Where the page reads and acts: straight on the bucket (S3Backend, the
// default) or through qo's HTTP API (ApiBackend). Both answer the same calls
// with the same shapes (the CLI's --json shapes).
import { S3, S3Error } from './s3.js';
import {
  CONFIG_KEY, FORMAT_VERSION, TASKS_PREFIX, WORKERS_PREFIX, SCHEDULES_PREFIX, CONTROL_KEY, READY_PREFIX, LEASES_PREFIX, DEAD_PREFIX, WAITING_PREFIX, LAYOUT_VERSION, LIST_WINDOW_MS,
  INDEX_GRACE_MS, THROUGHPUT_PREFIX, DAY_HOURS, throughputKey, applyOperator, applyControl, pageActor, countStats, indexChanges, indexKeys, indexEntry, parseIndexKey, readyPartitionPrefix, readyShardHop, decodeTask, taskKey, shards, shardOf, idFloor,
  idempotencyKey, rewait, recordEnds, endedAs, hasEdges, decides, unrecorded, edgeKey, parseEdgeKey, EDGES_PREFIX, TransitionError, part, validPart, parseWorkerKey, parseScheduleKey, payloadKey,
  progressOf, workerKey,
} from './queue.js';
import {
  WORKFLOW_NAMES_PREFIX, workflowKey, workflowNameKey, decodeWorkflow, decodeWorkflowName, isWorkflowID, report, parseWorkflowNameKey,
} from './workflow.js';
import { SEARCH_LIMIT, TYPE_SCAN_PAGES, RESOLVE_PAGES, idShards, idSuffix } from './search.js';
import { BULK_SCAN_PAGES, BULK_FILTER_PAGES, deadEntryTask } from './bulk.js';
import { RateMeter } from './fleet.js';

const PAGE = 50;
/** MAX_INDEX_PAGES bounds the LISTs of one index per stats refresh, as queue.StatsOptions does. */
const MAX_INDEX_PAGES = 10;

/** The index each status is listed from; other statuses use the creation window. */
const INDEX_OF = { pending: READY_PREFIX, running: LEASES_PREFIX, failed: DEAD_PREFIX };

/** INDEXED are the statuses listed from an index, in full; the others from the creation window. */
export const INDEXED = Object.keys(INDEX_OF);
/** SEARCHED are the statuses a search by type shows: those whose index keys name the type. */
const SEARCHED = INDEXED;
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** WORKFLOW_CONCURRENCY bounds the requests a workflow read or action has in flight (queue's edgeParallelism). */
export const WORKFLOW_CONCURRENCY = 16;
/** WORKFLOW_NAMES_LIMIT: the names listed, one LIST page (queue.WorkflowNames). */
const WORKFLOW_NAMES_LIMIT = 1000;

/** MAX_PUT_ATTEMPTS bounds how often one task write is sent again after an unknown outcome (queue's maxPutAttempts). */
const MAX_PUT_ATTEMPTS = 3;
/** MAX_REBASES bounds how often an action is made again over other writers' versions (queue's maxRebases). */
const MAX_REBASES = 8;
/** EDGE_MS is how long the write of a parent's end on a child keeps starting over after conflicts (queue's tellChildren). */
const EDGE_MS = 2 * 60 * 1000;

/**
 * StaleError says a task write certainly did not land: the task is not
 * the version the change was based on. current is the version found (null
 * when the task is gone), etag its ETag.
 */
class StaleError extends Error {
  constructor(current, etag, cause) {
    super(`task changed concurrently: ${cause.message}`, { cause });
    this.current = current;
    this.etag = etag;
  }
}

/** ConflictError: the task kept changing under an action, which wrote nothing (queue.ErrConflict). */
export class ConflictError extends Error {
  constructor(id, current) {
    super(`task ${id} kept changing (now ${current.status} at rev ${current.rev}); try again`);
    this.code = 'conflict';
  }
}

/**
 * preconditionFailed tells a refused conditional PUT (s3store's
 * ErrPreconditionFailed): a 412, a 409 (conditional writes racing on one
 * key), or the 404 some servers answer If-Match on a missing key.
 */
function preconditionFailed(e) {
  return e instanceof S3Error && (e.status === 412 || e.status === 409 || (e.status === 404 && e.code !== 'NoSuchBucket'));
}

/**
 * definite tells a failure that certainly wrote nothing and that a
 * re-read cannot clarify (queue's isDefinite): credentials, a missing
 * bucket, a request the server does not support.
 */
function definite(e) {
  return e instanceof S3Error && (e.status === 401 || e.status === 403 || e.status === 501 || e.code === 'NoSuchBucket');
}

/** forEachLimit runs fn on every item, at most limit at a time. */
export async function forEachLimit(items, limit, fn) {
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

/** stepsToCancel lists a workflow report's steps that have not ended, deepest (children) first, by depth. */
export function stepsToCancel(rep) {
  const levels = new Map();
  for (const s of rep.steps) {
    if (!s.status || endedAs({ status: s.status }) || s.status === 'archived') continue;
    if (!levels.has(s.depth)) levels.set(s.depth, []);
    levels.get(s.depth).push(s);
  }
  return [...levels.keys()].sort((a, b) => b - a).map((d) => levels.get(d));
}

/** workflowRef checks a workflow id or name before it becomes part of a URL or key. */
function workflowRef(ref) {
  return isWorkflowID(ref) ? part('task_id', String(ref).toLowerCase()) : part('workflow_name', ref);
}

export class S3Backend {
  constructor(cfg) {
    this.s3 = new S3(cfg);
    this.kind = 'S3';
    // Who the page's writes name as their actor (queue's actor field).
    this.actor = pageActor(cfg.accessKeyId, globalThis.location?.host);
  }

  now() {
    return this.s3.now();
  }

  /** requests counts the S3 requests the page sent so far, by kind. */
  requests() {
    return { ...this.s3.requests };
  }

  /** shards reads queue.json for the shard layout. */
  async shards() {
    const obj = await this.s3.get(CONFIG_KEY);
    if (!obj) throw new Error('this bucket holds no qo queue (no queue.json): run qo init');
    const cfg = JSON.parse(obj.text);
    if ((cfg.format || 1) < LAYOUT_VERSION) {
      throw new Error(`this queue uses an older key layout (format ${cfg.format || 1}): stop its workers and run qo migrate`);
    }
    if (cfg.format > LAYOUT_VERSION) throw new Error(`this queue was written by a newer qo (format ${cfg.format}): use its web UI`);
    this.shardList = shards(cfg.shard_chars || 1);
    return this.shardList;
  }

  /**
   * listTasks returns one page. Pending, running and failed tasks come from
   * their indexes (one LIST, a GET per task shown); other statuses, and all
   * of them, from the tasks created in the last 24 hours, newest first (a
   * LIST per shard, a GET per task shown): never the whole history.
   */
  async listTasks({ shard = '', status = '', cursor = '', type = '' } = {}) {
    if (INDEX_OF[status]) return this.listIndex(INDEX_OF[status], status, shard, cursor, { type });
    return this.listWindow(status, shard, cursor, type);
  }

  async readTasks(keys) {
    const tasks = [];
    const malformed = [];
    await Promise.all(keys.map(async (key, i) => {
      const obj = await this.s3.get(key);
      if (!obj) return;
      try {
        tasks[i] = decodeTask(key, obj.text);
      } catch (e) {
        malformed.push({ key, error: e.message });
      }
    }));
    return { tasks, malformed };
  }

  /**
   * listIndex lists one page of an index: without a filter the prefix
   * holds, a LIST of limit keys; with one, LISTs of 1,000 keys (at most
   * TYPE_SCAN_PAGES) whose keys name the type and shard are kept until
   * limit of them are found (the key says both, so nothing is read for the
   * others); then a GET per task. The ready index is partitioned by type,
   * then shard: a type narrows the prefix, and a shard alone is listed
   * across the types, hopping past each type's other shards
   * (readyShardHop).
   */
  async listIndex(root, status, shard, cursor, { type = '', limit = PAGE } = {}) {
    const ready = root === READY_PREFIX;
    let prefix = root === DEAD_PREFIX || !shard ? root : `${root}${shard}/`;
    if (ready) prefix = !type ? root : shard ? readyPartitionPrefix(type, shard) : `${root}${type}/`;
    const scan = type || (ready && shard);
    const entries = [];
    let after = cursor;
    let more = false;
    for (let pages = 0; ; pages++) {
      if (pages === TYPE_SCAN_PAGES) {
        more = true;
        break;
      }
      const page = await this.s3.list(prefix, { startAfter: after, maxKeys: scan ? 1000 : limit });
      let i = 0;
      for (; i < page.keys.length && entries.length < limit; i++) {
        const { key } = page.keys[i];
        after = key;
        const ref = parseIndexKey(key);
        if (!ref || (shard && ref.shard !== shard) || (type && indexEntry(key)?.type !== type)) continue;
        entries.push({ key, ref });
      }
      more = i < page.keys.length || Boolean(page.next);
      if (ready && shard && i === page.keys.length) after = readyShardHop(after, shard);
      if (!more || !scan || entries.length >= limit) break;
    }
    const { tasks, malformed } = await this.readTasks(entries.map((e) => taskKey(e.ref.shard, e.ref.id)));
    // An entry whose task moved on is stale: skipped (qo cleans it up).
    const shown = entries.map((e, i) => tasks[i]).filter((t, i) => t && t.status === status && indexKeys(t).includes(entries[i].key));
    return { tasks: shown, malformed, next_cursor: more ? after : '' };
  }

  async listWindow(status, shard, cursor, type = '') {
    const now = this.now().getTime();
    const lo = idFloor(now - LIST_WINDOW_MS);
    const hi = cursor || idFloor(now + 60000);
    const ids = [];
    await Promise.all((shard ? [shard] : this.shardList || []).map(async (s) => {
      const prefix = `${TASKS_PREFIX}${s}/`;
      let startAfter = prefix + lo;
      for (;;) {
        const page = await this.s3.list(prefix, { startAfter });
        let done = !page.next;
        for (const { key } of page.keys) {
          const id = key.slice(prefix.length, -'.json'.length);
          if (id >= hi) {
            done = true;
            break;
          }
          startAfter = key;
          // A key qo did not write is not read (its id builds no key).
          if (key.endsWith('.json') && validPart('task_id', id) && shardOf(id, s.length) === s) ids.push({ id, shard: s });
        }
        if (done || page.keys.length === 0) return;
      }
    }));
    ids.sort((a, b) => (a.id < b.id ? 1 : -1));
    const pageIDs = ids.slice(0, PAGE);
    const { tasks, malformed } = await this.readTasks(pageIDs.map((x) => taskKey(x.shard, x.id)));
    const wanted = (t) => t && (status ? t.status === status : t.status !== 'archived') && (!type || t.task_type === type);
    return {
      tasks: tasks.filter(wanted), malformed, since: new Date(now - LIST_WINDOW_MS).toISOString(),
      next_cursor: ids.length > PAGE ? pageIDs.at(-1).id : '',
    };
  }

  async getTask(id, shardChars) {
    const key = taskKey(shardOf(id, shardChars), id);
    const obj = await this.s3.get(key);
    if (!obj) throw new Error(`task ${id} not found`);
    return { task: decodeTask(key, obj.text), etag: obj.etag };
  }

  /**
   * viewTask returns task id as queue's Get shows it: a waiting child of a
   * wide fan-in carries the parents' ends its edge objects hold and it does
   * not record yet (1 LIST more per 1,000 edges, only while two or more
   * parents are left); any other task as stored.
   */
  async viewTask(id, shardChars) {
    const { task } = await this.getTask(id, shardChars);
    if (task.status !== 'waiting' || !hasEdges(task) || (task.parents || []).filter((p) => !p.done).length < 2) return { task };
    const ends = unrecorded(task, (await this.listEdges(id)).ends);
    if (Object.keys(ends).length === 0) return { task };
    return { task: { ...task, parents: task.parents.map((p) => (Object.hasOwn(ends, p.id) ? { ...p, done: ends[p.id] } : p)) } };
  }

  /**
   * taskProgress returns a running task's progress (queue.progressOf) with
   * one GET of the registry entry of the worker its lease names; null when
   * not running, or the entry is gone or malformed.
   */
  async taskProgress(t) {
    const key = t?.status === 'running' && validPart('worker_id', t.worker_id) ? workerKey(t.worker_id) : '';
    if (!key) return null;
    const obj = await this.s3.get(key);
    if (!obj) return null;
    try {
      return progressOf(t, JSON.parse(obj.text));
    } catch {
      return null;
    }
  }

  /**
   * search finds tasks (a query of search.parseSearch) at a cost set by
   * what it shows (search.searchCost): a full id is a GET; an id prefix a
   * LIST of tasks/{shard}/{prefix} per shard (S3 matches the keys) and a
   * GET per task shown, oldest first; a type the pending, running and
   * failed tasks its index keys name (listIndex); an idempotency key a GET
   * of its marker and one of its task. It returns {tasks, more, malformed}
   * (more lists the statuses with more tasks for a type).
   */
  async search(q) {
    const list = this.shardList || (await this.shards());
    if (q.kind === 'type') {
      const parts = await Promise.all(SEARCHED.map((status) => this.listIndex(INDEX_OF[status], status, '', '', { type: q.type, limit: SEARCH_LIMIT })));
      return {
        tasks: parts.flatMap((p) => p.tasks), malformed: parts.flatMap((p) => p.malformed),
        more: SEARCHED.filter((st, i) => parts[i].next_cursor),
      };
    }
    let ids = [];
    let more = false;
    if (q.kind === 'key') {
      const marker = await this.s3.get(await idempotencyKey(q.type, q.key));
      if (marker) {
        let rec = null;
        try {
          rec = JSON.parse(marker.text);
        } catch {
          // reported below
        }
        if (!(rec?.format === FORMAT_VERSION && ID.test(rec.task_id))) return { tasks: [], more: false, malformed: [{ key: 'idempotency marker', error: 'not an idempotency record' }] };
        ids = [rec.task_id];
      }
    } else if (q.full) {
      ids = [q.prefix];
    } else {
      await Promise.all(idShards(q.prefix, list).map(async (shard) => {
        const dir = `${TASKS_PREFIX}${shard}/`;
        const page = await this.s3.list(dir + q.prefix, { maxKeys: SEARCH_LIMIT + 1 });
        for (const { key } of page.keys) {
          const id = key.slice(dir.length, -'.json'.length);
          if (ID.test(id) && shardOf(id, shard.length) === shard) ids.push(id);
        }
      }));
      if (!ids.length) ids = await this.findBySuffix(idSuffix(q.prefix.replace(/-/g, '')), list[0].length);
      ids.sort();
      more = ids.length > SEARCH_LIMIT;
      ids = ids.slice(0, SEARCH_LIMIT);
    }
    const n = list[0].length;
    const { tasks, malformed } = await this.readTasks(ids.map((id) => taskKey(shardOf(id, n), id)));
    return { tasks: tasks.filter(Boolean), more: more ? ['id'] : [], malformed };
  }

  /**
   * findBySuffix returns the ids that end with suffix (the short id a list
   * shows), as queue.ResolveID finds them: the end of a time-ordered id
   * holds its shard, so only that shard's ready, lease and waiting
   * entries, its tasks created in the list window and the newest dead
   * letters are listed, at most RESOLVE_PAGES LISTs each, whatever the
   * history.
   */
  async findBySuffix(suffix, n) {
    const hex = suffix.replace(/-/g, '');
    if (hex.length < n) return [];
    const shard = hex.slice(-n);
    const tasks = `${TASKS_PREFIX}${shard}/`;
    const fromKey = (key) => indexEntry(key)?.id;
    const places = [
      { prefix: READY_PREFIX, id: fromKey, hop: (key) => readyShardHop(key, shard) }, // every type's partition of the shard
      { prefix: `${LEASES_PREFIX}${shard}/`, id: fromKey },
      { prefix: `${WAITING_PREFIX}${shard}/`, id: fromKey },
      { prefix: DEAD_PREFIX, id: fromKey },
      { prefix: tasks, after: tasks + idFloor(this.now().getTime() - LIST_WINDOW_MS), id: (key) => key.slice(tasks.length, -'.json'.length) },
    ];
    const found = new Set();
    await Promise.all(places.map(async (p) => {
      let after = p.after || '';
      for (let i = 0; i < RESOLVE_PAGES; i++) {
        const page = await this.s3.list(p.prefix, { startAfter: after });
        for (const { key } of page.keys) {
          const id = p.id(key);
          if (id && ID.test(id) && id.endsWith(suffix)) found.add(id);
          after = key;
        }
        if (!page.next || !page.keys.length) return;
        if (p.hop) after = p.hop(after);
      }
    }));
    return [...found];
  }

  /**
   * deadOfType lists the dead letters of a type for a bulk action, from
   * the dead-letter keys alone (they name the type): a LIST per 1,000
   * entries, at most BULK_SCAN_PAGES (partial says it stopped there).
   */
  async deadOfType(type) {
    const candidates = [];
    let after = '';
    let lists = 0;
    let partial = false;
    for (;;) {
      if (lists === BULK_SCAN_PAGES) {
        partial = true;
        break;
      }
      const page = await this.s3.list(DEAD_PREFIX, { startAfter: after });
      lists++;
      for (const { key } of page.keys) {
        const e = indexEntry(key);
        if (e?.type === type) candidates.push(deadEntryTask({ ...e, key }));
        after = key;
      }
      if (!page.next || page.keys.length === 0) break;
    }
    return { candidates, found: { s3: { LIST: lists } }, partial };
  }

  /**
   * tasksInFilter lists the tasks of a filter ({status, shard, type}) for
   * a bulk action, page by page as the list does (listTasks), at most
   * BULK_FILTER_PAGES pages (partial says it stopped there). found is
   * what the listing cost.
   */
  async tasksInFilter({ status = '', shard = '', type = '' } = {}) {
    const before = this.requests();
    const candidates = [];
    let cursor = '';
    let pages = 0;
    let partial = false;
    do {
      if (pages === BULK_FILTER_PAGES) {
        partial = true;
        break;
      }
      const page = await this.listTasks({ status, shard, cursor, type });
      pages++;
      candidates.push(...page.tasks);
      cursor = page.next_cursor;
    } while (cursor);
    const after = this.requests();
    const s3 = Object.fromEntries(Object.entries(after).map(([op, n]) => [op, n - (before[op] || 0)]).filter(([, n]) => n > 0));
    return { candidates, found: { s3 }, partial };
  }

  /** history reads every version of a task, oldest first. */
  async history(task) {
    const key = taskKey(task.shard, task.id);
    const versions = (await this.s3.versions(key)).reverse();
    return Promise.all(versions.map(async (v) => {
      if (v.deleteMarker) return { event: 'deleted', at: v.lastModified, version_id: v.versionId, task: null };
      const obj = await this.s3.get(key, v.versionId);
      try {
        const t = decodeTask(key, obj.text);
        return { event: t.last_event || 'unknown', at: t.updated_at, status: t.status, worker_id: t.worker_id, attempt: t.attempt, rev: t.rev, version_id: v.versionId, task: t };
      } catch (e) {
        return { event: 'unknown', at: v.lastModified, version_id: v.versionId, error: e.message, task: null };
      }
    }));
  }

  /**
   * payloads returns a task's input and output, reading the ones stored in
   * their own object (input_ref, output_ref) at the version recorded.
   */
  async payloads(task) {
    const load = async (inline, ref, what) => {
      if (!ref) return inline;
      const key = payloadKey(task, ref, what);
      const obj = await this.s3.get(key, ref.version_id || undefined);
      if (!obj) throw new Error(`the offloaded payload ${key} is gone`);
      return JSON.parse(obj.text);
    };
    return { input: await load(task.input, task.input_ref, 'input'), output: await load(task.output, task.output_ref, 'output') };
  }

  /** control reads the pause switches (none stored: nothing paused). */
  async control() {
    const obj = await this.s3.get(CONTROL_KEY);
    return obj ? JSON.parse(obj.text) : { paused: false, paused_types: {} };
  }

  /**
   * setPause pauses or resumes a task type (the whole queue when type is
   * empty) the way qo pause and qo resume do: read control.json, apply the
   * shared rule, write it back only if it did not change meanwhile
   * (If-Match on its ETag, or create-only when there is none), and apply
   * again on the new version when it did.
   */
  async setPause(op, type, reason = 'from the web UI') {
    for (let tries = 0; tries < 5; tries++) {
      const obj = await this.s3.get(CONTROL_KEY);
      const base = obj ? JSON.parse(obj.text) : null;
      const next = applyControl(base, op, type, reason, this.now().toISOString(), this.actor);
      if (!next) return base;
      try {
        await this.s3.put(CONTROL_KEY, JSON.stringify(next), obj ? { ifMatch: obj.etag } : { ifNoneMatch: '*' });
        return next;
      } catch (e) {
        if (e.status === 412 || e.status === 409) continue; // another writer got there first
        throw e;
      }
    }
    throw new Error(`${op}: control.json kept changing; try again`);
  }

  /**
   * stats counts the queue as GET /api/stats does, from the index keys and
   * the heartbeats, reading no task: a LIST per 1,000 entries of each index
   * (ready, leases, waiting, dead)
   * (at most MAX_INDEX_PAGES each), one of the registry, and a GET per
   * worker whose heartbeat changed since the last call, and control.json
   * (the unserved types). The request rate is measured across calls.
   */
  async stats() {
    const now = this.now();
    const [ready, leases, waiting, dead] = await Promise.all([READY_PREFIX, LEASES_PREFIX, WAITING_PREFIX, DEAD_PREFIX].map((p) => this.listKeys(p, MAX_INDEX_PAGES)));
    const { records, malformed } = await this.readWorkers();
    const control = await this.control().catch(() => null);
    const hours = await this.readThroughput(now.getTime()).catch(() => []);
    this.meter ??= new RateMeter();
    return countStats({
      ready: ready.keys, leases: leases.keys, waiting: waiting.keys, dead: dead.keys,
      partial: ready.partial || leases.partial || waiting.partial || dead.partial, workers: records, malformed, now, control, meter: this.meter, hours,
    });
  }

  /**
   * readThroughput reads the monitor's rollup of the last DAY_HOURS hours
   * as inspect does: one LIST starting after the day's first hour, and a
   * GET of each hour object whose ETag changed since the last call.
   */
  async readThroughput(nowMs) {
    const cache = (this.hourCache ??= new Map());
    const page = await this.s3.list(THROUGHPUT_PREFIX, { startAfter: throughputKey(nowMs - (DAY_HOURS + 1) * 3600000) });
    const present = new Set(page.keys.map((k) => k.key));
    for (const key of cache.keys()) if (!present.has(key)) cache.delete(key);
    await Promise.all(page.keys.filter(({ key, etag }) => cache.get(key)?.etag !== etag || !etag).map(async ({ key, etag }) => {
      const obj = await this.s3.get(key);
      if (!obj) return cache.delete(key);
      try {
        const hour = JSON.parse(obj.text);
        if (hour.format !== FORMAT_VERSION || !Array.isArray(hour.minutes)) throw new Error('not a qo throughput hour');
        return cache.set(key, { etag, hour });
      } catch {
        return cache.delete(key); // malformed: skipped
      }
    }));
    return [...cache.values()].map((e) => e.hour);
  }

  /** listKeys lists the keys under prefix, at most maxPages pages; partial says there were more. */
  async listKeys(prefix, maxPages) {
    const keys = [];
    let token = '';
    for (let i = 0; i < maxPages; i++) {
      const page = await this.s3.list(prefix, { token });
      keys.push(...page.keys.map((k) => k.key));
      if (!page.next) return { keys, partial: false };
      token = page.next;
    }
    return { keys, partial: true };
  }

  /**
   * readWorkers reads the worker registry, keeping each record with the
   * ETag it was listed with: a heartbeat that did not change since the
   * last call is not read again.
   */
  async readWorkers() {
    const cache = (this.workerCache ??= new Map());
    const listed = [];
    let token = '';
    do {
      const page = await this.s3.list(WORKERS_PREFIX, { token });
      listed.push(...page.keys);
      token = page.next;
    } while (token);
    const present = new Set(listed.map((k) => k.key));
    for (const key of cache.keys()) if (!present.has(key)) cache.delete(key);
    await Promise.all(listed.filter(({ key, etag }) => cache.get(key)?.etag !== etag || !etag).map(async ({ key, etag }) => {
      const id = parseWorkerKey(key);
      if (id === null) {
        cache.set(key, { etag, error: { key, error: 'not a worker registry key (want workers/{worker id}.json): not read' } });
        return;
      }
      const obj = await this.s3.get(key);
      if (!obj) {
        cache.delete(key); // deregistered since the listing
        return;
      }
      try {
        const w = JSON.parse(obj.text);
        if (!(w.format === FORMAT_VERSION && typeof w.worker_id === 'string')) throw new Error('not a qo record');
        if (w.worker_id !== id) throw new Error(`the record says worker ${JSON.stringify(w.worker_id)}`);
        cache.set(key, { etag, record: w });
      } catch (e) {
        cache.set(key, { etag, error: { key, error: e.message } });
      }
    }));
    const records = [];
    const malformed = [];
    for (const e of cache.values()) {
      if (e.record) records.push(e.record);
      else malformed.push(e.error);
    }
    return { records, malformed };
  }

  /** schedules reads every live schedule. */
  async schedules() {
    const { records, malformed } = await this.readAll(SCHEDULES_PREFIX, parseScheduleKey, (s, name) => s.format === FORMAT_VERSION && s.name === name);
    return { schedules: records.filter((s) => !s.deleted).sort((a, b) => a.name.localeCompare(b.name)), malformed };
  }

  async workers() {
    const { records, malformed } = await this.readWorkers();
    records.sort((a, b) => a.worker_id.localeCompare(b.worker_id));
    return { workers: records, malformed };
  }

  /**
   * readAll reads every JSON object under prefix whose key parseKey reads
   * (others are reported, not read); ok(record, parsed) says which are
   * trusted.
   */
  async readAll(prefix, parseKey, ok) {
    const out = [];
    const malformed = [];
    let token = '';
    do {
      const page = await this.s3.list(prefix, { token });
      await Promise.all(page.keys.map(async ({ key }) => {
        const name = parseKey(key);
        if (name === null) {
          malformed.push({ key, error: 'not a key qo writes here: not read' });
          return;
        }
        const obj = await this.s3.get(key);
        if (!obj) return;
        try {
          const v = JSON.parse(obj.text);
          if (!ok(v, name)) throw new Error('not a qo record');
          out.push(v);
        } catch (e) {
          malformed.push({ key, error: e.message });
        }
      }));
      token = page.next;
    } while (token);
    return { records: out, malformed };
  }

  /**
   * act applies an operator action the way qo does: read the task, apply
   * the shared rules, write it (apply), and tell its children what a
   * cancel or a replay means for them (afterLanded). It returns the
   * version written, or the task as read when the action changes nothing.
   */
  async act(op, id, shardChars, reason = 'from the web UI') {
    const { next } = await this.operate(id, shardChars, (base, now, requestID) => applyOperator(base, op, reason, this.actor, now, requestID));
    return next;
  }

  /**
   * operate reads task id and writes the version make(base, now,
   * requestID) makes of it (null: nothing to write) with apply, as queue's
   * operate does. edge is for the write a parent's end makes on a child
   * (queue's operateEdge): parents ending at once all rebase onto the
   * child, so a ConflictError starts it over, for up to EDGE_MS. read
   * ({task, etag}) is the task as the caller just read it: the first
   * attempt starts from it rather than reading it again.
   */
  async operate(id, shardChars, make, { edge = false, read = null } = {}) {
    const started = Date.now();
    for (let first = read; ; first = null) {
      const { task, etag } = first || (await this.getTask(id, shardChars));
      try {
        return await this.apply(task, etag, make, shardChars);
      } catch (e) {
        if (!(edge && e instanceof ConflictError && Date.now() - started < EDGE_MS)) throw e;
      }
    }
  }

  /**
   * apply writes the version make makes of base (read with etag) in the
   * order queue's apply keeps (queue/doc.go, "Index entries are written
   * first", and "rev, attempt and request_id"):
   *
   *  1. PUT the entries the new version needs and base lacks; one that
   *     cannot be written stops the action with the task untouched;
   *  2. PUT the task, If-Match base's ETag (putTask settles an answer
   *     that was lost);
   *  3. once it certainly landed, DELETE the entries only base needed,
   *     then tell the task's children (afterLanded).
   *
   * When the task write's outcome stays unknown, every entry, old and new,
   * is left in place and the error says so. When it certainly did not land
   * (another writer's version is there), the change is made again on that
   * version with the same request id, and the entries this call wrote are
   * deleted once no version it writes needs them, except those the
   * current version needs. Returns {prev, next, etag}: next is prev when
   * the change writes nothing.
   */
  async apply(base, etag, make, shardChars) {
    const requestID = crypto.randomUUID();
    const written = []; // entries this call wrote, for versions that may not land
    for (let rebases = 0; ; rebases++) {
      let next;
      try {
        next = make(base, this.now(), requestID);
      } catch (e) {
        await this.dropEntries(written, base);
        throw e;
      }
      if (!next) {
        await this.dropEntries(written, base);
        return { prev: base, next: base, etag };
      }
      const idx = indexChanges(base, next);
      const entriesAt = this.now().getTime();
      for (const k of idx.put) {
        try {
          await this.s3.put(k, '');
        } catch (e) {
          throw new Error(`write index entry ${k}: ${e.message} (task ${base.id} not changed)`, { cause: e });
        }
        written.push(k);
      }
      let stored;
      try {
        stored = await this.putTask(next, etag, base.request_id);
      } catch (e) {
        // Not a StaleError: the outcome is unknown (or a refusal a re-read
        // cannot tell apart): every entry stays, readers sort them out.
        if (!(e instanceof StaleError)) throw e;
        if (!e.current) {
          await this.dropEntries(written, null);
          throw new Error(`task ${base.id} not found (it disappeared)`, { cause: e });
        }
        if (rebases >= MAX_REBASES) {
          await this.dropEntries(written, e.current);
          throw new ConflictError(base.id, e.current);
        }
        ({ current: base, etag } = e);
        continue;
      }
      const landed = stored.task;
      const after = indexChanges(base, landed);
      await this.dropEntries(written, landed);
      // An entry written long before its task landed is written again (a
      // reader may have found it stale meanwhile); one an earlier write of
      // this request wrote, too.
      const again = this.now().getTime() - entriesAt > INDEX_GRACE_MS / 2 ? after.put : after.put.filter((k) => !written.includes(k));
      await Promise.allSettled(again.map((k) => this.s3.put(k, '')));
      await Promise.allSettled(after.del.map((k) => this.s3.del(k)));
      await this.afterLanded(base, landed, shardChars);
      return { prev: base, next: landed, etag: stored.etag };
    }
  }

  /**
   * putTask writes next If-Match etag (the version whose request id is
   * prevRequestID) and settles an unknown outcome as queue's putTask does:
   * after any failure but a definite refusal, the task is re-read. If it
   * carries next's request id the write landed: {task, etag} of the
   * version stored. If it is still the base version and the failure was
   * not a refused condition (which may be the answer to a retry of a PUT
   * that had committed), the PUT is sent again, at most MAX_PUT_ATTEMPTS
   * times. If another version is there (or none), a StaleError says so:
   * the write certainly did not land. Otherwise (the re-read failed too)
   * the outcome stays unknown: an Error that says so.
   */
  async putTask(next, etag, prevRequestID) {
    const key = taskKey(next.shard, next.id);
    const body = JSON.stringify(next);
    for (let attempt = 1; ; attempt++) {
      let perr;
      try {
        return { task: next, etag: await this.s3.put(key, body, { ifMatch: etag }) };
      } catch (e) {
        perr = e;
      }
      if (definite(perr)) throw new Error(`write task ${next.id}: ${perr.message}`, { cause: perr });
      let obj;
      let cur = null;
      try {
        obj = await this.s3.get(key);
        if (obj) cur = decodeTask(key, obj.text);
      } catch (gerr) {
        throw new Error(`write task ${next.id}: outcome unknown: ${perr.message} (re-read failed: ${gerr.message}); its index entries are left in place, reload to see where it stands`, { cause: perr });
      }
      if (!cur) throw new StaleError(null, '', perr);
      if (cur.request_id === next.request_id) return { task: obj.text === body ? next : cur, etag: obj.etag };
      if (cur.request_id !== prevRequestID || preconditionFailed(perr)) throw new StaleError(cur, obj.etag, perr);
      // Still the base version: the write did not land; send it again.
      if (attempt >= MAX_PUT_ATTEMPTS) throw new Error(`write task ${next.id}: ${perr.message} (task not changed)`, { cause: perr });
    }
  }

  /**
   * dropEntries deletes entries this call wrote for a version that
   * certainly did not land, except those the current version (cur, null
   * when there is none) needs (queue's dropEntries). Best effort: an entry
   * left is stale, and its next reader removes it.
   */
  async dropEntries(written, cur) {
    const keep = cur ? indexKeys(cur) : [];
    await Promise.allSettled([...new Set(written)].filter((k) => !keep.includes(k)).map((k) => this.s3.del(k)));
  }

  /**
   * afterLanded does what a landed write owes the task's children, as
   * queue's afterLanded does: when the task has just ended (the page ends
   * a task only by cancelling it), its end is recorded on each waiting
   * child, whose on_parent_failure then cancels, fails or releases it (a
   * child that ends tells its own children in turn); when it was
   * replayed, the children that ended because of it wait for it again
   * (and theirs in turn). A GET and a conditional PUT per child (an end
   * on a wide child: see endOnChild), WORKFLOW_CONCURRENCY at a time,
   * index entries first. Best effort, as in Go: a child not updated is
   * left to the sweeper (SweepWaiting).
   */
  async afterLanded(prev, next, shardChars) {
    if (prev === next || !next.children?.length) return;
    const done = endedAs(next);
    let tell;
    if (done && done !== 'completed' && !endedAs(prev)) {
      tell = (child) => this.endOnChild(next, child, shardChars);
    } else if (next.last_event === 'replayed') {
      tell = (child) => this.operate(child, shardChars, (t, now, requestID) => rewait(t, next.id, now, requestID));
    } else {
      return;
    }
    await forEachLimit(next.children, WORKFLOW_CONCURRENCY, async (child) => {
      try {
        await tell(child);
      } catch (e) {
        console.warn(`task ${next.id}: its child ${child} was not updated (qo's sweeper will): ${e.message}`);
      }
    });
  }

  /**
   * endOnChild tells waiting child childID that parent ended, as queue's
   * endOnChild does (queue/doc.go, "Dependencies"). A child with at most
   * EDGE_FAN_IN parents, or one this end decides (its last parent, or one
   * that decides by on_parent_failure), gets the end written on it (1 GET
   * + 1 PUT). On a wider one the end is an edge object (1 PUT of an empty
   * object), then the child's edges are listed (1 LIST) and the child read
   * again (1 GET): when the ends found there decide it, one write records
   * them all. Every writer of an end lists the edges after its write and
   * every writer of an edge reads the child after writing it, so the last
   * end is never left unseen, whichever writer (a worker, qo, the page)
   * makes it.
   */
  async endOnChild(parent, childID, shardChars) {
    const st = endedAs(parent);
    const read = await this.getTask(childID, shardChars);
    const base = read.task;
    const p = (base.parents || []).find((x) => x.id === parent.id);
    if (base.status !== 'waiting' || !p || p.done) return;
    const ends = { [parent.id]: st };
    if (!hasEdges(base) || decides(base, ends)) {
      await this.recordOnChild(childID, shardChars, ends, read);
      return;
    }
    await this.s3.put(edgeKey(childID, parent.id, st), '');
    const edges = await this.listEdges(childID);
    const cur = await this.getTask(childID, shardChars);
    if (cur.task.status !== 'waiting') return;
    await this.settleEdges(childID, shardChars, cur.task, cur.etag, edges);
  }

  /**
   * recordOnChild records ends on waiting child childID (as read: read)
   * as queue's recordEnds does; then, on a wide child, lists its edges:
   * when the write decided it, its edge objects are removed (it records
   * those ends itself now); while it waits, the ends other parents left
   * there are recorded when they decide it (settleEdges).
   */
  async recordOnChild(childID, shardChars, ends, read) {
    const { prev, next } = await this.operate(childID, shardChars, (t, now, requestID) => recordEnds(t, ends, now, requestID), { edge: true, read });
    if (prev === next || !hasEdges(next)) return;
    const edges = await this.listEdges(childID);
    if (next.status !== 'waiting') {
      await this.dropEdges(edges.keys);
      return;
    }
    await this.settleEdges(childID, shardChars, next, '', edges);
  }

  /**
   * settleEdges records the ends edges hold on waiting child t (as read
   * with etag, or '' to read it again before writing) when they decide
   * it, in one write, then removes the edge objects (queue's
   * settleEdges).
   */
  async settleEdges(childID, shardChars, t, etag, edges) {
    const more = unrecorded(t, edges.ends);
    if (!Object.keys(more).length || !decides(t, more)) return;
    const read = etag ? { task: t, etag } : null;
    const { next } = await this.operate(childID, shardChars, (c, now, requestID) => recordEnds(c, more, now, requestID), { edge: true, read });
    if (next.status !== 'waiting') await this.dropEdges(edges.keys);
  }

  /**
   * listEdges lists the edge objects of child childID (1 LIST per 1,000):
   * {ends: {parent id: status}, keys}. A key qo did not write is reported
   * and skipped. A parent with two edges (replayed after it ended) counts
   * as completed if one says so, else as the first (queue's listEdges).
   */
  async listEdges(childID) {
    const ends = {};
    const keys = [];
    let token = '';
    do {
      const page = await this.s3.list(`${EDGES_PREFIX}${childID}/`, { token });
      for (const { key } of page.keys) {
        const e = parseEdgeKey(key);
        if (!e || e.child !== childID) {
          console.warn(`skipping a malformed edge object: ${key}`);
          continue;
        }
        keys.push(key);
        if (!Object.hasOwn(ends, e.parent) || (ends[e.parent] !== 'completed' && e.status === 'completed')) ends[e.parent] = e.status;
      }
      token = page.next;
    } while (token);
    return { ends, keys };
  }

  /**
   * dropEdges removes edge objects a write recorded on their child (best
   * effort, as in Go: one left behind is ignored once the child records
   * its parent's end).
   */
  async dropEdges(keys) {
    await forEachLimit(keys, WORKFLOW_CONCURRENCY, async (key) => {
      try {
        await this.s3.del(key);
      } catch (e) {
        console.warn(`edge object ${key} not removed: ${e.message}`);
      }
    });
  }

  /**
   * workflow reads a workflow by id or name as GET /api/workflows/{ref}
   * answers it: a GET of the record (and one of the name before), then a
   * GET per step's task, WORKFLOW_CONCURRENCY at a time; a task missing or
   * malformed is the step's problem.
   */
  async workflow(ref) {
    const n = (this.shardList || (await this.shards()))[0].length;
    let id = workflowRef(ref);
    if (!isWorkflowID(ref)) {
      const obj = await this.s3.get(workflowNameKey(ref));
      if (!obj) throw new Error(`no workflow named "${ref}" (the list of workflows shows the names)`);
      id = decodeWorkflowName(workflowNameKey(ref), obj.text);
    }
    const key = workflowKey(id, n);
    const obj = await this.s3.get(key);
    if (!obj) throw new Error(`workflow ${id} not found`);
    const w = decodeWorkflow(key, obj.text);
    const tasks = w.steps.map(() => null);
    const problems = {};
    await forEachLimit(w.steps, WORKFLOW_CONCURRENCY, async (step, i) => {
      if (!validPart('task_id', step.task_id)) {
        // Reported and skipped: no key is built from it, nothing is sent.
        problems[step.name] = `its task id ${JSON.stringify(step.task_id)} is not a task id: the step is skipped (the record ${key} was not written by qo)`;
        return;
      }
      const tk = taskKey(shardOf(step.task_id, n), step.task_id);
      const got = await this.s3.get(tk);
      if (!got) {
        problems[step.name] = `its task does not exist (the submit stopped half-way, or retention expired it); to finish a submit, submit the file again with idempotency key ${JSON.stringify(w.idempotency_key)}`;
        return;
      }
      try {
        tasks[i] = decodeTask(tk, got.text);
      } catch (e) {
        problems[step.name] = `its task object is malformed: ${e.message}`;
      }
    });
    return report(w, tasks, problems);
  }

  /** workflowRecordName reads a workflow's name off its record (1 GET). */
  async workflowRecordName(id) {
    const key = workflowKey(id, (this.shardList || (await this.shards()))[0].length);
    const obj = await this.s3.get(key);
    return obj ? decodeWorkflow(key, obj.text).name || '' : '';
  }

  /**
   * workflowNames lists the workflow names with the latest workflow of
   * each, as GET /api/workflows: one LIST page of workflow-names/ (the
   * first 1,000) and a GET per name.
   */
  async workflowNames() {
    const page = await this.s3.list(WORKFLOW_NAMES_PREFIX, { maxKeys: WORKFLOW_NAMES_LIMIT });
    const out = [];
    const malformed = [];
    await forEachLimit(page.keys, WORKFLOW_CONCURRENCY, async ({ key }, i) => {
      const name = parseWorkflowNameKey(key);
      if (name === null) {
        malformed.push({ key, error: 'not a workflow name key: not read' });
        return;
      }
      const obj = await this.s3.get(key);
      if (!obj) return;
      try {
        const rec = JSON.parse(obj.text);
        if (rec.name !== name) throw new Error(`the record says name ${JSON.stringify(rec.name)}`);
        out[i] = { name: rec.name, id: decodeWorkflowName(key, obj.text), created_at: rec.created_at };
      } catch (e) {
        malformed.push({ key, error: e.message });
      }
    });
    return { workflows: out.filter(Boolean), malformed, more: Boolean(page.next) };
  }

  /**
   * cancelWorkflow cancels every step that has not ended with the page's
   * single-task cancel, the deepest steps first (children before their
   * parents, so each keeps the operator's reason); a step that ended
   * meanwhile is left as it is. Returns {cancelled}.
   */
  async cancelWorkflow(ref, reason = 'from the web UI') {
    const rep = await this.workflow(ref);
    const n = this.shardList[0].length;
    let cancelled = 0;
    const errors = [];
    for (const level of stepsToCancel(rep)) {
      await forEachLimit(level, WORKFLOW_CONCURRENCY, async (s) => {
        try {
          await this.act('cancel', s.task_id, n, reason);
          cancelled++;
        } catch (e) {
          if (!(e instanceof TransitionError)) errors.push(`step ${s.name}: ${e.message}`);
        }
      });
    }
    if (errors.length) throw new Error(`cancelled ${cancelled}; ${errors.join('; ')}`);
    return { cancelled };
  }
}

export class ApiBackend {
  constructor({ api, token }) {
    this.base = api.replace(/\/+$/, '');
    this.token = token;
    this.kind = 'API';
    this.offset = 0;
    this.sent = {};
  }

  now() {
    return new Date(Date.now() + this.offset);
  }

  /** requests counts the requests the page sent to qo serve, by method. */
  requests() {
    return { ...this.sent };
  }

  async call(method, path, body) {
    this.sent[method] = (this.sent[method] || 0) + 1;
    const headers = body ? { 'Content-Type': 'application/json' } : {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await fetch(this.base + path, { method, headers, body: body && JSON.stringify(body) });
    const date = res.headers.get('Date');
    if (date) this.offset = Date.parse(date) + 500 - Date.now();
    // qo serve --readonly says so on every answer: the page offers no write.
    this.readOnly = res.headers.get('X-Qo-Read-Only') === 'true';
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const msg = data.error?.message || `${res.status} ${res.statusText}`;
      // A link copied from the address bar carries no token (by design):
      // the page needs a session, which a link qo serve prints opens once.
      if (res.status === 401 && !this.token) throw new Error(`${msg}: this browser holds no session; open a new link from qo serve (its one-time code opens one; POST /api/login-codes with the token makes another)`);
      throw new Error(msg);
    }
    return data;
  }

  async shards() {
    const st = await this.call('GET', '/api/stats');
    const n = Object.keys(st.by_shard || {}).reduce((m, s) => Math.max(m, s.length), 1);
    return shards(n);
  }

  async listTasks({ shard = '', status = '', cursor = '', type = '' } = {}) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (shard) q.set('shard', shard);
    if (type) q.set('type', type);
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    return this.call('GET', `/api/tasks?${q}`);
  }

  async getTask(id) {
    return { task: await this.call('GET', `/api/tasks/${part('task_id', id)}`) };
  }

  /** viewTask: GET /api/tasks/{id} already carries the ends of a wide fan-in's edges. */
  async viewTask(id) {
    return this.getTask(id);
  }

  async history(task) {
    return (await this.call('GET', `/api/tasks/${part('task_id', task.id)}/history`)).events;
  }

  /** taskProgress: GET /api/tasks/{id} already carries a running task's progress. */
  async taskProgress(t) {
    return t?.progress ?? null;
  }

  /**
   * search: a type's pending, running and failed tasks from GET
   * /api/tasks (one request per status); an id prefix or an idempotency
   * key from GET /api/search.
   */
  async search(q) {
    if (q.kind === 'type') {
      const pages = await Promise.all(SEARCHED.map((status) => this.call('GET', `/api/tasks?${new URLSearchParams({ status, type: q.type, limit: String(SEARCH_LIMIT) })}`)));
      return {
        tasks: pages.flatMap((p) => p.tasks), malformed: pages.flatMap((p) => p.malformed || []),
        more: SEARCHED.filter((st, i) => pages[i].next_cursor),
      };
    }
    const params = q.kind === 'key' ? { type: q.type, idempotency_key: q.key } : { id_prefix: q.prefix, limit: String(SEARCH_LIMIT) };
    const r = await this.call('GET', `/api/search?${new URLSearchParams(params)}`);
    return { tasks: r.tasks, more: r.more ? ['id'] : [], malformed: [] };
  }

  /**
   * deadOfType lists the dead letters of a type for a bulk action: pages
   * of GET /api/dead?type= (1,000 tasks each, at most BULK_SCAN_PAGES);
   * qo serve reads each task listed.
   */
  async deadOfType(type) {
    const candidates = [];
    let cursor = '';
    let calls = 0;
    let partial = false;
    do {
      if (calls === BULK_SCAN_PAGES) {
        partial = true;
        break;
      }
      const q = new URLSearchParams({ type, limit: '1000' });
      if (cursor) q.set('cursor', cursor);
      const page = await this.call('GET', `/api/dead?${q}`);
      calls++;
      candidates.push(...page.tasks);
      cursor = page.next_cursor;
    } while (cursor);
    return { candidates, found: { api: { GET: calls }, s3: { GET: candidates.length }, note: 'and its LISTs of the dead-letter index' }, partial };
  }

  async workers() {
    const w = await this.call('GET', '/api/workers');
    return { workers: w.workers, malformed: [] };
  }

  /** payloads: the API returns offloaded payloads already loaded. */
  async payloads(task) {
    if (task.payload_error) throw new Error(task.payload_error);
    return { input: task.input, output: task.output };
  }

  async control() {
    return this.call('GET', '/api/control');
  }

  /** stats: the API's counts (reused by qo serve for 2 s whoever asks). */
  async stats() {
    return this.call('GET', '/api/stats');
  }

  async setPause(op, type, reason = 'from the web UI') {
    if (op !== 'pause' && op !== 'resume') throw new Error(`unknown action ${op}`);
    return this.call('POST', `/api/${op}`, op === 'pause' ? { type, reason } : { type });
  }

  async schedules() {
    return this.call('GET', '/api/schedules');
  }

  /** workflow: GET /api/workflows/{ref} (qo serve reads the record and a GET per step). */
  async workflow(ref) {
    return this.call('GET', `/api/workflows/${workflowRef(ref)}`);
  }

  /** workflowRecordName: the API has no cheaper read of a workflow's name than its report. */
  async workflowRecordName(id) {
    return (await this.workflow(id)).name || '';
  }

  /** workflowNames: GET /api/workflows. */
  async workflowNames() {
    const r = await this.call('GET', '/api/workflows');
    return { workflows: r.workflows || [], malformed: [] };
  }

  /** cancelWorkflow: POST /api/workflows/{ref}/cancel. */
  async cancelWorkflow(ref, reason = 'from the web UI') {
    return this.call('POST', `/api/workflows/${workflowRef(ref)}/cancel`, { reason });
  }

  /**
   * bulk: POST /api/tasks/bulk, the queue's bulk action in qo serve: op on
   * the tasks named (ids) or found (filter: {status: [...], type, shard}),
   * each with the single-task conditional write; dryRun plans only. The
   * answer says what was (or would be) done, skipped and why, failed, and
   * the plan with its request cost.
   */
  async bulk(op, { ids, filter }, dryRun) {
    const body = { op, dry_run: Boolean(dryRun) };
    if (ids) body.ids = ids.map((id) => part('task_id', id));
    else body.filter = filter;
    if (op === 'cancel') body.reason = 'from the web UI';
    return this.call('POST', '/api/tasks/bulk', body);
  }

  /** scheduleAction: enable, disable, trigger or delete a schedule, as qo schedule does. */
  async scheduleAction(op, name) {
    const path = `/api/schedules/${encodeURIComponent(part('schedule_name', name))}`;
    switch (op) {
      case 'enable': case 'disable': case 'trigger': return this.call('POST', `${path}/${op}`);
      case 'delete': return this.call('DELETE', path);
    }
    throw new Error(`unknown schedule action ${op}`);
  }

  async act(op, id) {
    part('task_id', id);
    switch (op) {
      case 'replay': return this.call('POST', `/api/tasks/${id}/replay`);
      case 'archive': return this.call('POST', `/api/tasks/${id}/archive`);
      case 'cancel': return this.call('POST', `/api/tasks/${id}/cancel`, { reason: 'from the web UI' });
    }
    throw new Error(`unknown action ${op}`);
  }
}
