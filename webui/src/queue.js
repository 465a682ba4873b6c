// The queue's rules in the browser: key layout, statuses and the operator
// actions. They mirror the Go package queue (queue/doc.go is the reference);
// test/queue.test.js runs them on cases produced by the Go code.
import transitions from './transitions.json' with { type: 'json' };
// constants.json holds the Go values the page uses (go test ./webui -update
// writes it): nothing below copies a status, key or number of the queue.
import constants from './constants.json' with { type: 'json' };

/** STATUSES lists every status in lifecycle order (queue.Statuses). */
export const STATUSES = constants.statuses;
/** TERMINAL are the statuses no worker leaves without an operator (queue.Status.Terminal). */
export const TERMINAL = constants.terminal;
export const PRIORITIES = constants.priorities;
/** PRIORITY_STEP_MS moves a high task ahead, a low one behind (queue.PriorityStep). */
export const PRIORITY_STEP_MS = constants.priority_step_ms;
/** FORMAT_VERSION is the format of the objects the page reads and writes (queue.FormatVersion). */
export const FORMAT_VERSION = constants.format_version;
/** LAYOUT_VERSION is the key layout the page reads: queue.json's "format" (queue.LayoutVersion). */
export const LAYOUT_VERSION = constants.layout_version;
/** FIELD_SEP joins the fields of a ready or lease entry's name (queue.FieldSep). */
export const FIELD_SEP = constants.field_sep;
/** KEY_SECTION_MARK begins a task key's section of a ready partition, "-{key}/" (queue.KeySectionMark). */
export const KEY_SECTION_MARK = constants.key_section_mark;
export const CONFIG_KEY = constants.keys.config;
export const TASKS_PREFIX = constants.keys.tasks;
export const READY_PREFIX = constants.keys.ready;
export const LEASES_PREFIX = constants.keys.leases;
export const DEAD_PREFIX = constants.keys.dead;
export const WAITING_PREFIX = constants.keys.waiting;
/** LIST_WINDOW_MS is how far back a listing of finished tasks looks by default (queue.DefaultListWindow). */
export const LIST_WINDOW_MS = constants.list_window_ms;
export const WORKERS_PREFIX = constants.keys.workers;
export const SCHEDULES_PREFIX = constants.keys.schedules;
export const CONTROL_KEY = constants.keys.control;
export const IDEMPOTENCY_PREFIX = constants.keys.idempotency;
export const WORKFLOWS_PREFIX = constants.keys.workflows;
export const WORKFLOW_NAMES_PREFIX = constants.keys.workflow_names;
/**
 * OPERATORS lists, for each action the page offers (replay, archive,
 * cancel), the statuses it applies to: queue.OperatorFrom, read off the
 * transition table. The page offers an action on exactly these.
 */
export const OPERATORS = constants.operators;
/** WORKFLOW_ENDED are the workflow statuses that have ended (queue.WorkflowStatus.Ended). */
export const WORKFLOW_ENDED = constants.workflow_ended;

/** canAct reports whether operator action op applies to a task in status. */
export function canAct(op, status) {
  return (OPERATORS[op] || []).includes(status);
}

/** An action the task's state does not allow (HTTP 409 in the API). */
export class TransitionError extends Error {
  constructor(from, event, to, reason) {
    super(`invalid transition: ${from || '(new)'} -${event}-> ${to}: ${reason}`);
    this.name = 'TransitionError';
    this.code = 'invalid_transition';
  }
}

/** allowed reports whether the lifecycle table lists (from, event, to). */
export function allowed(from, event, to) {
  return transitions.some((t) => t.from === from && t.event === event && t.to === to);
}

/** shards lists the shard names of a queue with shardChars hex digits. */
export function shards(shardChars) {
  const n = 16 ** shardChars;
  return Array.from({ length: n }, (_, i) => i.toString(16).padStart(shardChars, '0'));
}

export const DATA_PREFIX = constants.keys.data;
/**
 * EDGES_PREFIX holds the edge objects of wide children, and EDGE_FAN_IN is
 * the fan-in past which parents' ends reach a child as those objects
 * (queue.EdgeFanIn; queue/doc.go, "Dependencies").
 */
export const EDGES_PREFIX = constants.keys.edges;
export const EDGE_FAN_IN = constants.edge_fan_in;

// The rules every part of a key passes before the page builds the key
// (queue's ValidateType, ValidateWorkerID, ValidateScheduleName,
// ValidateWorkflowName, ValidateLeaseID, and a task id and shard as keys
// spell them). test/keyparts.test.js runs them on the cases the Go rules
// answered (testdata/keyparts.json). A part read from the bucket is data
// anyone with write access wrote: "0/../queue.json" as a task id would
// make the browser resolve the path and send the request to another key.
const NAME = /^[A-Za-z0-9_.:-]+$/;
const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const LEASE_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const SHARD = /^[0-9a-f]{1,2}$/;
const validName = (max) => (s) => typeof s === 'string' && s.length >= 1 && s.length <= max && NAME.test(s) && /[^.]/.test(s);
const RULES = {
  task_id: (s) => typeof s === 'string' && TASK_ID.test(s),
  lease_id: (s) => typeof s === 'string' && LEASE_ID.test(s),
  shard: (s) => typeof s === 'string' && SHARD.test(s),
  ...Object.fromEntries(Object.entries(constants.name_max).map(([kind, max]) => [kind, validName(max)])),
};
const WHAT = {
  task_id: 'a task id (a UUID like 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b)', lease_id: 'a lease id (a UUID)', shard: 'a shard (1 or 2 hex digits)',
  task_type: 'a task type', worker_id: 'a worker id', schedule_name: 'a schedule name', workflow_name: 'a workflow name',
};

