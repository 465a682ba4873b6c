// Search: what the page can find, and what each kind costs. No DOM and no
// requests here (test/search.test.js); backend.js runs the searches.
//
// The key layout decides what is cheap (queue/doc.go, "Key layout"):
//   - a task key is tasks/{shard}/{id}.json, so a full id is one GET, and
//     the tasks whose id starts with a prefix are one LIST per shard with
//     that prefix (S3 does the matching), whatever the history;
//   - the ready, lease and dead-letter keys carry the task type, so a
//     type's pending, running and failed tasks are a LIST of those indexes
//     (the live backlog, not the history) and a GET per task shown;
//     finished tasks of a type are not findable without reading every task
//     (their keys do not say the type), and neither are waiting ones (the
//     waiting index does not say it either);
//   - an idempotency key's marker is idempotency/{h[:2]}/{h}.json, h the
//     SHA-256 of type NUL key: two GETs (the marker, then its task).
// The short ids the lists show are the END of an id (its random part): no
// task key starts with them, but the end of a time-ordered id holds its
// shard, so they are looked up in that shard alone (queue.ResolveID): its
// ready, lease and waiting indexes, its tasks created in the list window,
// and the newest dead letters, at most RESOLVE_PAGES LISTs each.
import { validType } from './queue.js';

/** SEARCH_LIMIT is how many tasks a search shows (per status for a type). */
export const SEARCH_LIMIT = 20;
/** TYPE_SCAN_PAGES bounds the LISTs of one index for a type search (1,000 keys each), as the counts do. */
export const TYPE_SCAN_PAGES = 10;

/** RESOLVE_PAGES bounds the LISTs of each place a short id is looked for (queue's resolvePages). */
export const RESOLVE_PAGES = 4;

export const SEARCH_HELP = 'an id, the short id a list shows, type:NAME, or key:TYPE/KEY';

/**
 * idPrefix normalizes what was typed as the beginning of a task id: hex
 * digits, dashes optional, any case. It returns {prefix, hex} (prefix with
 * the dashes of a canonical id) or null when it is not one.
 */
export function idPrefix(text) {
  const hex = String(text).trim().toLowerCase().replace(/-/g, '');
  if (!/^[0-9a-f]{1,32}$/.test(hex)) return null;
  let prefix = '';
  for (let i = 0; i < hex.length; i++) prefix += ([8, 12, 16, 20].includes(i) ? '-' : '') + hex[i];
  return { prefix, hex };
}

/**
 * idSuffix is the end of a canonical id that hex digits (the short id a
 * list shows, or more of the id's end) make: dashes where a whole id has
 * them.
 */
export function idSuffix(hex) {
  const start = 32 - hex.length;
  let out = '';
  for (let i = start; i < 32; i++) out += (i > start && [8, 12, 16, 20].includes(i) ? '-' : '') + hex[i - start];
  return out;
}

/**
 * parseSearch reads the search box: "id:..." or hex digits (an id or its
 * beginning), "type:NAME" or a bare task type name that is not hex, and
 * "key:TYPE/KEY" (a type never holds a "/", the key may). It returns
 * {kind: 'id', prefix, full}, {kind: 'type', type}, {kind: 'key', type,
 * key}, each with text (the canonical query, for links), or {error}.
 */
export function parseSearch(input) {
  const text = String(input ?? '').trim();
  if (!text) return { error: `Search for ${SEARCH_HELP}.` };
  const m = /^(id|type|key):(.*)$/is.exec(text);
  const kind = m ? m[1].toLowerCase() : '';
  const rest = m ? m[2] : text;
  if (kind === 'key') {
    const slash = rest.indexOf('/');
    const type = slash < 0 ? '' : rest.slice(0, slash).trim();
    const key = slash < 0 ? '' : rest.slice(slash + 1);
    if (!validType(type) || !key) return { error: 'key: write key:TYPE/KEY, the task type the key was submitted with, a slash, then the key.' };
    if (new TextEncoder().encode(key).length > 256) return { error: 'key: an idempotency key is at most 256 bytes.' };
    return { kind: 'key', type, key, text: `key:${type}/${key}` };
  }
  const id = kind === 'type' ? null : idPrefix(rest);
  if (id) return { kind: 'id', prefix: id.prefix, full: id.hex.length === 32, text: id.prefix };
  if (kind === 'id' || (!kind && /^[0-9a-f-]+$/i.test(rest.trim()))) return { error: 'id: write a task id or its first hex digits (dashes optional).' };
  const type = rest.trim();
  if (validType(type)) return { kind: 'type', type, text: `type:${type}` };
  return { error: `Not something the page can search for: write ${SEARCH_HELP}.` };
}

/**
 * idShards lists the shards a search by id prefix must look in: the one
 * of a full id (queue.ShardOf), the first characters of a random (not
 * time-ordered) id once the prefix shows its version digit, or else every
 * shard (a time-ordered id's shard is its last characters).
 */
export function idShards(prefix, shards) {
  const n = shards[0]?.length || 1;
  const hex = prefix.replace(/-/g, '');
  if (hex.length === 32) return [hex[12] === '7' ? hex.slice(-n) : hex.slice(0, n)];
  if (hex.length >= 13 && hex[12] !== '7') return [hex.slice(0, n)];
  return shards;
}

/**
 * searchCost says in words what a search costs: S3 requests when the page
 * reads the bucket (mode 'S3'), requests to qo serve and what qo serve
 * makes of them otherwise. shards is the queue's shard list.
 */
export function searchCost(q, mode, shards) {
  const api = mode === 'API';
  if (q.kind === 'id' && q.full) return api ? '1 request to qo serve (it makes 1 GET)' : '1 GET';
  if (q.kind === 'id') {
    const n = idShards(q.prefix, shards).length;
    const s3 = `${n} LIST${n === 1 ? '' : ` (one per shard)`} + 1 GET per task shown (at most ${SEARCH_LIMIT}); when no id starts with it, 5 LIST for the ids ending with it (the short ids of the lists)`;
    return api ? `1 request to qo serve (it makes ${s3})` : s3;
  }
  if (q.kind === 'key') return api ? '1 request to qo serve (it makes 2 GET)' : '2 GET (the key\'s marker, then its task)';
  const s3 = `1 LIST per 1,000 entries of the ready, lease and dead-letter indexes passed (at most ${TYPE_SCAN_PAGES} each; usually 3 in all) + 1 GET per task shown (at most ${SEARCH_LIMIT} per status)`;
  return api ? `3 requests to qo serve (it makes ${s3})` : s3;
}

/** searchNote says what a search does not find, shown with its results. */
export function searchNote(q, found) {
  if (q.kind === 'type') return 'Pending, running and failed tasks only: finished and waiting tasks are not found by type (their keys do not name it; finding them would mean reading every task).';
  if (q.kind === 'id' && !q.full && !found) {
    return 'No task starts with it, and none of the last 24 hours, live or among the newest dead letters, ends with it: paste the full id for an older task.';
  }
  return '';
}
