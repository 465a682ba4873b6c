// What requests cost, and the fleet's request rate as qo tui shows it:
// every worker's heartbeat carries the S3 requests its process has sent
// since it started (s3_requests: {ok: {GET: n, ...}, failed: {...}}); the
// rate is each worker's increase between its last two heartbeats, over the
// time between them, summed (see RateMeter). No DOM here
// (test/fleet.test.js).

import { health } from './queue.js';

/**
 * S3_STANDARD are AWS S3 Standard's list prices in US dollars per 1,000
 * requests (store.AWSStandardPrices): PUT, COPY, POST and LIST at one
 * rate, GET and HEAD at another, DELETE free.
 */
export const S3_STANDARD = { put: 0.005, get: 0.0004, del: 0 };

/** per1000 is the price of 1,000 requests of kind op (store.Prices.Per1000). */
export function per1000(op, prices = S3_STANDARD) {
  if (op === 'GET' || op === 'HEAD') return prices.get;
  if (op === 'DELETE') return prices.del;
  return prices.put;
}

/** byOp sums a worker's counters, successful and failed, by kind. */
export function byOp(counts) {
  const out = {};
  for (const part of [counts?.ok, counts?.failed]) {
    for (const [op, n] of Object.entries(part || {})) out[op] = (out[op] || 0) + n;
  }
  return out;
}

/** cost is what requests by kind ({GET: n, PUT: m, ...}) cost at prices. */
export function cost(ops, prices = S3_STANDARD) {
  return Object.entries(ops).reduce((sum, [op, n]) => sum + (n * per1000(op, prices)) / 1000, 0);
}

/**
 * RateMeter measures the fleet's request rate as inspect.RateMeter does:
 * for each worker, the counters of its last two heartbeats, differenced
 * over the time between the heartbeats' own timestamps (not between two
 * reads: the counters move only with a heartbeat), summed over the live
 * workers. observe returns view.Rate's shape ({per_second,
 * dollars_per_hour, by_op, workers, waiting}) or null until some worker
 * has been seen at two heartbeats.
 */
export class RateMeter {
  constructor(prices = S3_STANDARD) {
    this.prices = prices;
    this.workers = new Map();
  }

  observe(records, now) {
    const seen = new Set();
    const r = { per_second: 0, dollars_per_hour: 0, by_op: {}, workers: 0, waiting: 0 };
    let costPerSec = 0;
    for (const w of records) {
      if (!w.s3_requests) continue;
      seen.add(w.worker_id);
      const at = Date.parse(w.last_heartbeat);
      const cur = byOp(w.s3_requests);
      let b = this.workers.get(w.worker_id);
      if (!b) {
        b = { cur, at, prev: null, prevAt: 0 };
        this.workers.set(w.worker_id, b);
      } else if (at > b.at) {
        b.prev = b.cur;
        b.prevAt = b.at;
        b.cur = cur;
        b.at = at;
        if (Object.keys(b.prev).some((op) => (cur[op] || 0) < b.prev[op])) b.prev = null; // restarted
      }
      if (health(w.last_heartbeat, now, w.dead_after_seconds) === 'dead') continue;
      if (!b.prev) {
        r.waiting++;
        continue;
      }
      const secs = (b.at - b.prevAt) / 1000;
      const delta = {};
      for (const [op, n] of Object.entries(b.cur)) {
        const d = n - (b.prev[op] || 0);
        if (!d) continue;
        delta[op] = d;
        r.by_op[op] = (r.by_op[op] || 0) + d / secs;
        r.per_second += d / secs;
      }
      costPerSec += cost(delta, this.prices) / secs;
      r.workers++;
    }
    for (const id of [...this.workers.keys()]) if (!seen.has(id)) this.workers.delete(id);
    if (!r.workers) return null;
    r.dollars_per_hour = costPerSec * 3600;
    return r;
  }
}

/** dollars formats an amount as qo tui does. */
export function dollars(v) {
  if (v === 0) return '$0';
  if (v < 0.01) return `$${v.toFixed(4)}`;
  if (v < 100) return `$${v.toFixed(2)}`;
  return `$${Math.round(v).toLocaleString('en-US')}`;
}

// holdsText renders a worker's shares of the fleet-wide limits (its
// registry entry's "holds"), by type, each type's cap, then rate, then
// per-key cap and rate, as monitor/view.HoldsText does.
const HOLD_KINDS = [['rate:', 1, '/m of its rate'], ['keyrate:', 3, '/m of its per-key rate'], ['key:', 2, ' of its per-key cap']];
export function holdsText(holds) {
  const parsed = Object.entries(holds || {}).map(([k, n]) => {
    for (const [prefix, rank, what] of HOLD_KINDS) {
      if (k.startsWith(prefix)) return { typ: k.slice(prefix.length), rank, text: `${n}${what}` };
    }
    return { typ: k, rank: 0, text: `${n} of its cap` };
  });
  parsed.sort((a, b) => (a.typ < b.typ ? -1 : a.typ > b.typ ? 1 : a.rank - b.rank));
  return parsed.map((p) => `${p.typ} ${p.text}`).join(', ');
}