/** validPart reports whether value passes the rules of its kind (task_id, lease_id, shard, task_type, worker_id, schedule_name, workflow_name). */
export function validPart(kind, value) {
  const rule = RULES[kind];
  if (!rule) throw new Error(`unknown key part ${kind}`);
  return rule(value);
}

/** A key part the rules refuse: the page builds no key from it, and sends nothing. */
export class KeyPartError extends Error {
  constructor(kind, value) {
    const shown = JSON.stringify(typeof value === 'string' && value.length > 80 ? `${value.slice(0, 80)}...` : value) ?? String(value);
    super(`refused: ${shown} is not ${WHAT[kind] || kind} (letters, digits and _ . : - for names), so no key is built from it: the object that holds it was not written by qo`);
    this.name = 'KeyPartError';
    this.kind = kind;
  }
}

/** part returns value when it passes the rules of kind, else throws a KeyPartError. */
export function part(kind, value) {
  if (!validPart(kind, value)) throw new KeyPartError(kind, value);
  return value;
}

/** shardPart is part('shard') that also checks the shard is the id's. */
function shardPart(shard, id) {
  part('task_id', id);
  if (!validPart('shard', shard) || shardOf(id, shard.length) !== shard) throw new KeyPartError('shard', shard);
  return shard;
}

/** taskKey is queue's taskKeyFor: tasks/{shard}/{id}.json, from a validated shard and id. */
export function taskKey(shard, id) {
  return `${TASKS_PREFIX}${shardPart(shard, id)}/${id}.json`;
}

/** workerKey is queue.WorkerKey: workers/{id}.json. */
export function workerKey(id) {
  return `${WORKERS_PREFIX}${part('worker_id', id)}.json`;
}

/** parseWorkerKey is queue.ParseWorkerKey: the worker id of a registry key, or null. */
export function parseWorkerKey(key) {
  const id = key.startsWith(WORKERS_PREFIX) && key.endsWith('.json') ? key.slice(WORKERS_PREFIX.length, -'.json'.length) : null;
  return id !== null && validPart('worker_id', id) ? id : null;
}

/** parseScheduleKey is queue.ParseScheduleKey: the name of a schedule key, or null. */
export function parseScheduleKey(key) {
  const name = key.startsWith(SCHEDULES_PREFIX) && key.endsWith('.json') ? key.slice(SCHEDULES_PREFIX.length, -'.json'.length) : null;
  return name !== null && validPart('schedule_name', name) ? name : null;
}

/**
 * payloadKey checks an offloaded payload's reference (input_ref or
 * output_ref) of task t: its key must be the one qo writes for it
 * (queue.DataKey: data/{shard}/{id}/input.json, or output-{lease id}.json),
 * rebuilt here from validated parts; anything else is refused.
 */
export function payloadKey(t, ref, what) {
  const dir = `${DATA_PREFIX}${shardPart(t.shard, t.id)}/${t.id}/`;
  const key = typeof ref?.key === 'string' ? ref.key : '';
  if (what === 'input' && key === `${dir}input.json`) return key;
  const lease = key.startsWith(`${dir}output-`) && key.endsWith('.json') ? key.slice(`${dir}output-`.length, -'.json'.length) : null;
  if (what === 'output' && lease !== null && validPart('lease_id', lease)) return `${dir}output-${lease}.json`;
  throw new Error(`refused: the ${what} reference ${JSON.stringify(key)} of task ${t.id} is not ${dir}${what === 'input' ? 'input' : 'output-{lease id}'}.json, so it is not read`);
}

/**
 * idempotencyKey is queue.IdempotencyKey: the key of the marker that binds
 * an idempotency key to the task it made, "idempotency/{h[:2]}/{h}.json",
 * h the hex SHA-256 of type NUL key.
 */
export async function idempotencyKey(type, key) {
  const sum = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${type}\u0000${key}`));
  const h = [...new Uint8Array(sum)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${IDEMPOTENCY_PREFIX}${h.slice(0, 2)}/${h}.json`;
}

/** isV7 tells a time-ordered id (UUIDv7: its version digit is 7). */
function isV7(id) {
  return id[14] === '7';
}

/**
 * shardOf is queue.ShardOf: the last n hex digits of a time-ordered id
 * (random), the first n of any other.
 */
export function shardOf(id, n) {
  return isV7(id) ? id.slice(-n) : id.slice(0, n);
}

/** shortID is queue.ShortID: the 8 characters that tell tasks apart. */
export function shortID(id) {
  return isV7(id) ? id.slice(-8) : id.slice(0, 8);
}

/** idFloor is the smallest v7 id of millisecond ms: ids created at ms or later sort after it. */
export function idFloor(ms) {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}

/** MAX_MS is the largest time an index key holds; dead-letter keys count down from it. */
export const MAX_MS = 9999999999999;

function unixMS(ms) {
  return String(Math.min(Math.max(ms, 0), MAX_MS)).padStart(13, '0');
}

/** priorityOf is the task's priority; objects without one are normal. */
export function priorityOf(t) {
  return PRIORITIES.includes(t.priority) ? t.priority : 'normal';
}

/**
 * readyKey is the ready-index key of a pending task, under its type, then
 * its shard (queue.ReadyPartition): its rank is available_at moved by the
 * priority; a task with a key has its entry in its key's section of the
 * partition, "-{key}/" (queue/doc.go, "Task keys"; a key follows the rules
 * of a type name).
 */
export function readyKey(t) {
  const p = priorityOf(t);
  const offset = p === 'high' ? -PRIORITY_STEP_MS : p === 'low' ? PRIORITY_STEP_MS : 0;
  const name = [unixMS(Date.parse(t.available_at) + offset), p, t.id].join(FIELD_SEP);
  const section = t.key ? `${KEY_SECTION_MARK}${part('task_type', t.key)}/` : '';
  return `${readyPartitionPrefix(part('task_type', t.task_type), shardPart(t.shard, t.id))}${section}${name}`;
}

