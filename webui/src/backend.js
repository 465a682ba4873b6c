// Where the page reads and acts: straight on the bucket (S3Backend, the
// default) or through qo's HTTP API (ApiBackend). Both answer the same calls
// with the same shapes (the CLI's --json shapes).
import { S3 } from './s3.js';
import {
  TASKS_PREFIX, WORKERS_PREFIX, SCHEDULES_PREFIX, CONTROL_KEY, applyOperator, indexChanges, decodeTask, taskKey, shards,
} from './queue.js';

const PAGE = 50;

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
    return shards(JSON.parse(obj.text).shard_chars || 1);
  }

  /** listTasks returns one page: tasks whose status passes the filter. */
  async listTasks({ shard = '', status = '', cursor = '' } = {}) {
    const prefix = TASKS_PREFIX + (shard ? `${shard}/` : '');
    const page = await this.s3.list(prefix, { startAfter: cursor, maxKeys: PAGE });
    const tasks = [];
    const malformed = [];
    await Promise.all(page.keys.map(async ({ key }, i) => {
      const obj = await this.s3.get(key);
      if (!obj) return;
      try {
        tasks[i] = decodeTask(key, obj.text);
      } catch (e) {
        malformed.push({ key, error: e.message });
      }
    }));
    const wanted = (t) => t && (status ? t.status === status : t.status !== 'archived');
    const last = page.keys.at(-1)?.key ?? '';
    return { tasks: tasks.filter(wanted), malformed, next_cursor: page.next ? last : '' };
  }

  async getTask(id, shardChars) {
    const key = taskKey(id.slice(0, shardChars), id);
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

  /** schedules reads every live schedule. */
  async schedules() {
    const { records, malformed } = await this.readAll(SCHEDULES_PREFIX, (s) => s.format === 1 && typeof s.name === 'string');
    return { schedules: records.filter((s) => !s.deleted).sort((a, b) => a.name.localeCompare(b.name)), malformed };
  }

  async workers() {
    const { records, malformed } = await this.readAll(WORKERS_PREFIX, (w) => w.format === 1 && typeof w.worker_id === 'string');
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
   * the shared rules, write it back only if it did not change meanwhile
   * (If-Match on its ETag), then fix the ready index (best effort, as in
   * Go: a sweep repairs a missed index write).
   */
  async act(op, id, shardChars, reason = 'from the web UI') {
    for (let tries = 0; tries < 5; tries++) {
      const { task, etag } = await this.getTask(id, shardChars);
      const next = applyOperator(task, op, reason, this.now(), crypto.randomUUID());
      if (!next) return task;
      try {
        await this.s3.put(taskKey(next.shard, next.id), JSON.stringify(next), { ifMatch: etag });
      } catch (e) {
        if (e.status === 412) continue; // changed meanwhile: apply again on the new version
        throw e;
      }
      const idx = indexChanges(task, next);
      await Promise.allSettled([...idx.put.map((k) => this.s3.put(k, '')), ...idx.del.map((k) => this.s3.del(k))]);
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
    if (!res.ok) throw new Error(data.error?.message || `${res.status} ${res.statusText}`);
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
