// What the page shows of one bucket (or API), shared by the shell and every
// screen; connect starts over from fresh().

export const fresh = () => ({
  shards: [], shardChars: 1,
  filter: { shard: '', status: '', type: '' }, cursors: [''], page: 0, tasks: [], next: '', since: '', malformed: [],
  selected: null, detail: null, payloads: null, events: [], marks: [],
  workers: [], schedules: [], control: null, error: '', flash: '',
  // The overview: the last stats, and every minute of throughput seen
  // since connecting (the stats hold 15; the chart shows up to 60).
  stats: null, history: new Map(),
  // The fleet's request rate: the stats answer it was last computed
  // from (worker_requests and at), and the rate.
  fleet: null,
  // The search box's last query ({text, q}) and its results.
  search: null,
  // Task lists: the checked tasks, and the bulk action planned or under
  // way ({op, plan, running, stop, progress, made}).
  checked: new Set(), bulk: null, pendingPlan: null,
  // Workflows: the one shown (its id or name, '' for the list of names),
  // its last report ({ref, rep, made}), the names, and the names of the
  // workflows seen, by id (for a step's link in the task detail).
  workflow: '', wf: null, wfNames: null, wfNameOf: new Map(),
  refreshedAt: null, failedAt: null, loading: false, reload: false,
});

export const state = {
  backend: null, cfg: {}, view: 'overview', refreshTimer: null, tickTimer: null, pendingNav: null,
  // gen counts connections: a load that began under an earlier one (other
  // bucket, other credentials) drops its result.
  gen: 0,
  ...fresh(),
};

// Stale is thrown by current when the page moved to another connection
// while a load was under way.
export class Stale extends Error {}

export function current(gen) {
  if (gen !== state.gen) throw new Stale('the page moved to another link');
}

// readOnly says whether the link's credentials may only read (qo ui url
// and qo ui serve without --operator): the page then offers no action,
// which S3 would refuse anyway.
export function readOnly() {
  return state.cfg.ro === '1';
}

// READ_ONLY says why an action is missing.
export const READ_ONLY = 'this link is read-only: get one that may act with qo ui url --operator (or qo ui serve --operator)';