/** readyPartitionPrefix is the prefix of one type's ready entries in one shard (queue.ReadyPartitionPrefix). */
export function readyPartitionPrefix(type, shard) {
  return `${READY_PREFIX}${type}/${shard}/`;
}

/**
 * READY_TYPE_END is a shard segment that sorts after every shard:
 * readyPartitionPrefix(type, READY_TYPE_END) begins past all of a type's
 * ready entries (queue's typeEnd).
 */
export const READY_TYPE_END = '~';

/**
 * readyShardHop is where a listing of one shard's ready entries of every
 * type goes on after key (as queue's walk of the ready partitions does):
 * key itself when it lies in that shard, else that shard's partition of
 * key's type when it is still ahead, else past the end of key's type. So
 * a page that ends in another shard's backlog costs no LIST per page of it.
 */
export function readyShardHop(key, shard) {
  const p = key.split('/');
  if (`${p[0]}/` !== READY_PREFIX || p.length < 3 || !p[1] || !p[2] || p[2] === shard) return key;
  const next = readyPartitionPrefix(p[1], `${p[2]}/` < `${shard}/` ? shard : READY_TYPE_END);
  return next > key ? next : key;
}

/** leaseKey is the lease-index key of a running task (its holder last). */
export function leaseKey(t) {
  const fields = [unixMS(Date.parse(t.lease_expires_at)), part('task_type', t.task_type), t.id, part('lease_id', t.lease_id), part('worker_id', t.worker_id)];
  return `${LEASES_PREFIX}${shardPart(t.shard, t.id)}/${fields.join(FIELD_SEP)}`;
}

/** deadKey is the dead-letter key of a failed task: newest failure first. */
export function deadKey(t) {
  return `${DEAD_PREFIX}${unixMS(MAX_MS - Date.parse(t.completed_at))}/${shardPart(t.shard, t.id)}/${part('task_type', t.task_type)}/${t.id}`;
}

/** indexKeys lists the index entries a version of a task needs. */
export function indexKeys(t) {
  if (t.status === 'waiting') return [`${WAITING_PREFIX}${shardPart(t.shard, t.id)}/${t.id}`];
  if (t.status === 'pending') return [readyKey(t)];
  if (t.status === 'running' && t.lease_id && t.worker_id && t.lease_expires_at) return [leaseKey(t)];
  if (t.status === 'failed' && t.completed_at) return [deadKey(t)];
  return [];
}

/**
 * keyFields splits an index key into its fields: its segments, with the
 * name of a ready or lease entry split at FIELD_SEP, so that every index
 * reads as one list (empty for a ready or lease key of another shape): a
 * ready key gives [root, type, shard, rank, priority, id(, key)] (the key
 * from its section's segment), a lease
 * key [root, shard, expiry, type, id, lease id, worker].
 */
function keyFields(key) {
  const p = key.split('/');
  const root = `${p[0]}/`;
  if (root === READY_PREFIX) {
    const keyed = p.length === 5 && p[3].startsWith(KEY_SECTION_MARK);
    const f = keyed || p.length === 4 ? p[p.length - 1].split(FIELD_SEP) : [];
    if (f.length !== 3) return [];
    return keyed ? [p[0], p[1], p[2], ...f, p[3].slice(KEY_SECTION_MARK.length)] : [p[0], p[1], p[2], ...f];
  }
  if (root !== LEASES_PREFIX) return p;
  return p.length === 3 ? [p[0], p[1], ...p[2].split(FIELD_SEP)] : [];
}

/**
 * parseIndexKey reads the task id and shard out of a ready, lease or
 * dead-letter key (null when it is not one).
 */
export function parseIndexKey(key) {
  const parts = keyFields(key);
  const ok = (shard, id) => (validPart('shard', shard) && validPart('task_id', id) && shardOf(id, shard.length) === shard ? { shard, id } : null);
  const root = `${parts[0]}/`;
  if (root === READY_PREFIX && validPart('task_type', parts[1]) && (parts.length === 6 || (parts.length === 7 && validPart('task_type', parts[6])))) return ok(parts[2], parts[5]);
  if (root === LEASES_PREFIX && parts.length === 7) return ok(parts[1], parts[4]);
  if (root === DEAD_PREFIX && parts.length === 5) return ok(parts[2], parts[4]);
  if (root === WAITING_PREFIX && parts.length === 3) return ok(parts[1], parts[2]);
  return null;
}

/** decodeTask parses a task object, refusing what qo would not trust. */
// MAX_PROGRESS_MESSAGE bounds a progress message, in bytes (Go:
// queue.MaxProgressMessage).
export const MAX_PROGRESS_MESSAGE = 200;

/**
 * progressOf returns the progress a worker's registry record carries for
 * a running task it holds (queue/doc.go, "Progress"): {attempt, fraction,
 * message, at}, or null when there is none for this attempt or it breaks
 * the rules (a fraction outside 0..1, a message over 200 bytes or with
 * control characters), as Go's TaskProgress does.
 */
export function progressOf(t, record) {
  if (!t || t.status !== 'running' || !record || typeof record !== 'object' || record.worker_id !== t.worker_id) return null;
  const p = record.progress?.[t.id];
  if (!p || typeof p !== 'object' || p.attempt !== t.attempt) return null;
  if (typeof p.fraction !== 'number' || !(p.fraction >= 0 && p.fraction <= 1)) return null;
  const message = p.message ?? '';
  if (typeof message !== 'string' || new TextEncoder().encode(message).length > MAX_PROGRESS_MESSAGE || /\p{Cc}/u.test(message)) return null;
  return { attempt: p.attempt, fraction: p.fraction, message, at: typeof p.at === 'string' ? p.at : null };
}

