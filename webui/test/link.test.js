// Reading a link's fragment, on first load and when a second link is
// opened in the same tab (hashchange).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFragment, canConnect, readLink, navFragment, isNavigation, workflowRef, VIEWS } from '../src/link.js';

test('parseFragment reads the settings qo ui url writes', () => {
  const link = new URLSearchParams({ endpoint: 'http://127.0.0.1:9000', bucket: 'jobs', region: 'us-east-1', ak: 'AK', sk: 's/k+=', st: 'tok', exp: '2030-01-01T00:00:00Z' });
  const want = Object.fromEntries(link);
  assert.deepEqual(parseFragment(`#${link}`), want);
  assert.deepEqual(parseFragment(String(link)), want, 'with or without the #');
});

test('parseFragment of no fragment is empty', () => {
  for (const hash of ['', '#', undefined, null]) assert.deepEqual(parseFragment(hash), {});
});

test('a second link replaces every setting of the first', () => {
  const first = parseFragment('#bucket=one&ak=A1&sk=S1&st=T1&exp=2030-01-01T00:00:00Z');
  const second = parseFragment('#bucket=two&ak=A2&sk=S2');
  assert.deepEqual(second, { bucket: 'two', ak: 'A2', sk: 'S2' }, 'nothing of the first link remains (no session token, no expiry)');
  assert.notDeepEqual(first, second);
});

test('canConnect', () => {
  const cases = [
    [{ bucket: 'b', ak: 'a', sk: 's' }, true],
    [{ api: '/' }, true],
    [{ bucket: 'b' }, false],
    [{ ak: 'a', sk: 's' }, false],
    [{ bucket: 'b', ak: 'a' }, false],
    [{}, false],
  ];
  for (const [cfg, want] of cases) assert.equal(canConnect(cfg), want, JSON.stringify(cfg));
});

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';

test('readLink splits the settings from where to go', () => {
  assert.deepEqual(readLink(`#api=/&token=T&view=dead&task=${ID}`), { cfg: { api: '/', token: 'T' }, nav: { view: 'dead', task: ID, search: '', type: '', workflow: '' } });
  assert.deepEqual(readLink('#bucket=b&ak=A&sk=S'), { cfg: { bucket: 'b', ak: 'A', sk: 'S' }, nav: { view: '', task: '', search: '', type: '', workflow: '' } });
  assert.deepEqual(readLink(`#task=${ID}`).nav, { view: 'tasks', task: ID, search: '', type: '', workflow: '' }, 'a task opens in the task list');
  assert.deepEqual(readLink(`#view=workers&task=${ID}`).nav, { view: 'tasks', task: ID, search: '', type: '', workflow: '' });
  for (const v of VIEWS) assert.equal(readLink(`#view=${v}`).nav.view, v);
  assert.deepEqual(readLink('#view=admin&task=../../x').nav, { view: '', task: '', search: '', type: '', workflow: '' }, 'unknown views and malformed ids are dropped');
  assert.deepEqual(readLink(''), { cfg: {}, nav: { view: '', task: '', search: '', type: '', workflow: '' } });
});

test('navFragment names the queue and the view, never a credential', () => {
  const cfg = { endpoint: 'http://127.0.0.1:9000', bucket: 'jobs', region: 'us-east-1', ak: 'AK', sk: 'SK', st: 'ST', exp: '2030-01-01T00:00:00Z' };
  const frag = navFragment(cfg, { view: 'tasks', task: ID });
  assert.equal(frag, `#endpoint=http://127.0.0.1:9000&bucket=jobs&region=us-east-1&view=tasks&task=${ID}`);
  for (const secret of ['AK', 'SK', 'ST', 'exp']) assert.ok(!frag.includes(secret), secret);
  assert.equal(navFragment({ api: '/', token: 'T' }, { view: 'overview' }), '#api=/&view=overview');
  assert.equal(navFragment({ bucket: 'a&b=c' }), '#bucket=a%26b%3Dc&view=overview');
  // What the page writes, it reads back.
  const back = readLink(frag);
  assert.deepEqual(back.nav, { view: 'tasks', task: ID, search: '', type: '', workflow: '' });
  assert.deepEqual(back.cfg, { endpoint: cfg.endpoint, bucket: 'jobs', region: 'us-east-1' });
  assert.equal(readLink(navFragment({ bucket: 'a&b=c' })).cfg.bucket, 'a&b=c');
});

