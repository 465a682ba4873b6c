// The settings a link gives the page, in its fragment (#...), which
// browsers never send to any server: endpoint, bucket, region, ak, sk, st
// (session token), exp (expiry), ro (read-only credentials), or api (+
// token) to use qo's HTTP API; code, a one-time code the page exchanges
// with the server that served it (qo serve, qo ui serve) for a session or
// credentials, and drops from the address first.
// The fragment also says where in the page to go: view (one of PAGES),
// task (a task id, opened in its detail), search (a query of the search
// box, shown in the search view), type (the dead letters of one task
// type) and workflow (a workflow's id or name, shown in the workflow view).

/** parseFragment reads a link's fragment ("#a=1&b=2", with or without the "#"). */
export function parseFragment(hash) {
  return Object.fromEntries(new URLSearchParams(String(hash ?? '').replace(/^#/, '')));
}

/** canConnect says whether settings suffice to open the queue without asking for keys. */
export function canConnect(cfg) {
  return Boolean(cfg.api || (cfg.bucket && cfg.ak && cfg.sk));
}

/** VIEWS are the page's views, in the order of their number keys (1-6). */
export const VIEWS = ['overview', 'tasks', 'dead', 'workers', 'schedules', 'workflow'];
/** PAGES are VIEWS and the search results, which the search box opens. */
export const PAGES = [...VIEWS, 'search'];

// PLACE_KEYS say which queue a link is for. They are no secret, so the
// address bar keeps them: a copied address opens the same queue (asking for
// keys, or for qo serve's token, when it needs them).
const PLACE_KEYS = ['api', 'endpoint', 'bucket', 'region'];
const NAV_KEYS = ['view', 'task', 'search', 'type', 'workflow'];
const TYPE = /^[A-Za-z0-9_.:-]{1,64}$/;
/** VIEWS_WITH_TASK are the views that show a task's detail. */
const VIEWS_WITH_TASK = ['tasks', 'dead', 'search', 'workflow'];
const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * workflowRef checks a workflow reference of a link: a workflow id
 * (lowercased) or a workflow name (a task type's characters, at most 64,
 * not dots only: queue.ValidateWorkflowName); '' for anything else.
 */
export function workflowRef(ref) {
  const r = String(ref ?? '');
  if (TASK_ID.test(r.toLowerCase())) return r.toLowerCase();
  return TYPE.test(r) && /[^.]/.test(r) ? r : '';
}

/**
 * readLink splits a fragment into the connection settings (cfg) and where
 * to go (nav: {view, task, search, type, workflow}). An unknown view, a
 * malformed task id, type or workflow is dropped; a search opens the
 * search view, a task without a view the task list, a type the dead
 * letters of that type, a workflow the workflow view.
 */
export function readLink(hash) {
  const all = parseFragment(hash);
  const cfg = Object.fromEntries(Object.entries(all).filter(([k]) => !NAV_KEYS.includes(k)));
  const task = TASK_ID.test(all.task || '') ? all.task : '';
  const search = (all.search || '').trim().slice(0, 400);
  let view = PAGES.includes(all.view) ? all.view : '';
  if (search && !view) view = 'search';
  if (view === 'search' && !search) view = '';
  const type = TYPE.test(all.type || '') && /[^.]/.test(all.type) && (view === 'dead' || !view) ? all.type : '';
  if (type && !view) view = 'dead';
  let workflow = workflowRef(all.workflow);
  if (workflow && !view) view = 'workflow';
  if (view !== 'workflow') workflow = '';
  if (task && !VIEWS_WITH_TASK.includes(view)) view = 'tasks';
  return { cfg, nav: { view, task, search: view === 'search' ? search : '', type, workflow } };
}

// enc keeps "/" and ":" readable (api=/, endpoint=http://...): both are
// allowed in a fragment and URLSearchParams reads them back unchanged.
const enc = (v) => encodeURIComponent(v).replace(/%2F/gi, '/').replace(/%3A/gi, ':');

/**
 * navFragment is the address-bar fragment for a view (and task) of the
 * queue cfg names: where the queue is and where in the page, never a
 * credential, so it can be pasted into a chat.
 */
export function navFragment(cfg, { view = 'overview', task = '', search = '', type = '', workflow = '' } = {}) {
  const parts = PLACE_KEYS.filter((k) => cfg[k]).map((k) => `${k}=${enc(cfg[k])}`);
  parts.push(`view=${enc(view)}`);
  if (view === 'search' && search) parts.push(`search=${enc(search)}`);
  if (view === 'dead' && type) parts.push(`type=${enc(type)}`);
  if (view === 'workflow' && workflow) parts.push(`workflow=${enc(workflow)}`);
  if (task) parts.push(`task=${enc(task)}`);
  return `#${parts.join('&')}`;
}

/**
 * isNavigation says whether a fragment only moves within the queue the page
 * is connected to (cfg: its settings): it carries no credentials and names
 * no other queue. Such a fragment (a pasted deep link, the browser's back
 * button) keeps the connection; any other is a new link.
 */
export function isNavigation(linkCfg, cfg) {
  if (Object.keys(linkCfg).some((k) => !PLACE_KEYS.includes(k))) return false;
  return PLACE_KEYS.every((k) => !linkCfg[k] || linkCfg[k] === cfg[k]);
}