/** progressText renders a progress: "42% resized 42 of 100". */
export function progressText(p) {
  return `${Math.floor(p.fraction * 100)}%${p.message ? ` ${p.message}` : ''}`;
}

export function decodeTask(key, text) {
  let t;
  try {
    t = JSON.parse(text);
  } catch (e) {
    throw new Error(`malformed object ${key}: ${e.message}`);
  }
  if (t === null || typeof t !== 'object' || Array.isArray(t)) throw new Error(`malformed object ${key}: not a JSON object`);
  if (t.format !== FORMAT_VERSION) throw new Error(`malformed object ${key}: unknown format version ${t.format}`);
  if (typeof t.id !== 'string' || !STATUSES.includes(t.status)) throw new Error(`malformed object ${key}: missing id or unknown status`);
  // What qo's DecodeTask checks: every part a key is built from, and
  // every id the page may look up (parents, children).
  const bad = (what) => new Error(`malformed object ${key}: ${what}`);
  if (!validPart('task_id', t.id)) throw bad(`bad task id ${JSON.stringify(t.id)}`);
  if (!validPart('shard', t.shard) || shardOf(t.id, t.shard.length) !== t.shard) throw bad(`the object says task ${t.id} in shard ${JSON.stringify(t.shard)}`);
  if (key && key !== taskKey(t.shard, t.id)) throw bad(`the object says task ${t.id} in shard ${t.shard}`);
  if (!validPart('task_type', t.task_type)) throw bad(`bad task type ${JSON.stringify(t.task_type)}`);
  if (t.worker_id && !validPart('worker_id', t.worker_id)) throw bad(`bad worker id ${JSON.stringify(t.worker_id)}`);
  if (t.lease_id && !validPart('lease_id', t.lease_id)) throw bad(`bad lease id ${JSON.stringify(t.lease_id)}`);
  if (t.priority != null && t.priority !== '' && !PRIORITIES.includes(t.priority)) throw bad(`unknown priority ${JSON.stringify(t.priority)}`);
  if (t.key != null && t.key !== '' && !validPart('task_type', t.key)) throw bad(`bad task key ${JSON.stringify(t.key)}`);
  if (t.parents != null && !Array.isArray(t.parents)) throw bad('parents is not a list');
  if (t.children != null && !Array.isArray(t.children)) throw bad('children is not a list');
  for (const p of t.parents || []) if (!validPart('task_id', p?.id)) throw bad(`bad parent id ${JSON.stringify(p?.id)}`);
  for (const c of t.children || []) if (!validPart('task_id', c)) throw bad(`bad child id ${JSON.stringify(c)}`);
  return t;
}

const iso = (d) => new Date(d).toISOString();

function endLease(t) {
  t.lease_id = '';
  t.lease_expires_at = null;
}

function toPending(t, now) {
  t.status = 'pending';
  t.available_at = now;
  clearRun(t);
}

// clearRun empties what a task carries of its last run before it waits or
// runs again (queue.clearRun).
function clearRun(t) {
  t.worker_id = '';
  endLease(t);
  t.completed_at = null;
  t.output = null;
  t.output_ref = null;
  t.cancel_requested = false;
  t.cancel_requested_at = null;
  t.cancel_reason = '';
}

// toWaiting: a replayed task whose parents have not all ended waits for
// them again (queue.toWaiting).
function toWaiting(t) {
  t.status = 'waiting';
  clearRun(t);
  t.last_error = '';
  t.retry_count = 0;
  delete t.snooze_count;
}

function toCancelled(t, now) {
  t.status = 'cancelled';
  endLease(t);
  t.completed_at = now;
  t.output = null;
  t.output_ref = null;
  if (!t.cancel_requested) {
    t.cancel_requested = true;
    t.cancel_requested_at = now;
  }
}

// refusals: the transition each action would make, and its verb's past
// participle, for the error of a status it does not apply to (as
// queue.ApplyOperator words it).
const refusals = {
  cancel: { event: 'cancelled', to: 'cancelled', done: 'cancelled' },
  replay: { event: 'replayed', to: 'pending', done: 'replayed' },
  archive: { event: 'archived', to: 'archived', done: 'archived' },
};