test('isNavigation: a fragment without credentials for the same queue moves within the page', () => {
  const cfg = { endpoint: 'http://s3', bucket: 'jobs', ak: 'A', sk: 'S' };
  assert.ok(isNavigation({}, cfg), 'only a view or a task');
  assert.ok(isNavigation({ endpoint: 'http://s3', bucket: 'jobs' }, cfg), 'the address the page wrote');
  assert.ok(!isNavigation({ bucket: 'other' }, cfg), 'another bucket is a new link');
  assert.ok(!isNavigation({ bucket: 'jobs', ak: 'A2', sk: 'S2' }, cfg), 'new credentials are a new link');
  assert.ok(isNavigation({ api: '/' }, { api: '/', token: 'T' }), 'a pasted API link keeps the token in memory');
  assert.ok(!isNavigation({ api: '/', token: 'T2' }, { api: '/', token: 'T' }));
});

test('a search and the dead letters of a type are links too', () => {
  assert.deepEqual(readLink('#search=type:email').nav, { view: 'search', task: '', search: 'type:email', type: '', workflow: '' }, 'a search opens the search view');
  assert.deepEqual(readLink(`#view=search&search=0190a1b2&task=${ID}`).nav, { view: 'search', task: ID, search: '0190a1b2', type: '', workflow: '' }, 'with a result open');
  assert.equal(readLink('#view=search').nav.view, '', 'a search view without a query is no place');
  assert.deepEqual(readLink('#view=dead&type=email').nav, { view: 'dead', task: '', search: '', type: 'email', workflow: '' });
  assert.deepEqual(readLink('#type=email').nav.view, 'dead', 'a type alone opens its dead letters');
  assert.equal(readLink('#view=dead&type=a/b').nav.type, '', 'not a task type');
  assert.equal(readLink('#view=dead&type=..').nav.type, '');
  assert.equal(readLink('#view=tasks&type=email').nav.type, '', 'only the dead letters filter by type');
  const cfg = { bucket: 'jobs' };
  for (const nav of [{ view: 'search', search: 'key:email/order 42&x=1' }, { view: 'search', search: 'type:email', task: ID }, { view: 'dead', type: 'email' }]) {
    const frag = navFragment(cfg, nav);
    assert.deepEqual(readLink(frag).nav, { task: '', search: '', type: '', workflow: '', ...nav }, frag);
  }
  assert.equal(navFragment(cfg, { view: 'search', search: 'type:email' }), '#bucket=jobs&view=search&search=type:email');
  assert.equal(navFragment(cfg, { view: 'tasks', search: 'type:email', type: 'email' }), '#bucket=jobs&view=tasks', 'only where they apply');
});

test('a workflow is a link: by name or id, with a step\'s task open', () => {
  const WF = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c';
  assert.deepEqual(readLink('#view=workflow&workflow=nightly-etl').nav, { view: 'workflow', task: '', search: '', type: '', workflow: 'nightly-etl' });
  assert.deepEqual(readLink('#workflow=nightly-etl').nav.view, 'workflow', 'a workflow alone opens the workflow view');
  assert.equal(readLink(`#workflow=${WF.toUpperCase()}`).nav.workflow, WF, 'an id, lowercased');
  assert.deepEqual(readLink(`#view=workflow&workflow=etl&task=${ID}`).nav, { view: 'workflow', task: ID, search: '', type: '', workflow: 'etl' }, 'a step open in the view');
  assert.deepEqual(readLink('#view=workflow').nav, { view: 'workflow', task: '', search: '', type: '', workflow: '' }, 'no workflow: the list of names');
  for (const bad of ['a/b', '..', 'x'.repeat(65), '<b>', '']) assert.equal(readLink(`#view=workflow&workflow=${encodeURIComponent(bad)}`).nav.workflow, '', bad);
  assert.equal(readLink('#view=tasks&workflow=etl').nav.workflow, '', 'only the workflow view names a workflow');
  assert.equal(workflowRef('etl.v2:daily_1'), 'etl.v2:daily_1');
  const cfg = { api: '/' };
  for (const nav of [{ view: 'workflow', workflow: 'etl' }, { view: 'workflow', workflow: WF, task: ID }, { view: 'workflow' }]) {
    const frag = navFragment(cfg, nav);
    assert.deepEqual(readLink(frag).nav, { task: '', search: '', type: '', workflow: '', ...nav }, frag);
  }
  assert.equal(navFragment(cfg, { view: 'workflow', workflow: 'etl' }), '#api=/&view=workflow&workflow=etl');
  assert.equal(navFragment(cfg, { view: 'tasks', workflow: 'etl' }), '#api=/&view=tasks', 'only where it applies');
});
