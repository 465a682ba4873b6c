// Where the page reads and acts: straight on the bucket (S3Backend, the
// default) or through qo's HTTP API (ApiBackend). Both answer the same calls
// with the same shapes (the CLI's --json shapes).
import { S3 } from './s3.js';
import {
  TASKS_PREFIX, WORKERS_PREFIX, SCHEDULES_PREFIX, CONTROL_KEY, READY_PREFIX, LEASES_PREFIX, DEAD_PREFIX, LAYOUT_VERSION, LIST_WINDOW_MS,
  applyOperator, applyControl, countStats, indexChanges, indexKeys, parseIndexKey, decodeTask, taskKey, shards, shardOf, idFloor,
} from './queue.js';

const PAGE = 50;
/** MAX_INDEX_PAGES bounds the LISTs of one index per stats refresh, as queue.StatsOptions does. */
const MAX_INDEX_PAGES = 10;

/** The index each status is listed from; other statuses use the creation window. */
const INDEX_OF = { pending: READY_PREFIX, running: LEASES_PREFIX, failed: DEAD_PREFIX };

export class S3Backend {
  constructor(cfg) {
    this.s3 = new S3(cfg);
    this.kind = 'S3';
  }

  now() {
    return this.s3.now();
  }

  /** shards reads queue.json for the shard layout. */
  async shards() {
    const obj = await this.s3.get('queue.json');
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
  async listTasks({ shard = '', status = '', cursor = '' } = {}) {
    if (INDEX_OF[status]) return this.listIndex(INDEX_OF[status], status, shard, cursor);
    return this.listWindow(status, shard, cursor);
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

  async listIndex(root, status, shard, cursor) {
    const prefix = root === DEAD_PREFIX || !shard ? root : `${root}${shard}/`;
    const page = await this.s3.list(prefix, { startAfter: cursor, maxKeys: PAGE });
    const entries = page.keys.map(({ key }) => ({ key, ref: parseIndexKey(key) }))
      .filter((e) => e.ref && (!shard || e.ref.shard === shard));
    const { tasks, malformed } = await this.readTasks(entries.map((e) => taskKey(e.ref.shard, e.ref.id)));
    // An entry whose task moved on is stale: skipped (qo cleans it up).
    const shown = entries.map((e, i) => tasks[i]).filter((t, i) => t && t.status === status && indexKeys(t).includes(entries[i].key));
    const last = page.keys.at(-1)?.key ?? '';
    return { tasks: shown, malformed, next_cursor: page.next ? last : '' };
  }

  async listWindow(status, shard, cursor) {
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
          ids.push({ id, shard: s });
          startAfter = key;
        }
        if (done || page.keys.length === 0) return;
      }
    }));
    ids.sort((a, b) => (a.id < b.id ? 1 : -1));
    const pageIDs = ids.slice(0, PAGE);
    const { tasks, malformed } = await this.readTasks(pageIDs.map((x) => taskKey(x.shard, x.id)));
    const wanted = (t) => t && (status ? t.status === status : t.status !== 'archived');
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
    const load = async (inline, ref) => {
      if (!ref) return inline;
      const obj = await this.s3.get(ref.key, ref.version_id || undefined);
      if (!obj) throw new Error(`the offloaded payload ${ref.key} is gone`);
      return JSON.parse(obj.text);
    };
    return { input: await load(task.input, task.input_ref), output: await load(task.output, task.output_ref) };
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
      const next = applyControl(base, op, type, reason, this.now().toISOString());
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
   * (at most MAX_INDEX_PAGES each), one of the registry, and a GET per
   * worker whose heartbeat changed since the last call.
   */
  async stats() {
    const now = this.now();
    const [ready, leases, dead] = await Promise.all([READY_PREFIX, LEASES_PREFIX, DEAD_PREFIX].map((p) => this.listKeys(p, MAX_INDEX_PAGES)));
    const { records, malformed } = await this.readWorkers();
    return countStats({
      ready: ready.keys, leases: leases.keys, dead: dead.keys, partial: ready.partial || leases.partial || dead.partial,
      workers: records, malformed, now,
    });
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
      const obj = await this.s3.get(key);
      if (!obj) {
        cache.delete(key); // deregistered since the listing
        return;
      }
      try {
        const w = JSON.parse(obj.text);
        if (!(w.format === 1 && typeof w.worker_id === 'string')) throw new Error('not a qo record');
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
    const { records, malformed } = await this.readAll(SCHEDULES_PREFIX, (s) => s.format === 1 && typeof s.name === 'string');
    return { schedules: records.filter((s) => !s.deleted).sort((a, b) => a.name.localeCompare(b.name)), malformed };
  }

  async workers() {
    const { records, malformed } = await this.readWorkers();
    records.sort((a, b) => a.worker_id.localeCompare(b.worker_id));
    return { workers: records, malformed };
  }

  /** readAll reads every JSON object under prefix; ok says which are trusted. */
  async readAll(prefix, ok) {
    const out = [];
    const malformed = [];
    let token = '';
    do {
      const page = await this.s3.list(prefix, { token });
      await Promise.all(page.keys.map(async ({ key }) => {
        const obj = await this.s3.get(key);
        if (!obj) return;
        try {
          const v = JSON.parse(obj.text);
          if (!ok(v)) throw new Error('not a qo record');
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
   * the shared rules, write the index entries the new state needs, then the
   * task only if it did not change meanwhile (If-Match on its ETag), then
   * remove the entries of the old state (queue/doc.go, "Index entries are
   * written first": an entry that cannot be written stops the action with
   * the task untouched).
   */
  async act(op, id, shardChars, reason = 'from the web UI') {
    for (let tries = 0; tries < 5; tries++) {
      const { task, etag } = await this.getTask(id, shardChars);
      const next = applyOperator(task, op, reason, this.now(), crypto.randomUUID());
      if (!next) return task;
      const idx = indexChanges(task, next);
      await Promise.all(idx.put.map((k) => this.s3.put(k, '')));
      try {
        await this.s3.put(taskKey(next.shard, next.id), JSON.stringify(next), { ifMatch: etag });
      } catch (e) {
        // Refused: the entries written for this version are not needed.
        await Promise.allSettled(idx.put.map((k) => this.s3.del(k)));
        if (e.status === 412) continue; // changed meanwhile: apply again on the new version
        throw e;
      }
      await Promise.allSettled(idx.del.map((k) => this.s3.del(k)));
      return next;
    }
    throw new Error(`task ${id} kept changing; try again`);
  }
}

export class ApiBackend {
  constructor({ api, token }) {
    this.base = api.replace(/\/+$/, '');
    this.token = token;
    this.kind = 'API';
    this.offset = 0;
  }

  now() {
    return new Date(Date.now() + this.offset);
  }

  async call(method, path, body) {
    const headers = body ? { 'Content-Type': 'application/json' } : {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await fetch(this.base + path, { method, headers, body: body && JSON.stringify(body) });
    const date = res.headers.get('Date');
    if (date) this.offset = Date.parse(date) + 500 - Date.now();
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      const msg = data.error?.message || `${res.status} ${res.statusText}`;
      // A link copied from the address bar carries no token (by design):
      // the page needs the one qo serve printed, opened in the same tab.
      if (res.status === 401 && !this.token) throw new Error(`${msg} (open the link qo serve printed, which carries the API token, then this one in the same tab)`);
      throw new Error(msg);
    }
    return data;
  }

  async shards() {
    const st = await this.call('GET', '/api/stats');
    const n = Object.keys(st.by_shard || {}).reduce((m, s) => Math.max(m, s.length), 1);
    return shards(n);
  }

  async listTasks({ shard = '', status = '', cursor = '' } = {}) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (shard) q.set('shard', shard);
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    return this.call('GET', `/api/tasks?${q}`);
  }

  async getTask(id) {
    return { task: await this.call('GET', `/api/tasks/${id}`) };
  }

  async history(task) {
    return (await this.call('GET', `/api/tasks/${task.id}/history`)).events;
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

  async act(op, id) {
    switch (op) {
      case 'replay': return this.call('POST', `/api/tasks/${id}/replay`);
      case 'archive': return this.call('POST', `/api/tasks/${id}/archive`);
      case 'cancel': return this.call('POST', `/api/tasks/${id}/cancel`, { reason: 'from the web UI' });
    }
    throw new Error(`unknown action ${op}`);
  }
}