// sentence lists words as a sentence does: "a, b or c".
function sentence(words) {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

// The changes, for a task whose status the action applies to (OPERATORS).
const changes = {
  cancel(t, now, reason) {
    if (t.status === 'running') {
      if (t.cancel_requested) return '';
      t.cancel_requested = true;
      t.cancel_requested_at = now;
      t.cancel_reason = reason;
      return 'cancel_requested';
    }
    toCancelled(t, now); // waiting or pending
    t.cancel_reason = reason;
    return 'cancelled';
  },
  replay(t, now) {
    if (t.expires_at && Date.parse(t.expires_at) <= Date.parse(now)) t.expires_at = null;
    t.retry_count = 0;
    delete t.snooze_count; // absent when 0, as Go writes it
    // A task with parents waits again for those that did not complete.
    for (const p of t.parents || []) {
      if (p.done !== 'completed') delete p.done;
    }
    if ((t.parents || []).some((p) => !p.done)) {
      toWaiting(t);
      return 'replayed';
    }
    toPending(t, now);
    return 'replayed';
  },
  archive(t) {
    t.archived_from = t.status; // how it ended, kept (see queue/doc.go)
    t.status = 'archived';
    return 'archived';
  },
};

/**
 * applyOperator returns the version an operator action makes of base at
 * time now (an ISO string), or null when the action changes nothing; it
 * throws a TransitionError when the task's state does not allow it. The
 * version names actor as who made it (its actor field; none when actor is
 * empty). Same rules as queue.ApplyOperator in Go.
 */
export function applyOperator(base, op, reason, actor, now, requestID) {
  const change = changes[op];
  if (!change || !OPERATORS[op]) throw new Error(`unknown action ${op}`);
  if (!canAct(op, base.status)) {
    const { event, to, done } = refusals[op];
    throw new TransitionError(base.status, event, to, `only ${sentence(OPERATORS[op])} tasks can be ${done}`);
  }
  const next = structuredClone(base);
  const at = iso(now);
  const event = change(next, at, reason);
  if (!event) return null;
  return stamp(base, next, event, at, requestID, actor);
}

/**
 * pageActor is who the page records as the actor of its writes in S3
 * mode (queue.WithActor in Go): the web UI, the host it was opened from,
 * and the S3 access key it signs with, shortened (its first and last four
 * characters): what the page knows of who uses it.
 */
export function pageActor(accessKeyId, host) {
  const key = String(accessKeyId || '');
  const short = key.length > 8 ? `${key.slice(0, 4)}…${key.slice(-4)}` : '…';
  return `web UI${host ? ` on ${host}` : ''}, S3 key ${short}`.replace(/\s+/g, ' ');
}

/**
 * stamp makes next the version after base (queue's stamp): rev+1, the
 * request id, the event, updated_at = now (never moving back), the actor
 * of an operator action (cleared on any other write, as queue's apply
 * does), then checks the transition against the lifecycle table.
 */
function stamp(base, next, event, at, requestID, actor = '') {
  if (actor) next.actor = actor;
  else delete next.actor;
  next.rev = base.rev + 1;
  next.request_id = requestID;
  next.last_event = event;
  next.updated_at = Date.parse(at) < Date.parse(base.updated_at) ? base.updated_at : at;
  if (!allowed(base.status, event, next.status)) {
    throw new TransitionError(base.status, event, next.status, 'not in the lifecycle table');
  }
  return next;
}

/**
 * endedAs is the status a task ended in, for its children (queue's
 * ended): its own when completed, failed, cancelled or expired; for an
 * archived one, the one it had before, read off the fields archiving
 * keeps. null while it may still run.
 */
export function endedAs(t) {
  switch (t.status) {
    case 'completed':
    case 'failed':
    case 'cancelled':
    case 'expired':
      return t.status;
    case 'archived':
      if (t.cancel_requested) return 'cancelled';
      if (t.last_error) return 'failed';
      if (t.expires_at && t.completed_at && Date.parse(t.completed_at) >= Date.parse(t.expires_at) && t.output == null && t.output_ref == null) return 'expired';
      return 'completed';
    default:
      return null;
  }
}

/** parentReason is the cancel reason or last error of a child that ended because parent p did not complete. */
function parentReason(p) {
  return `parent ${p.id} ${p.done}`;
}

/** blockedBy is the first parent that ended without completing, unless the child runs anyway (queue's blockedBy). */
function blockedBy(t) {
  if (t.on_parent_failure === 'run') return null;
  return (t.parents || []).find((p) => p.done && p.done !== 'completed') || null;
}

/**
 * resolveWaiting decides what waiting task t becomes now that its parent
 * list says what it says (queue's resolveWaiting): cancelled or failed by
 * on_parent_failure when a parent ended without completing, pending
 * (released, available now) when every parent has ended, else still
 * waiting (a parent_done write). It returns the event.
 */
function resolveWaiting(t, at) {
  const bad = blockedBy(t);
  if (bad) {
    if (t.on_parent_failure === 'fail') {
      t.status = 'failed';
      t.completed_at = at;
      t.last_error = parentReason(bad);
      return 'failed';
    }
    toCancelled(t, at);
    t.cancel_reason = parentReason(bad);
    return 'cancelled';
  }
  if ((t.parents || []).every((p) => p.done)) {
    t.status = 'pending';
    if (Date.parse(t.available_at) < Date.parse(at)) t.available_at = at;
    return 'released';
  }
  return 'parent_done';
}

/**
 * recordEnd is the write queue's record makes on a waiting child when its
 * parent ended other than completed (the page ends a task only by
 * cancelling it): the parent's end is recorded in the child's parents,
 * and the child is resolved by on_parent_failure (see resolveWaiting).
 * null when it changes nothing: the child is no longer waiting, does not
 * list the parent, or already knows its end.
 */
export function recordEnd(base, parent, now, requestID) {
  const done = endedAs(parent);
  if (!done || done === 'completed') throw new Error(`recordEnd: task ${parent.id} did not end other than completed`);
  return recordEnds(base, { [parent.id]: done }, now, requestID);
}

/**
 * recordEnds is queue's record for several ends at once: ends maps parent
 * ids to the status each ended in (the page's own end, and those a wide
 * child's edge objects hold). Each end the child does not record yet is
 * recorded, then the child is resolved by on_parent_failure. null when it
 * records nothing. A completed parent the child takes values from
 * (input_from) is refused with an error: the page does not copy outputs,
 * so it leaves that child to qo's sweeper, which does.
 */
export function recordEnds(base, ends, now, requestID) {
  if (base.status !== 'waiting') return null;
  const next = structuredClone(base);
  let recorded = 0;
  for (const p of next.parents || []) {
    if (p.done || !Object.hasOwn(ends, p.id)) continue;
    if (ends[p.id] === 'completed' && Object.values(base.input_from || {}).some((src) => src?.parent === p.id)) {
      throw new Error(`task ${base.id} takes values from parent ${p.id} (input_from): left to qo's sweeper, which copies them`);
    }
    p.done = ends[p.id];
    recorded++;
  }
  if (!recorded) return null;
  const at = iso(now);
  return stamp(base, next, resolveWaiting(next, at), at, requestID);
}

/**
 * hasEdges reports whether parents' ends may reach task t as edge objects
 * (queue's hasEdges): it has more than EDGE_FAN_IN parents.
 */
export function hasEdges(t) {
  return (t.parents || []).length > EDGE_FAN_IN;
}

/**
 * decides reports whether recording ends ({parent id: status}) on waiting
 * task t would release, cancel or fail it (queue's decides).
 */
export function decides(t, ends) {
  const parents = (t.parents || []).map((p) => (p.done || !Object.hasOwn(ends, p.id) ? p : { ...p, done: ends[p.id] }));
  return Boolean(blockedBy({ ...t, parents })) || parents.every((p) => p.done);
}

/**
 * unrecorded returns the ends ({parent id: status}) among t's parents that
 * t does not record yet (queue's edgeSet.unrecorded).
 */
export function unrecorded(t, ends) {
  const out = {};
  for (const p of t.parents || []) {
    if (!p.done && Object.hasOwn(ends, p.id)) out[p.id] = ends[p.id];
  }
  return out;
}

/**
 * edgeKey is the key of the edge object that records parent's end (in
 * status) for waiting task child: edges/{child}/{parent}/{status}, an
 * empty object (queue.EdgeKey).
 */
export function edgeKey(child, parent, status) {
  return `${EDGES_PREFIX}${child}/${parent}/${status}`;
}

/**
 * parseEdgeKey returns the child, parent and status an edge key names
 * (queue.ParseEdgeKey), or null for a key qo did not write.
 */
export function parseEdgeKey(key) {
  if (!key.startsWith(EDGES_PREFIX)) return null;
  const parts = key.slice(EDGES_PREFIX.length).split('/');
  if (parts.length !== 3 || !validPart('task_id', parts[0]) || !validPart('task_id', parts[1])) return null;
  // The status of an end: one a task ends in as itself (archived is not).
  if (endedAs({ status: parts[2] }) !== parts[2]) return null;
  return { child: parts[0], parent: parts[1], status: parts[2] };
}

/**
 * rewait is what queue's rewait makes of a child when its parent
 * parentID was replayed: a child that was cancelled or failed because
 * that parent did not complete waits for it again (unless another parent
 * still decides its fate). null when it changes nothing: the child ended
 * for its own reasons, or is not one such child.
 */
export function rewait(base, parentID, now, requestID) {
  if (base.status !== 'cancelled' && base.status !== 'failed') return null;
  const i = (base.parents || []).findIndex((p) => p.id === parentID);
  if (i < 0) return null;
  const p = base.parents[i];
  if (!p.done || p.done === 'completed') return null;
  const reason = `parent ${p.id} ${p.done}`;
  if (base.cancel_reason !== reason && base.last_error !== reason) return null;
  const next = structuredClone(base);
  delete next.parents[i].done;
  if (blockedBy(next)) return null; // another parent still blocks it
  toWaiting(next);
  return stamp(base, next, 'replayed', iso(now), requestID);
}

/**
 * indexChanges lists the index entries an applied action puts (before the
 * task write) and deletes (after it), as queue.IndexChanges does.
 */
export function indexChanges(prev, next) {
  const had = indexKeys(prev);
  const want = indexKeys(next);
  return { put: want.filter((k) => !had.includes(k)), del: had.filter((k) => !want.includes(k)) };
}

/**
 * INDEX_GRACE_MS is queue.IndexGrace: a writer whose entry PUT and task PUT
 * end up more than half of it apart writes the entry again after the task
 * PUT, so no reader can remove an entry a landed version needs.
 */
export const INDEX_GRACE_MS = constants.index_grace_ms;

/** DEAD_AFTER_MS: a worker's liveness bound when it states none (queue.DefaultDeadAfter). */
export const DEAD_AFTER_MS = constants.dead_after_ms;
/** MAX_CLOCK_SKEW_MS: queue.MaxClockSkew. */
export const MAX_CLOCK_SKEW_MS = constants.max_clock_skew_ms;

/**
 * health judges a worker by the monitor's liveness rule (monitor.Judge):
 * dead once its heartbeat is older than its liveness bound (its
 * dead_after_seconds, else DEAD_AFTER_MS) plus MAX_CLOCK_SKEW_MS, when the
 * monitor takes its tasks back; stale from three quarters of the bound,
 * when a worker whose heartbeats do not land stops its handlers.
 */
export function health(lastHeartbeat, now, deadAfterSeconds = 0) {
  const age = Date.parse(now) - Date.parse(lastHeartbeat);
  const bound = deadAfterSeconds > 0 ? deadAfterSeconds * 1000 : DEAD_AFTER_MS;
  if (age > bound + MAX_CLOCK_SKEW_MS) return 'dead';
  if (age > (bound * 3) / 4) return 'stale';
  return 'active';
}

/**
 * unserved names the types with pending tasks nothing runs, sorted, as
 * inspect.Unserved does: the queue or the type is paused, or no live
 * (not dead) worker serves the type. byType is stats' by_type, workers
 * the registry records, control control.json (or null).
 */
export function unserved(byType, workers, control, now) {
  const served = new Set();
  for (const w of workers) {
    if (health(w.last_heartbeat, now, w.dead_after_seconds) === 'dead') continue;
    for (const t of w.types || []) served.add(t);
  }
  const out = [];
  for (const type of Object.keys(byType).sort()) {
    const pending = byType[type].pending || 0;
    if (!pending) continue;
    let reason = '';
    if (control?.paused) reason = 'queue paused';
    else if (control?.paused_types && Object.hasOwn(control.paused_types, type)) reason = 'type paused';
    else if (!served.has(type)) reason = 'no live worker serves it';
    if (reason) out.push({ type, pending, reason });
  }
  return out;
}

/** validType is queue.ValidateType: 1-64 of [A-Za-z0-9_.:-], not only dots. */
export function validType(s) {
  return validPart('task_type', s);
}

const HEX_SHARD = /^[0-9a-f]{1,2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MS = /^\d{13}$/;

/**
 * indexEntry reads what an index key says without reading the task, as
 * queue.ParseReadyKey, ParseLeaseKey and ParseDeadKey do: {index, shard,
 * type, id} plus, for a ready key, when the task becomes available (its
 * rank moved back by its priority). null when the key is not one.
 */
export function indexEntry(key) {
  const p = keyFields(key);
  const ok = (index, shard, type, id, extra) => (HEX_SHARD.test(shard) && validType(type) && UUID.test(id) && shardOf(id, shard.length) === shard
    ? { index, shard, type, id, ...extra } : null);
  const root = `${p[0]}/`;
  const keyed = p.length === 7 && validType(p[6]); // a task key (queue/doc.go, "Task keys")
  if (root === READY_PREFIX && (p.length === 6 || keyed) && MS.test(p[3]) && PRIORITIES.includes(p[4])) {
    const offset = p[4] === 'high' ? -PRIORITY_STEP_MS : p[4] === 'low' ? PRIORITY_STEP_MS : 0;
    return ok('ready', p[2], p[1], p[5], { availableAt: Number(p[3]) - offset, ...(keyed ? { key: p[6] } : {}) });
  }
  if (root === LEASES_PREFIX && p.length === 7 && MS.test(p[2])) return ok('leases', p[1], p[3], p[4]);
  if (root === DEAD_PREFIX && p.length === 5 && MS.test(p[1])) return ok('dead', p[2], p[3], p[4]);
  // A waiting entry names no type (queue.ParseWaitingKey).
  if (root === WAITING_PREFIX && p.length === 3 && HEX_SHARD.test(p[1]) && UUID.test(p[2]) && shardOf(p[2], p[1].length) === p[1]) {
    return { index: 'waiting', shard: p[1], type: '', id: p[2] };
  }
  return null;
}

/** THROUGHPUT_PREFIX holds the monitor's rollup of finishes, one object per hour (queue.ThroughputPrefix). */
export const THROUGHPUT_PREFIX = constants.throughput_prefix;
/** DAY_HOURS is how many hours last_day covers (inspect.DayHours). */
export const DAY_HOURS = constants.day_hours;
const MINUTE = 60000;
const HOUR = 60 * MINUTE;

/** throughputKey is the key of the rollup's hour object holding ms (queue.ThroughputKey). */
export function throughputKey(ms) {
  return `${THROUGHPUT_PREFIX}${new Date(ms).toISOString().slice(0, 13)}.json`;
}

/**
 * throughputOf merges the rollup's hour objects with the live workers'
 * heartbeats into the windows of inspect.ThroughputOf ({recent, last_hour,
 * last_day}, oldest first, ending with the minute or hour holding nowMs):
 * a closed minute is the rollup's total; in an open one each worker counts
 * once, with the larger of its rolled-up and its live count.
 */
export function throughputOf(hours, workers, nowMs, recentMinutes = RECENT_MINUTES) {
  const per = new Map(); // `${id} ${ms}` -> {at, completed, failed}
  const total = new Map(); // ms -> {completed, failed}
  const closed = new Set();
  const add = (at, c) => {
    const t = total.get(at) || { completed: 0, failed: 0 };
    t.completed += c.completed || 0;
    t.failed += c.failed || 0;
    total.set(at, t);
  };
  for (const h of hours) {
    for (const m of h.minutes || []) {
      const at = Date.parse(m.start);
      if (!m.workers) {
        closed.add(at);
        add(at, m);
        continue;
      }
      for (const [id, c] of Object.entries(m.workers)) per.set(`${id} ${at}`, { at, completed: c.completed || 0, failed: c.failed || 0 });
    }
  }
  for (const w of workers) {
    for (const m of w.recent || []) {
      const at = Date.parse(m.start) - (Date.parse(m.start) % MINUTE);
      const k = `${w.worker_id} ${at}`;
      const old = per.get(k) || { at, completed: 0, failed: 0 };
      per.set(k, { at, completed: Math.max(old.completed, m.completed || 0), failed: Math.max(old.failed, m.failed || 0) });
    }
  }
  for (const c of per.values()) if (!closed.has(c.at)) add(c.at, c);
  const series = (step, n) => {
    const first = nowMs - (nowMs % step) - (n - 1) * step;
    const out = Array.from({ length: n }, (_, i) => ({ start: new Date(first + i * step).toISOString(), completed: 0, failed: 0 }));
    for (const [at, c] of total) {
      const i = Math.floor((at - first) / step);
      if (at < first || i >= n) continue;
      out[i].completed += c.completed;
      out[i].failed += c.failed;
    }
    return out;
  };
  return { recent: series(MINUTE, recentMinutes), last_hour: series(MINUTE, 60), last_day: series(HOUR, DAY_HOURS) };
}

/** COUNTED are the statuses the stats count, from their indexes (queue.CountedStatuses). */
export const COUNTED = constants.counted;
/** RECENT_MINUTES is the length of the stats' per-minute counts (queue.DefaultRecentMinutes). */
export const RECENT_MINUTES = constants.recent_minutes;

/**
 * countStats computes what GET /api/stats answers (view.Stats) from the
 * keys of the four indexes and the worker records, for a page reading the
 * bucket itself: counts by status, shard and type (waiting tasks by shard
 * only: their keys name no type), the delayed tasks, the
 * oldest pending task overall and per type, finishes per minute summed from
 * the heartbeats, the workers by health, and each worker's request
 * counters from its heartbeat (worker_requests). now is a Date (the bucket's
 * clock); partial says an index was not read to its end.
 */
export function countStats({ ready = [], leases = [], dead = [], waiting = [], workers = [], malformed = [], partial = false, now, minutes = RECENT_MINUTES, control = null, meter = null, hours = [] }) {
  const nowMs = now.getTime();
  const st = {
    at: now.toISOString(), total: 0, by_status: Object.fromEntries(COUNTED.map((s) => [s, 0])), counted: [...COUNTED],
    by_shard: {}, by_type: {}, delayed: 0, oldest_pending_age_seconds: 0, oldest_pending_age_seconds_by_type: {},
    recent: [], partial, malformed, workers: { active: 0, stale: 0, dead: 0 }, worker_requests: {}, unserved: [], request_rate: null,
  };
  const bump = (m, k, status) => {
    m[k] ??= {};
    m[k][status] = (m[k][status] || 0) + 1;
  };
  const oldest = {};
  let oldestAll = Infinity;
  const add = (status, keys) => {
    for (const key of keys) {
      const e = indexEntry(key);
      if (!e) continue;
      st.total++;
      st.by_status[status]++;
      bump(st.by_shard, e.shard, status);
      if (status === 'waiting') continue;
      bump(st.by_type, e.type, status);
      if (status !== 'pending') continue;
      if (e.availableAt > nowMs) {
        st.delayed++;
        continue;
      }
      oldestAll = Math.min(oldestAll, e.availableAt);
      oldest[e.type] = Math.min(oldest[e.type] ?? Infinity, e.availableAt);
    }
  };
  add('pending', ready);
  add('running', leases);
  add('waiting', waiting);
  add('failed', dead);
  if (oldestAll < Infinity) st.oldest_pending_age_seconds = (nowMs - oldestAll) / 1000;
  for (const [type, at] of Object.entries(oldest)) st.oldest_pending_age_seconds_by_type[type] = (nowMs - at) / 1000;

  for (const w of workers) {
    st.workers[health(w.last_heartbeat, st.at, w.dead_after_seconds)]++;
    if (w.s3_requests) st.worker_requests[w.worker_id] = w.s3_requests;
  }
  const t = throughputOf(hours, workers, nowMs, minutes);
  st.recent = t.recent;
  st.last_hour = t.last_hour;
  st.last_day = t.last_day;
  st.unserved = unserved(st.by_type, workers, control, st.at);
  if (meter) st.request_rate = meter.observe(workers, st.at);
  return st;
}

/**
 * applyControl returns the control.json a pause or resume makes of base
 * (the stored one, or null when there is none) at time now (ISO), or null
 * when it changes nothing: the rules of queue.Pause and queue.Resume, with
 * actor naming who made the version (control.json's actor). An
 * empty type means the whole queue; resuming it leaves the types paused
 * one by one paused.
 */
export function applyControl(base, op, type, reason, now, actor = '') {
  if (base && base.format !== FORMAT_VERSION) throw new Error(`control.json has format ${base.format}; this page writes format ${FORMAT_VERSION}`);
  if (type && !validType(type)) throw new Error(`${op}: bad task type ${JSON.stringify(type)}`);
  const c = structuredClone(base || { format: FORMAT_VERSION, paused: false, paused_at: null, reason: '', paused_types: null, rev: 0 });
  const types = { ...(c.paused_types || {}) };
  if (op === 'pause' && !type) {
    if (c.paused) return null;
    Object.assign(c, { paused: true, paused_at: now, reason });
  } else if (op === 'pause') {
    if (Object.hasOwn(types, type)) return null;
    types[type] = { at: now, reason };
  } else if (op === 'resume' && !type) {
    if (!c.paused) return null;
    Object.assign(c, { paused: false, paused_at: null, reason: '' });
  } else if (op === 'resume') {
    if (!Object.hasOwn(types, type)) return null;
    delete types[type];
  } else {
    throw new Error(`unknown action ${op}`);
  }
  c.paused_types = types;
  c.format = FORMAT_VERSION;
  c.rev = (c.rev || 0) + 1;
  c.updated_at = now;
  if (actor) c.actor = actor;
  else delete c.actor;
  return c;
}

/**
 * limitText is a fleet-wide limit of control.json's "limits" (queue/doc.go,
 * "Fleet-wide concurrency caps" and "Fleet-wide rate limits") as the
 * overview shows it: "at most 5 running, 20/s (burst 2)"; '' for none or a
 * limit with no usable field (a malformed one shows nothing rather than a
 * wrong bound).
 */
export function limitText(l) {
  if (!l || typeof l !== 'object') return '';
  const whole = (n) => Number.isInteger(n) && n > 0;
  const parts = [];
  if (whole(l.concurrency)) parts.push(`at most ${l.concurrency} running`);
  if (whole(l.rate) && (l.per === 's' || l.per === 'm')) {
    parts.push(`${l.rate}/${l.per}${whole(l.burst) ? ` (burst ${l.burst})` : ''}`);
  }
  return parts.join(', ');
}

/**
 * limitsText is a type's limits as the overview's limit column shows them:
 * the fleet-wide one (control.json "limits", see limitText), then the
 * per-key one ("key_limits", qo limit --per-key: it holds for each task
 * key) as "per key: at most 3 running, 10/s"; '' for none.
 */
export function limitsText(fleet, perKey) {
  const keyed = limitText(perKey);
  return [limitText(fleet), keyed && `per key: ${keyed}`].filter(Boolean).join('; ');
}
